import { useCallback, useEffect, useRef, useState } from "react";
import { useTranslation } from "react-i18next";
import { open as openDialog } from "@tauri-apps/plugin-dialog";
import { api, type DocumentPreview, type DocumentRow, type SourcesView } from "../api";
import { DocViewer } from "../chat/DocViewer";
import { ConfirmDialog, Dialog } from "../components/Dialog";
import { ExternalIcon, FolderIcon, PlusIcon } from "../components/icons";
import { baseName, formatDateTime, formatNumber } from "../lib/format";
import { useApp, useIngestEvents, useIngestProgress } from "../state/app";
import { useToast } from "../state/toasts";
import { useAdmin } from "../settings/useAdmin";
import { WebSources } from "./WebSources";

const STATUS_TONES: Record<string, string> = {
  indexed: "ok",
  pending: "pending",
  failed: "bad",
  no_text: "warn",
};

export function SourcesPage() {
  const { t } = useTranslation();
  const { info, epoch, base, team } = useApp();
  const admin = useAdmin();
  // This computer's ingestion; a team server's queue comes with its listing.
  const localProgress = useIngestProgress();
  const live = base === "local" ? localProgress : null;
  const { notify, showError } = useToast();
  const [filter, setFilter] = useState("");
  const [view, setView] = useState<SourcesView | null>(null);
  const [loading, setLoading] = useState(true);
  const [unwatching, setUnwatching] = useState<string | null>(null);
  const [viewing, setViewing] = useState<DocumentRow | null>(null);
  const [serverFolder, setServerFolder] = useState<string | null>(null);
  const filterRef = useRef(filter);
  filterRef.current = filter;
  const seq = useRef(0);
  // Administration acts on the knowledge base shown, under the user's role there.
  const onTeam = base === "team";
  const isAdmin = onTeam
    ? team?.role === "ADMIN" || team?.role === "ROOT"
    : (info?.isAdmin ?? false);

  const load = useCallback(() => {
    const n = ++seq.current;
    const f = filterRef.current.trim();
    api
      .sources(f ? f : null, base)
      .then((v) => {
        if (n === seq.current) setView(v);
      })
      .catch((e: unknown) => {
        if (n === seq.current) showError(e);
      })
      .finally(() => {
        if (n === seq.current) setLoading(false);
      });
  }, [showError, base]);

  // Typing filters after a short pause; a new user reloads at once.
  useEffect(() => {
    const timer = window.setTimeout(load, filter ? 250 : 0);
    return () => window.clearTimeout(timer);
  }, [filter, load, epoch]);

  // Ingestion changed something: refresh, at most every so often.
  const pending = useRef<number | null>(null);
  useEffect(() => () => {
    if (pending.current) window.clearTimeout(pending.current);
  }, []);
  useIngestEvents((e) => {
    if (e.type !== "idle" && e.type !== "file") return;
    if (pending.current) return;
    pending.current = window.setTimeout(() => {
      pending.current = null;
      load();
    }, e.type === "idle" ? 300 : 1000);
  });

  const act = async (what: () => Promise<unknown>, done?: string) => {
    try {
      await what();
      if (done) notify("success", done);
      load();
    } catch (e) {
      showError(e);
    }
  };

  const watch = async () => {
    // A folder on the server is named by its path there (this computer's disk is not its).
    if (onTeam) {
      setServerFolder("");
      return;
    }
    let picked: string | string[] | null;
    try {
      picked = await openDialog({ directory: true, multiple: false, title: t("sources.pickFolder") });
    } catch (e) {
      showError(e);
      return;
    }
    const path = Array.isArray(picked) ? picked[0] : picked;
    if (!path) return;
    await act(() => admin.watchFolder(path), t("sources.watching", { path }));
  };

  // Live counts from the event stream, the failure list from the last load.
  const q = view?.queue;
  const queued = live ? live.queued : (q?.queued ?? 0);
  const running = live ? live.running : (q?.running ?? 0);
  const failed = live ? live.failed : (q?.failed ?? 0);
  const paused = live ? live.paused : (q?.paused ?? false);

  return (
    <div className="page">
      <div className="page-header">
        <div>
          <h1>{t("sources.title")}</h1>
          <p className="muted">{t("sources.subtitle")}</p>
        </div>
        {isAdmin && (
          <button type="button" className="button primary" data-testid="watch-folder" onClick={watch}>
            <PlusIcon />
            {t("sources.watchFolder")}
          </button>
        )}
      </div>

      <section className="card queue" aria-label={t("sources.queue")} data-testid="queue-summary">
        <div className="queue-stats">
          <Stat label={t("sources.queued")} value={queued} />
          <Stat label={t("sources.running")} value={running} />
          <Stat label={t("sources.failed")} value={failed} tone={failed > 0 ? "bad" : undefined} />
          <div className="stat">
            <span className="stat-label">{t("sources.state")}</span>
            <span className={`badge ${paused ? "badge-warn" : "badge-ok"}`} data-testid="queue-state">
              {paused ? t("sources.paused") : t("sources.active")}
            </span>
          </div>
        </div>
        {isAdmin && (
          <div className="queue-actions">
            <button
              type="button"
              className="button"
              data-testid="toggle-pause"
              onClick={() =>
                act(() => admin.setIngestionPaused(!paused), paused ? t("sources.resumed") : t("sources.pausedToast"))
              }
            >
              {paused ? t("sources.resume") : t("sources.pause")}
            </button>
            <button
              type="button"
              className="button"
              data-testid="retry-failed"
              disabled={failed === 0 && !(q?.failures.length)}
              onClick={() =>
                act(async () => {
                  const n = await admin.retryFailed();
                  notify("success", t("sources.retried", { count: n }));
                })
              }
            >
              {t("sources.retryFailed")}
            </button>
          </div>
        )}
        {q && q.failures.length > 0 && (
          <details className="failures">
            <summary>{t("sources.failures", { count: q.failures.length })}</summary>
            <ul>
              {q.failures.map((f, i) => (
                <li key={i}>
                  <span className="mono small path">{f.path}</span>
                  <span className="error-text small">{f.error}</span>
                </li>
              ))}
            </ul>
          </details>
        )}
      </section>

      <section className="section">
        <h2>{t("sources.folders")}</h2>
        {view && view.folders.length === 0 ? (
          <p className="muted">{isAdmin ? t("sources.noFoldersAdmin") : t("sources.noFolders")}</p>
        ) : (
          <ul className="folder-list">
            {view?.folders.map((f) => (
              <li key={f.path} className="folder-row" data-testid="folder-row" data-path={f.path}>
                <FolderIcon />
                <span className="mono path" title={f.path}>
                  {f.path}
                </span>
                <span className="muted small">{t("sources.documentCount", { count: f.documents })}</span>
                {f.watched && <span className="badge badge-info">{t("sources.watched")}</span>}
                {isAdmin && f.watched && (
                  <button type="button" className="button small ghost" onClick={() => setUnwatching(f.path)}>
                    {t("sources.unwatch")}
                  </button>
                )}
              </li>
            ))}
          </ul>
        )}
      </section>

      {isAdmin && <WebSources onChanged={load} />}

      <section className="section">
        <div className="section-header">
          <h2>{t("sources.documents")}</h2>
          <input
            type="search"
            className="input filter"
            data-testid="sources-filter"
            value={filter}
            placeholder={t("sources.filterPlaceholder")}
            aria-label={t("sources.filterPlaceholder")}
            onChange={(e) => setFilter(e.target.value)}
          />
        </div>
        {loading && !view ? (
          <div className="loading-block">
            <span className="spinner" aria-hidden="true" />
            {t("common.loading")}
          </div>
        ) : view && view.documents.length === 0 ? (
          <p className="muted">{filter ? t("sources.noMatches") : t("sources.noDocuments")}</p>
        ) : (
          <div className="table-wrap">
            <table className="table docs" data-testid="documents-table">
              <thead>
                <tr>
                  <th>{t("sources.docTitle")}</th>
                  <th>{t("sources.kind")}</th>
                  <th>{t("sources.status")}</th>
                  <th className="num">{t("sources.chunks")}</th>
                  <th>{t("sources.updated")}</th>
                </tr>
              </thead>
              <tbody>
                {view?.documents.map((d) => (
                  <DocRow key={d.id} doc={d} onOpen={() => setViewing(d)} />
                ))}
              </tbody>
            </table>
            {view && view.total > view.documents.length && (
              <p className="muted small">
                {t("sources.truncated", { shown: formatNumber(view.documents.length), total: formatNumber(view.total) })}
              </p>
            )}
          </div>
        )}
      </section>

      {unwatching && (
        <ConfirmDialog
          title={t("sources.unwatch")}
          message={t("sources.unwatchConfirm", { path: unwatching })}
          confirmLabel={t("sources.unwatch")}
          onClose={() => setUnwatching(null)}
          onConfirm={async () => {
            const path = unwatching;
            setUnwatching(null);
            await act(() => admin.unwatchFolder(path), t("sources.unwatched", { path }));
          }}
        />
      )}
      {viewing && <DocumentDialog row={viewing} onClose={() => setViewing(null)} />}
      {serverFolder !== null && (
        <Dialog
          title={t("sources.watchServerFolder")}
          onClose={() => setServerFolder(null)}
          testId="server-folder-dialog"
          size="md"
          footer={
            <>
              <button type="button" className="button" onClick={() => setServerFolder(null)}>
                {t("common.cancel")}
              </button>
              <button
                type="button"
                className="button primary"
                data-testid="server-folder-confirm"
                disabled={!serverFolder.trim().startsWith("/")}
                onClick={() => {
                  const path = serverFolder.trim();
                  setServerFolder(null);
                  void act(() => admin.watchFolder(path), t("sources.watching", { path }));
                }}
              >
                {t("sources.watchFolder")}
              </button>
            </>
          }
        >
          <label className="field">
            <span className="field-label">{t("sources.serverFolder")}</span>
            <input
              className="input mono"
              data-testid="server-folder-path"
              value={serverFolder}
              autoFocus
              spellCheck={false}
              placeholder={t("sources.serverFolderPlaceholder")}
              onChange={(e) => setServerFolder(e.target.value)}
            />
            <span className="hint">{t("sources.serverFolderHint", { server: team?.server ?? "" })}</span>
          </label>
        </Dialog>
      )}
    </div>
  );
}

