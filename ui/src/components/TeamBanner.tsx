import { useTranslation } from "react-i18next";
import { useApp } from "../state/app";

/** Under the header while the joined team server does not answer (offline, key refused, TLS
 * check failed): what happened, what to do, and a way back to this computer's knowledge
 * base, which keeps working. */
export function TeamBanner() {
  const { t } = useTranslation();
  const { team, base, setBase, refreshTeam, setPage } = useApp();
  if (!team?.joined || team.state === "ok") return null;
  return (
    <div className="models-banner team-banner" role="alert" data-testid="team-banner" data-state={team.state}>
      <div className="models-banner-text">
        <strong>{t(`team.state.${team.state}`, { defaultValue: t("team.state.error") })}</strong>
        <span className="muted small block">
          {t(`team.todo.${team.state}`, { defaultValue: t("team.todo.error") })}
          {team.message ? ` (${team.message})` : ""}
        </span>
      </div>
      <div className="row-actions">
        <button type="button" className="button small" onClick={refreshTeam}>
          {t("common.retry")}
        </button>
        {team.state === "unauthenticated" && (
          <button type="button" className="button small" onClick={() => setPage("settings")}>
            {t("team.openSettings")}
          </button>
        )}
        {base === "team" && (
          <button type="button" className="button small primary" data-testid="team-use-local" onClick={() => setBase("local")}>
            {t("team.useLocal")}
          </button>
        )}
      </div>
    </div>
  );
}
