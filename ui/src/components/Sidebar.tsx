import { useState } from "react";
import { useTranslation } from "react-i18next";
import { type Page, useApp } from "../state/app";
import { useChatActions, useChatMeta } from "../state/chat";
import { useToast } from "../state/toasts";
import { formatDateTime } from "../lib/format";
import { ConfirmDialog } from "./Dialog";
import { BrandMark, ChatIcon, FolderIcon, PlusIcon, SettingsIcon, TrashIcon, UserIcon } from "./icons";
import { SwitchUserDialog } from "./SwitchUserDialog";

export function Sidebar() {
  const { t } = useTranslation();
  const { page, setPage, info, team, base, setBase } = useApp();
  const chat = useChatActions();
  const { notify, showError } = useToast();
  const [deleting, setDeleting] = useState<{ id: string; title: string } | null>(null);
  const [switching, setSwitching] = useState(false);
  const { conversations, sessionId } = useChatMeta();
  const onTeam = base === "team" && team?.joined && team.user ? team : null;

  const nav: { page: Page; label: string; icon: JSX.Element }[] = [
    { page: "chat", label: t("nav.chat"), icon: <ChatIcon /> },
    { page: "sources", label: t("nav.sources"), icon: <FolderIcon /> },
    { page: "settings", label: t("nav.settings"), icon: <SettingsIcon /> },
  ];

  return (
    <aside className="sidebar">
      <div className="sidebar-brand">
        <BrandMark />
        <span>{t("app.name")}</span>
      </div>
      <button
        type="button"
        className="button new-chat"
        data-testid="new-conversation"
        onClick={() => {
          chat.newConversation();
          setPage("chat");
          requestAnimationFrame(() => document.querySelector<HTMLElement>("[data-testid=chat-input]")?.focus());
        }}
      >
        <PlusIcon />
        {t("chat.newConversation")}
      </button>

      {team?.joined && (
        <div className="base-switch" role="radiogroup" aria-label={t("team.baseLabel")} data-testid="base-switch">
          {(["local", "team"] as const).map((b) => (
            <button
              key={b}
              type="button"
              role="radio"
              aria-checked={base === b}
              className={`base-option${base === b ? " active" : ""}`}
              data-testid={`base-${b}`}
              title={b === "team" ? (team.server ?? "") : undefined}
              onClick={() => setBase(b)}
            >
              {t(b === "team" ? "team.baseTeam" : "team.baseLocal")}
            </button>
          ))}
        </div>
      )}

      <nav className="nav" aria-label={t("nav.label")}>
        {nav.map((n) => (
          <button
            key={n.page}
            type="button"
            className={`nav-item${page === n.page ? " active" : ""}`}
            aria-current={page === n.page ? "page" : undefined}
            data-testid={`nav-${n.page}`}
            onClick={() => setPage(n.page)}
          >
            {n.icon}
            {n.label}
          </button>
        ))}
      </nav>

      <div className="sidebar-section-title">{t("chat.conversations")}</div>
      <ul className="conversations" aria-label={t("chat.conversations")}>
        {conversations.length === 0 && <li className="muted small conversations-empty">{t("chat.noConversations")}</li>}
        {conversations.map((c) => (
          <li
            key={c.id}
            className={`conversation${c.id === sessionId ? " active" : ""}`}
            data-testid="conversation-item"
            data-id={c.id}
          >
            <button
              type="button"
              className="conversation-open"
              aria-current={c.id === sessionId ? "true" : undefined}
              title={c.title}
              onClick={() => {
                chat.openConversation(c.id);
                setPage("chat");
              }}
            >
              <span className="conversation-title">{c.title || t("chat.untitled")}</span>
              <span className="conversation-time">{formatDateTime(c.updatedAtMs)}</span>
            </button>
            <button
              type="button"
              className="icon-button conversation-delete"
              data-testid="conversation-delete"
              aria-label={t("chat.deleteConversation")}
              title={t("chat.deleteConversation")}
              onClick={() => setDeleting({ id: c.id, title: c.title })}
            >
              <TrashIcon />
            </button>
          </li>
        ))}
      </ul>

      <div className="sidebar-user">
        <span className="avatar" aria-hidden="true">
          <UserIcon />
        </span>
        {onTeam ? (
          // Asking the team: the server's user, who its key signs in as (changed by joining
          // again in Settings → Team, not by switching this computer's user).
          <div
            className="sidebar-user-text"
            data-testid="whoami"
            data-base="team"
            title={`${onTeam.displayName ?? onTeam.user} (${onTeam.user}) — ${t("team.onTeam")} ${onTeam.server ?? ""}`}
          >
            <span className="sidebar-user-name">{onTeam.displayName ?? onTeam.user}</span>
            <span className="sidebar-user-id">
              {onTeam.user} · {t("team.originTeam")}
            </span>
          </div>
        ) : (
          <>
            <div className="sidebar-user-text" data-testid="whoami" data-base="local" title={info ? `${info.displayName} (${info.user})` : ""}>
              <span className="sidebar-user-name">{info?.displayName ?? ""}</span>
              <span className="sidebar-user-id">{info?.user ?? ""}</span>
            </div>
            <button type="button" className="button small" data-testid="switch-user" onClick={() => setSwitching(true)}>
              {t("auth.switchUser")}
            </button>
          </>
        )}
      </div>

      {deleting && (
        <ConfirmDialog
          title={t("chat.deleteConversation")}
          message={t("chat.deleteConfirm", { title: deleting.title || t("chat.untitled") })}
          confirmLabel={t("common.delete")}
          danger
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            try {
              await chat.deleteConversation(deleting.id);
              notify("success", t("chat.deleted"));
              setDeleting(null);
            } catch (e) {
              showError(e);
            }
          }}
        />
      )}
      {switching && <SwitchUserDialog onClose={() => setSwitching(false)} />}
    </aside>
  );
}
