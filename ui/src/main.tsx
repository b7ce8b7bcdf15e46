import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import "./i18n";
import "./styles.css";
import { App } from "./App";

async function start() {
  // In a plain browser (`npm run dev` without Tauri) a fake back end stands in for the app, so
  // the UI can be worked on without building Rust. It is never part of a production build.
  if (import.meta.env.DEV && !("__TAURI_INTERNALS__" in window)) {
    const { installMock } = await import("./dev/mock");
    installMock();
  }
  createRoot(document.getElementById("root")!).render(
    <StrictMode>
      <App />
    </StrictMode>,
  );
}

void start();
