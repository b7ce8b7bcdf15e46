import { useState } from "react";
import { useTranslation } from "react-i18next";
import { api, type TeamAnswers } from "../api";
import { useApp } from "../state/app";
import { useToast } from "../state/toasts";

/** Settings → Team: join a team knowledge base (a `knowhub serve` server) with the API key an
 * administrator gave, see whether it answers, or leave it. The key goes to the OS keyring
 * (or a file only this user can read), never into the settings. */
export function TeamTab() {
  const { t } = useTranslation();
  const { notify, showError } = useToast();
  const { team, refreshTeam, setBase } = useApp();
  const [server, setServer] = useState("");
  const [apiKey, setApiKey] = useState("");
  const [caFile, setCaFile] = useState("");
  const [busy, setBusy] = useState(false);

  const join = async () => {
    setBusy(true);
    try {
      const joined = await api.joinTeam(server.trim(), apiKey.trim(), caFile.trim() || null);
      setApiKey("");
      refreshTeam();
      setBase("team");
      notify("success", t("team.joined", { server: joined.server ?? server }));
    } catch (e) {
      showError(e);
    } finally {
      setBusy(false);
    }
  };

  const chooseAnswers = async (answers: TeamAnswers) => {
    setBusy(true);
    try {
      await api.setTeamAnswers(answers);
      refreshTeam();
    } catch (e) {
      showError(e);
    } finally {
      setBusy(false);
    }
  };

  const leave = async () => {
    setBusy(true);
    try {
      await api.leaveTeam();
      setBase("local");
      refreshTeam();
      notify("success", t("team.left"));
    } catch (e) {
      showError(e);
    } finally {
      setBusy(false);
    }
  };

  if (team?.joined) {
    return (
      <div className="stack">
        <section className="card" data-testid="team-joined" data-state={team.state}>
          <h2 className="card-title">{t("team.title")}</h2>
          <p>{t("team.joinedTo", { server: team.server ?? "" })}</p>
          {team.state === "ok" ? (
            <p className="muted small" data-testid="team-who">
              {t("team.signedInAs", { name: team.displayName ?? team.user ?? "", role: team.role ?? "", account: team.account ?? "" })}
            </p>
          ) : (
            <p className="warning-box" role="alert">
              {t(`team.state.${team.state}`, { defaultValue: t("team.state.error") })}
              {team.message && <span className="muted small block">{team.message}</span>}
            </p>
          )}
          <p className="muted small">{t(team.keyStore === "keyring" ? "team.keyInKeyring" : "team.keyInFile")}</p>
          <label className="field">
            <span className="field-label">{t("team.answers")}</span>
            <select
              className="input"
              data-testid="team-answers"
              value={team.answers}
              disabled={busy}
              onChange={(e) => void chooseAnswers(e.target.value as TeamAnswers)}
            >
              <option value="server">{t("team.answersServer")}</option>
              <option value="this_computer">{t("team.answersHere")}</option>
            </select>
            <span className="hint" data-testid="team-answers-hint" data-answers={team.answers}>
              {t(team.answers === "server" ? "team.answersServerHint" : "team.answersHereHint")}
            </span>
          </label>
          <div className="row-actions">
            <button type="button" className="button" disabled={busy} onClick={refreshTeam}>
              {t("common.retry")}
            </button>
            <button type="button" className="button danger" data-testid="team-leave" disabled={busy} onClick={() => void leave()}>
              {t("team.leave")}
            </button>
          </div>
        </section>
      </div>
    );
  }

  const ready = server.trim() !== "" && apiKey.trim() !== "";
  return (
    <div className="stack">
      <section className="card" data-testid="team-join">
        <h2 className="card-title">{t("team.title")}</h2>
        <p className="muted small">{t("team.intro")}</p>
        <form
          className="form-grid"
          onSubmit={(e) => {
            e.preventDefault();
            if (ready && !busy) void join();
          }}
        >
          <label className="field">
            <span className="field-label">{t("team.server")}</span>
            <input
              className="input mono"
              data-testid="team-server"
              placeholder={t("team.serverPlaceholder")}
              value={server}
              spellCheck={false}
              autoComplete="url"
              onChange={(e) => setServer(e.target.value)}
            />
            <span className="hint">{t("team.serverHint")}</span>
          </label>
          <label className="field">
            <span className="field-label">{t("team.apiKey")}</span>
            <input
              className="input mono"
              data-testid="team-key"
              type="password"
              value={apiKey}
              spellCheck={false}
              autoComplete="off"
              onChange={(e) => setApiKey(e.target.value)}
            />
            <span className="hint">{t("team.apiKeyHint")}</span>
          </label>
          <label className="field">
            <span className="field-label">{t("team.caFile")}</span>
            <input
              className="input mono"
              data-testid="team-ca"
              value={caFile}
              spellCheck={false}
              onChange={(e) => setCaFile(e.target.value)}
            />
            <span className="hint">{t("team.caFileHint")}</span>
          </label>
          <div className="row-actions">
            <button type="submit" className="button primary" data-testid="team-join-button" disabled={!ready || busy}>
              {busy ? t("team.joining") : t("team.join")}
            </button>
          </div>
        </form>
      </section>
    </div>
  );
}
