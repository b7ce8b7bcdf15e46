import { useState } from "react";
import { useTranslation } from "react-i18next";
import { toAppError } from "./api";
import { ChatPage } from "./chat/ChatPage";
import { DropZone } from "./components/Drop";
import { FirstRunDialog } from "./components/FirstRunDialog";
import { IngestStatus } from "./components/IngestStatus";
import { ModelsBanner } from "./components/ModelsBanner";
import { TeamBanner } from "./components/TeamBanner";
import { BrandMark } from "./components/icons";
import { Sidebar } from "./components/Sidebar";
import { SwitchUserDialog } from "./components/SwitchUserDialog";
import { Toasts } from "./components/Toasts";
import { SettingsPage } from "./settings/SettingsPage";
import { SourcesPage } from "./sources/SourcesPage";
import { AppProvider, useApp } from "./state/app";
import { ChatProvider, useChatMeta } from "./state/chat";
import { ToastProvider } from "./state/toasts";

export function App() {
  return (
    <ToastProvider>
      <AppProvider>
        <ChatProvider>
          <Shell />
          <Toasts />
        </ChatProvider>
      </AppProvider>
    </ToastProvider>
  );
}

function Shell() {
  const { info, startupError } = useApp();
  if (!info) return startupError ? <StartupError error={startupError} /> : <Splash />;
  return (
    <div className="app">
      <Sidebar />
      <main className="main">
        <Header />
        <ModelsBanner />
        <TeamBanner />
        <div className="content">
          <Page />
        </div>
      </main>
      <DropZone />
      <FirstRunDialog />
    </div>
  );
}

function Page() {
  const { page, epoch } = useApp();
  // Keyed on the signed-in user so a switch reloads the page's data.
  if (page === "sources") return <SourcesPage key={epoch} />;
  if (page === "settings") return <SettingsPage key={epoch} />;
  return <ChatPage />;
}

function Header() {
  const { t } = useTranslation();
  const { page, info } = useApp();
  const { conversations, sessionId } = useChatMeta();
  const conversation = conversations.find((c) => c.id === sessionId);
  const title =
    page === "chat" ? (conversation?.title ?? t("chat.newConversation")) : page === "sources" ? t("nav.sources") : t("nav.settings");
  return (
    <header className="header">
      <div className="header-title" title={title}>
        {title}
      </div>
      {info?.readOnly && <span className="badge badge-warn" title={t("app.readOnlyHint")}>{t("app.readOnly")}</span>}
      <IngestStatus />
    </header>
  );
}

function Splash() {
  const { t } = useTranslation();
  return (
    <div className="splash" role="status">
      <BrandMark size={44} />
      <span className="spinner" aria-hidden="true" />
      <span className="muted">{t("app.starting")}</span>
    </div>
  );
}

function StartupError({ error }: { error: unknown }) {
  const { t } = useTranslation();
  const { retryStartup } = useApp();
  const [signIn, setSignIn] = useState(false);
  const err = toAppError(error);
  return (
    <div className="splash">
      <BrandMark size={44} />
      <h1>{t(`errors.${err.kind}`)}</h1>
      <p className="muted startup-message">{err.message}</p>
      <div className="row-actions">
        <button type="button" className="button" onClick={retryStartup}>
          {t("common.retry")}
        </button>
        <button type="button" className="button primary" data-testid="switch-user" onClick={() => setSignIn(true)}>
          {t("auth.signIn")}
        </button>
      </div>
      {signIn && <SwitchUserDialog onClose={() => setSignIn(false)} />}
    </div>
  );
}