function Stat({ label, value, tone }: { label: string; value: number; tone?: string }) {
  return (
    <div className="stat">
      <span className="stat-label">{label}</span>
      <span className={`stat-value${tone ? ` tone-${tone}` : ""}`}>{formatNumber(value)}</span>
    </div>
  );
}

function DocRow({ doc, onOpen }: { doc: DocumentRow; onOpen: () => void }) {
  const { t } = useTranslation();
  const tone = STATUS_TONES[doc.status] ?? "warn";
  return (
    <>
      <tr data-testid="doc-row" data-path={doc.path} data-status={doc.status} className={doc.error ? "has-error" : undefined}>
        <td>
          <button type="button" className="link-button doc-title" onClick={onOpen} title={doc.path}>
            {doc.title || baseName(doc.path)}
          </button>
          <div className="mono small muted path" title={doc.path}>
            {doc.path}
          </div>
        </td>
        <td className="small">{doc.kind ?? "—"}</td>
        <td>
          <span className={`status-pill tone-${tone}`} title={doc.error ?? undefined}>
            {t(`docStatus.${doc.status}`, { defaultValue: doc.status })}
          </span>
        </td>
        <td className="num">{formatNumber(doc.chunks)}</td>
        <td className="small muted">{formatDateTime(doc.updatedAtMs)}</td>
      </tr>
      {doc.error && (
        <tr className="error-row">
          <td colSpan={5} className="error-text small">
            {doc.error}
          </td>
        </tr>
      )}
    </>
  );
}

