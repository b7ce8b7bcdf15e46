import { useState } from "react";
import { useTranslation } from "react-i18next";
import { api, type ModelRow } from "../api";
import { advance, DownloadStatus, startProgress, type DownloadProgress } from "./DownloadProgress";
import { formatBytes } from "../lib/format";
import { useApp } from "../state/app";
import { useToast } from "../state/toasts";

/** Says when models the settings use are not installed (a first run, a deleted folder) and
 * what the user gets without them, and offers administrators the download: progress per
 * model, each file checked against its SHA-256 by the model library. */
export function ModelsBanner() {
  const { t } = useTranslation();
  const { info, setInfo } = useApp();
  const { notify, showError } = useToast();
  const [dismissed, setDismissed] = useState(false);
  const [progress, setProgress] = useState<DownloadProgress | null>(null);
  const [restart, setRestart] = useState(false);
  const missing = info?.models.missing ?? [];

  if (restart) {
    return (
      <div className="models-banner" role="status" data-testid="models-banner">
        <span className="models-banner-text">{t("firstRun.restart")}</span>
        <button type="button" className="button primary small" data-testid="models-restart" onClick={() => api.restartApp().catch(showError)}>
          {t("models.restartNow")}
        </button>
      </div>
    );
  }
  if (!info || missing.length === 0 || dismissed) return null;

  const search = missing.some((m) => m.role === "embedder");
  const answers = missing.some((m) => m.role === "llm");
  const total = missing.reduce((sum, m) => sum + (m.sizeBytes ?? 0), 0);
  const effect = search && answers ? t("firstRun.withoutBoth") : search ? t("firstRun.withoutSearch") : t("firstRun.withoutAnswers");

  const download = async (rows: ModelRow[]) => {
    let embedder = false;
    try {
      for (const m of rows) {
        setProgress(startProgress(m.name));
        await api.downloadModel(m.name, (e) => setProgress((p) => advance(p, m.name, e)));
        embedder ||= m.role === "embedder";
      }
      notify("success", t("firstRun.installed"));
      // The search models are loaded when the knowledge base opens; an answer model on the
      // next question.
      if (embedder) setRestart(true);
    } catch (err) {
      showError(err);
    } finally {
      setProgress(null);
      await api.appInfo().then(setInfo).catch(showError);
    }
  };

  return (
    <div className="models-banner" role="status" data-testid="models-banner">
      <div className="models-banner-text">
        <strong>{t("firstRun.missing")}</strong> {effect}
        <ul className="models-banner-list">
          {missing.map((m) => (
            <li key={m.name} data-testid="missing-model" data-model={m.name}>
              <span className="mono small">{m.name}</span>{" "}
              <span className="muted small">
                {t(`models.roles.${m.role}`, { defaultValue: m.role })}
                {m.sizeBytes ? ` · ${formatBytes(m.sizeBytes)}` : ""}
                {m.state === "corrupt" ? ` · ${t("models.states.corrupt")}` : ""}
              </span>
            </li>
          ))}
        </ul>
        {!info.isAdmin && <span className="muted small">{t("firstRun.askAdmin")}</span>}
      </div>
      {progress ? (
        <span className="small">
          <span className="mono">{progress.name}</span> <DownloadStatus progress={progress} testid="models-progress" />
        </span>
      ) : (
        <div className="row-actions">
          {info.isAdmin && (
            <button type="button" className="button primary small" data-testid="models-download" onClick={() => void download(missing)}>
              {total > 0 ? t("firstRun.downloadSize", { size: formatBytes(total) }) : t("models.download")}
            </button>
          )}
          <button type="button" className="button small" data-testid="models-later" onClick={() => setDismissed(true)}>
            {t("firstRun.later")}
          </button>
        </div>
      )}
    </div>
  );
}
