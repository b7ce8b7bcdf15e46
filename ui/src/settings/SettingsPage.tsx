import { useState, type KeyboardEvent } from "react";
import { useTranslation } from "react-i18next";
import { useApp } from "../state/app";
import { ApiTab } from "./ApiTab";
import { DataSourcesTab } from "./DataSourcesTab";
import { LanguageTab } from "./LanguageTab";
import { MemoryTab } from "./MemoryTab";
import { ModelsTab } from "./ModelsTab";
import { PermissionsTab } from "./PermissionsTab";
import { ProfileTab } from "./ProfileTab";
import { TeamTab } from "./TeamTab";
import { UsersTab } from "./UsersTab";

type Tab = "permissions" | "users" | "models" | "datasources" | "api" | "team" | "profile" | "memory" | "language";

const ADMIN_TABS: Tab[] = ["permissions", "users", "models", "datasources", "api", "team", "memory", "language"];
const USER_TABS: Tab[] = ["profile", "team", "memory", "language"];
/** With the team base shown, an administrator there manages the server's users, folders and
 * SQL data sources and sees its models (set where the server starts); the API stays this
 * computer's (under *This computer*). */
const TEAM_ADMIN_TABS: Tab[] = ["permissions", "users", "models", "datasources", "team", "memory", "language"];

export function SettingsPage() {
  const { t } = useTranslation();
  const { info, epoch, base, team } = useApp();
  const onTeam = base === "team" && !!team?.joined;
  const teamAdmin = onTeam && (team?.role === "ADMIN" || team?.role === "ROOT");
  const tabs = onTeam ? (teamAdmin ? TEAM_ADMIN_TABS : USER_TABS) : info?.isAdmin ? ADMIN_TABS : USER_TABS;
  const [chosen, setChosen] = useState<Tab>(tabs[0]);
  const tab = tabs.includes(chosen) ? chosen : tabs[0];

  // Arrow keys move between tabs (WAI-ARIA tabs pattern).
  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    if (e.key !== "ArrowRight" && e.key !== "ArrowLeft") return;
    const i = tabs.indexOf(tab);
    const next = tabs[(i + (e.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length];
    setChosen(next);
    requestAnimationFrame(() => document.getElementById(`tab-${next}`)?.focus());
  };

  return (
    <div className="page">
      <div className="page-header">
        <div>
          <h1>{t("settings.title")}</h1>
          <p className="muted" data-testid="settings-subtitle" data-base={onTeam ? "team" : "local"}>
            {teamAdmin
              ? t("settings.subtitleTeamAdmin", { server: team?.server ?? "" })
              : !onTeam && info?.isAdmin
                ? t("settings.subtitleAdmin")
                : t("settings.subtitle")}
          </p>
        </div>
      </div>
      <div className="tabs" role="tablist" aria-label={t("settings.title")} onKeyDown={onKeyDown}>
        {tabs.map((x) => (
          <button
            key={x}
            id={`tab-${x}`}
            type="button"
            role="tab"
            className={`tab${x === tab ? " active" : ""}`}
            aria-selected={x === tab}
            aria-controls={`panel-${x}`}
            tabIndex={x === tab ? 0 : -1}
            data-testid={`settings-tab-${x}`}
            onClick={() => setChosen(x)}
          >
            {t(`settings.tabs.${x}`)}
          </button>
        ))}
      </div>
      <div className="tab-panel" role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`} key={`${tab}-${epoch}-${onTeam ? "team" : "local"}`}>
        {tab === "permissions" && <PermissionsTab />}
        {tab === "users" && <UsersTab />}
        {tab === "models" && <ModelsTab />}
        {tab === "datasources" && <DataSourcesTab />}
        {tab === "api" && <ApiTab />}
        {tab === "team" && <TeamTab />}
        {tab === "profile" && <ProfileTab />}
        {tab === "memory" && <MemoryTab />}
        {tab === "language" && <LanguageTab />}
      </div>
    </div>
  );
}