/** A document from the table in the built-in viewer. */
function DocumentDialog({ row, onClose }: { row: DocumentRow; onClose: () => void }) {
  const { t } = useTranslation();
  const { showError } = useToast();
  const { base } = useApp();
  const [doc, setDoc] = useState<DocumentPreview | null>(null);
  const close = useRef(onClose);
  close.current = onClose;
  useEffect(() => {
    let live = true;
    api
      .openDocument(row.id, base)
      .then((d) => live && setDoc(d))
      .catch((e: unknown) => {
        if (!live) return;
        showError(e);
        close.current();
      });
    return () => {
      live = false;
    };
  }, [row.id, base, showError]);
  return (
    <Dialog
      title={row.title || baseName(row.path)}
      onClose={onClose}
      size="lg"
      footer={
        <button
          type="button"
          className="button"
          onClick={() => api.openInDefaultApp(row.id, base).catch(showError)}
        >
          <ExternalIcon />
          {t("source.openDefault")}
        </button>
      }
    >
      <p className="mono small muted path">{row.path}</p>
      {doc ? (
        <DocViewer doc={doc} chunkId={null} />
      ) : (
        <div className="loading-block">
          <span className="spinner" aria-hidden="true" />
          {t("common.loading")}
        </div>
      )}
    </Dialog>
  );
}
