import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// Tauri serves the built files from `ui/dist` through its own protocol: relative asset paths,
// a WebKitGTK/Safari-15-compatible syntax target, and a fixed dev port (tauri.conf.json's devUrl).
export default defineConfig({
  base: "./",
  plugins: [react()],
  clearScreen: false,
  envPrefix: ["VITE_", "TAURI_ENV_"],
  server: {
    port: 5173,
    strictPort: true,
    watch: { ignored: ["**/src-tauri/**", "**/target/**"] },
  },
  build: {
    target: ["es2021", "safari15"],
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 800,
  },
});
