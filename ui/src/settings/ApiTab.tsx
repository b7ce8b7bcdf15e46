import { useCallback, useEffect, useState } from "react";
import { useTranslation } from "react-i18next";
import { api, type ApiServerView } from "../api";
import { CheckIcon, CopyIcon } from "../components/icons";
import { copyText } from "../lib/clipboard";
import { useToast } from "../state/toasts";

const MIN_PORT = 1024;
const MAX_PORT = 65535;

/** A port the app may listen on, or null. */
function parsePort(text: string): number | null {
  if (!/^\d+$/.test(text.trim())) return null;
  const n = Number(text.trim());
  return n >= MIN_PORT && n <= MAX_PORT ? n : null;
}

/** Settings → API: the same HTTP API as `knowhub serve`, served by the app on 127.0.0.1 only
 * (off by default). Every request signs in with a user's API key. */
export function ApiTab() {
  const { t } = useTranslation();
  const { notify, showError } = useToast();
  const [view, setView] = useState<ApiServerView | null>(null);
  const [port, setPort] = useState("");
  const [busy, setBusy] = useState(false);
  const [copied, setCopied] = useState(false);

  const show = useCallback((v: ApiServerView) => {
    setView(v);
    setPort(String(v.port));
  }, []);
  useEffect(() => {
    api.apiServerStatus().then(show).catch(showError);
  }, [show, showError]);

  if (!view) {
    return (
      <div className="loading-block">
        <span className="spinner" aria-hidden="true" />
        {t("common.loading")}
      </div>
    );
  }

  const chosen = parsePort(port);
  const apply = async (enabled: boolean, p: number) => {
    setBusy(true);
    try {
      const next = await api.setApiServer(enabled, p);
      show(next);
      if (next.error) notify("error", t("api.notStarted"), next.error);
      else notify("success", next.running ? t("api.started") : t("api.stopped"));
    } catch (err) {
      showError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="stack">
      <section className="card" data-testid="api-server">
        <h2 className="card-title">{t("api.title")}</h2>
        <p className="muted small">{t("api.intro")}</p>
        <form
          className="form-grid"
          onSubmit={(e) => {
            e.preventDefault();
            if (chosen === null || busy) return;
            void apply(view.enabled, chosen);
          }}
        >
          <label className="checkbox-row">
            <input
              type="checkbox"
              data-testid="api-enabled"
              checked={view.enabled}
              disabled={busy || chosen === null}
              onChange={(e) => {
                if (chosen !== null) void apply(e.target.checked, chosen);
              }}
            />
            <span>
              {t("api.enable")}
              <span className="muted small block">{t("api.loopbackOnly")}</span>
            </span>
          </label>
          <label className="field">
            <span className="field-label">{t("api.port")}</span>
            <input
              className="input mono"
              data-testid="api-port"
              inputMode="numeric"
              value={port}
              spellCheck={false}
              aria-invalid={chosen === null}
              onChange={(e) => setPort(e.target.value)}
            />
            <span className="hint">{chosen === null ? t("api.portInvalid", { min: MIN_PORT, max: MAX_PORT }) : t("api.portHint")}</span>
          </label>
          <div className="row-actions">
            <button
              type="submit"
              className="button primary"
              data-testid="api-save"
              disabled={busy || chosen === null || chosen === view.port}
            >
              {busy ? t("common.saving") : t("common.save")}
            </button>
          </div>
        </form>
      </section>

      <section className="card">
        <h2 className="card-title">{t("api.status")}</h2>
        {view.running && view.url ? (
          <div className="stack" data-testid="api-status" data-state="running">
            <p>{t("api.listening", { url: view.url })}</p>
            <div className="key-box">
              <code className="key">{view.url}</code>
              <button
                type="button"
                className="button small"
                onClick={async () => {
                  if (view.url && (await copyText(view.url))) {
                    setCopied(true);
                    window.setTimeout(() => setCopied(false), 1500);
                  }
                }}
              >
                {copied ? <CheckIcon /> : <CopyIcon />}
                {copied ? t("common.copied") : t("common.copy")}
              </button>
            </div>
            <p className="muted small">{t("api.openapi", { url: `${view.url}/openapi.json` })}</p>
          </div>
        ) : view.error ? (
          <p className="warning-box" role="alert" data-testid="api-status" data-state="error">
            {t("api.failed", { error: view.error })}
          </p>
        ) : (
          <p className="muted" data-testid="api-status" data-state="off">
            {t("api.off")}
          </p>
        )}
      </section>
    </div>
  );
}
