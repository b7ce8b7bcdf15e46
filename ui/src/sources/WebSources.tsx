import { useCallback, useEffect, useState } from "react";
import { useTranslation } from "react-i18next";
import type { WebSourceRow } from "../api";
import { ConfirmDialog, Dialog } from "../components/Dialog";
import { PlusIcon } from "../components/icons";
import { formatDateTime, parseScopes } from "../lib/format";
import { useToast } from "../state/toasts";
import { useAdmin } from "../settings/useAdmin";

const SCHEDULES = [0, 1, 6, 24, 168];

/** Web sites and wikis crawled into the knowledge base the window shows (administrators). */
export function WebSources({ onChanged }: { onChanged: () => void }) {
  const { t } = useTranslation();
  const admin = useAdmin();
  const { notify, showError } = useToast();
  const [rows, setRows] = useState<WebSourceRow[] | null>(null);
  const [adding, setAdding] = useState(false);
  const [running, setRunning] = useState<number | null>(null);
  const [removing, setRemoving] = useState<WebSourceRow | null>(null);

  const load = useCallback(() => {
    admin.webSources().then(setRows).catch(showError);
  }, [admin, showError]);
  useEffect(load, [load]);

  const run = async (row: WebSourceRow) => {
    setRunning(row.id);
    try {
      const done = await admin.runWebSource(row.id);
      const r = done.lastRun;
      if (r?.aborted) notify("error", t("web.aborted", { reason: r.aborted }));
      else notify("success", t("web.crawled", { url: done.url, fetched: r?.fetched ?? 0 }));
      load();
      onChanged();
    } catch (e) {
      showError(e);
    } finally {
      setRunning(null);
    }
  };

  return (
    <section className="section" data-testid="web-sources">
      <div className="section-header">
        <h2>{t("web.title")}</h2>
        <button type="button" className="button" data-testid="add-web-source" onClick={() => setAdding(true)}>
          <PlusIcon />
          {t("web.add")}
        </button>
      </div>
      {rows && rows.length === 0 ? (
        <p className="muted">{t("web.none")}</p>
      ) : (
        <ul className="folder-list">
          {rows?.map((row) => (
            <li key={row.id} className="folder-row web-row" data-testid="web-source-row" data-url={row.url}>
              <div className="web-main">
                <a className="mono path" href={row.url} target="_blank" rel="noreferrer" title={row.folder}>
                  {row.url}
                </a>
                <span className="muted small" data-testid="web-source-status" data-pages={row.lastRun?.pages ?? ""}>
                  {row.lastRun
                    ? row.lastRun.aborted
                      ? t("web.aborted", { reason: row.lastRun.aborted })
                      : t("web.lastRun", {
                          when: formatDateTime(row.lastRun.finishedAtMs),
                          pages: row.lastRun.pages,
                          fetched: row.lastRun.fetched,
                          removed: row.lastRun.removed,
                          failed: row.lastRun.failed,
                        })
                    : t("web.never")}
                  {" · "}
                  {row.everyHours ? t("web.everyHours", { count: row.everyHours }) : t("web.everyNever")}
                </span>
                {row.lastRun?.stopped && <span className="muted small">{t("web.stopped", { reason: row.lastRun.stopped })}</span>}
                {row.lastRun && row.lastRun.problems.length > 0 && (
                  <details className="failures">
                    <summary>{t("web.problems", { count: row.lastRun.problems.length })}</summary>
                    <ul>
                      {row.lastRun.problems.map((p, i) => (
                        <li key={i} className="mono small">
                          {p}
                        </li>
                      ))}
                    </ul>
                  </details>
                )}
              </div>
              <span className="muted small">{t("sources.documentCount", { count: row.documents })}</span>
              <button
                type="button"
                className="button small"
                data-testid="run-web-source"
                disabled={running !== null}
                onClick={() => run(row)}
              >
                {running === row.id ? t("web.running") : t("web.run")}
              </button>
              <button type="button" className="button small ghost" onClick={() => setRemoving(row)}>
                {t("web.remove")}
              </button>
            </li>
          ))}
        </ul>
      )}
      {adding && (
        <AddWebSource
          onClose={() => setAdding(false)}
          onAdded={(row) => {
            setAdding(false);
            notify("success", t("web.added", { url: row.url }));
            load();
            void run(row);
          }}
        />
      )}
      {removing && (
        <ConfirmDialog
          title={t("web.remove")}
          message={t("web.removeConfirm", { url: removing.url, count: removing.documents })}
          confirmLabel={t("web.remove")}
          onClose={() => setRemoving(null)}
          onConfirm={async () => {
            const row = removing;
            setRemoving(null);
            try {
              const n = await admin.removeWebSource(row.id);
              notify("success", t("web.removed", { count: n }));
              load();
              onChanged();
            } catch (e) {
              showError(e);
            }
          }}
        />
      )}
    </section>
  );
}

function AddWebSource({ onClose, onAdded }: { onClose: () => void; onAdded: (row: WebSourceRow) => void }) {
  const { t } = useTranslation();
  const admin = useAdmin();
  const { showError } = useToast();
  const [url, setUrl] = useState("");
  const [depth, setDepth] = useState(3);
  const [every, setEvery] = useState(24);
  const [readers, setReaders] = useState("");
  const [busy, setBusy] = useState(false);
  const valid = url.trim().length > 0;
  const submit = async () => {
    if (!valid || busy) return;
    setBusy(true);
    try {
      onAdded(await admin.addWebSource(url.trim(), depth, every > 0 ? every : null, parseScopes(readers)));
    } catch (e) {
      showError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog
      title={t("web.addTitle")}
      onClose={onClose}
      testId="add-web-source-dialog"
      footer={
        <>
          <button type="button" className="button" onClick={onClose}>
            {t("common.cancel")}
          </button>
          <button type="button" className="button primary" data-testid="web-source-submit" disabled={!valid || busy} onClick={submit}>
            {busy ? t("common.saving") : t("web.add")}
          </button>
        </>
      }
    >
      <form
        className="form-grid"
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <label className="field">
          <span className="field-label">{t("web.url")}</span>
          <input
            className="input mono"
            data-testid="web-source-url"
            value={url}
            spellCheck={false}
            autoFocus
            placeholder={t("web.urlPlaceholder")}
            onChange={(e) => setUrl(e.target.value)}
          />
        </label>
        <label className="field">
          <span className="field-label">{t("web.depth")}</span>
          <input
            className="input"
            type="number"
            min={0}
            max={10}
            data-testid="web-source-depth"
            value={depth}
            onChange={(e) => setDepth(Math.max(0, Math.min(10, Number(e.target.value) || 0)))}
          />
          <span className="muted small">{t("web.depthHint")}</span>
        </label>
        <label className="field">
          <span className="field-label">{t("web.every")}</span>
          <select className="input" value={every} onChange={(e) => setEvery(Number(e.target.value))}>
            {SCHEDULES.map((h) => (
              <option key={h} value={h}>
                {h === 0 ? t("web.everyNever") : t("web.everyHours", { count: h })}
              </option>
            ))}
          </select>
        </label>
        <label className="field">
          <span className="field-label">{t("web.readers")}</span>
          <input
            className="input mono"
            data-testid="web-source-readers"
            value={readers}
            spellCheck={false}
            placeholder={t("web.readersPlaceholder")}
            onChange={(e) => setReaders(e.target.value)}
          />
          <span className="muted small">{t("web.readersHint")}</span>
        </label>
      </form>
    </Dialog>
  );
}
