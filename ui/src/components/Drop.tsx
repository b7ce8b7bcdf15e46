import { useCallback, useEffect, useRef, useState } from "react";
import { useTranslation } from "react-i18next";
import {
  api,
  toAppError,
  type DropTarget,
  type DropTargetRow,
  type DroppedFile,
  type IngestEvent,
  type Visibility,
} from "../api";
import { baseName, parseScopes } from "../lib/format";
import { useApp, useIngestEvents } from "../state/app";
import { useToast } from "../state/toasts";
import { Dialog } from "./Dialog";
import { UploadIcon } from "./icons";
import { getCurrentWebview } from "@tauri-apps/api/webview";

declare global {
  interface Window {
    /** Hooks for the end-to-end tests (WebDriver cannot perform a native file drop). */
    __knowhub?: { handleDrop: (paths: string[]) => void };
  }
}

type VisibilityChoice = "private" | "public" | "scopes";
type FileEvent = Extract<IngestEvent, { type: "file" }>;

type DropState =
  | { phase: "confirm"; paths: string[] }
  | { phase: "running"; paths: string[]; events: FileEvent[] };

const ACCEPTED = new Set(["added", "updated", "unchanged"]);
const PROBLEM = new Set(["failed", "unsupported", "skipped"]);

/** Files dropped on the window: an overlay while dragging, then a dialog that asks who may see
 * them, ingests them and reports each file. */
export function DropZone() {
  const { t } = useTranslation();
  const { notify } = useToast();
  const [dragging, setDragging] = useState(false);
  const [drop, setDrop] = useState<DropState | null>(null);
  const dropRef = useRef(drop);
  dropRef.current = drop;

  /** The one entry point for a drop: the native drag-and-drop handler and the tests call it. */
  const handleDrop = useCallback((paths: string[]) => {
    const list = (paths ?? []).filter((p) => typeof p === "string" && p.length > 0);
    if (!list.length) return;
    if (dropRef.current?.phase === "running") return; // one ingestion at a time
    setDrop({ phase: "confirm", paths: list });
  }, []);

  useEffect(() => {
    window.__knowhub = { ...window.__knowhub, handleDrop };
    return () => {
      if (window.__knowhub?.handleDrop === handleDrop) delete window.__knowhub;
    };
  }, [handleDrop]);

  useEffect(() => {
    let unlisten: (() => void) | null = null;
    let live = true;
    Promise.resolve()
      .then(() =>
        getCurrentWebview().onDragDropEvent((event) => {
          const p = event.payload;
          if (p.type === "enter" || p.type === "over") setDragging(true);
          else if (p.type === "leave") setDragging(false);
          else if (p.type === "drop") {
            setDragging(false);
            handleDrop(p.paths);
          }
        }),
      )
      .then((u) => {
        if (live) unlisten = u;
        else u();
      })
      .catch(() => {
        // Not inside the app window: no native drops.
      });
    return () => {
      live = false;
      unlisten?.();
    };
  }, [handleDrop]);

  useIngestEvents((e) => {
    if (e.type !== "file") return;
    setDrop((d) => (d && d.phase === "running" ? { ...d, events: [...d.events, e] } : d));
  });

  const start = async (target: DropTarget, visibility: Visibility) => {
    const current = dropRef.current;
    if (!current || current.phase !== "confirm") return;
    const paths = current.paths;
    setDrop({ phase: "running", paths, events: [] });
    try {
      const results = await api.ingestDropped(paths, target, visibility);
      // Done: the dialog gets out of the way and the outcome of each file stays on screen in a
      // notice that does not block the window (until dismissed when something failed).
      setDrop(null);
      const added = results.filter((r) => ACCEPTED.has(r.outcome)).length;
      const failed = results.filter((r) => !ACCEPTED.has(r.outcome)).length;
      notify(
        failed > 0 ? "warning" : "success",
        t("drop.addedCount", { count: added }),
        failed > 0 ? t("drop.failedCount", { count: failed }) : undefined,
        { body: <DropResults results={results} />, sticky: failed > 0 },
      );
    } catch (e) {
      const err = toAppError(e);
      setDrop({ phase: "confirm", paths });
      notify("error", t(`errors.${err.kind}`), err.message);
    }
  };

  return (
    <>
      {dragging && (
        <div className="drop-overlay" data-testid="drop-overlay" aria-hidden="true">
          <div className="drop-card">
            <UploadIcon />
            <strong>{t("drop.overlayTitle")}</strong>
            <span>{t("drop.overlayHint")}</span>
          </div>
        </div>
      )}
      {drop && (
        <DropDialog
          state={drop}
          onStart={start}
          onClose={() => {
            if (dropRef.current?.phase !== "running") setDrop(null);
          }}
        />
      )}
    </>
  );
}

interface DialogProps {
  state: DropState;
  onStart: (target: DropTarget, v: Visibility) => void;
  onClose: () => void;
}

/** The value of a "new collection" entry in the target list (absolute paths never look like this). */
const NEW_COLLECTION = "::new-collection:";

/** A target row's value in the list: its base and path (a path may exist in both bases). */
const rowValue = (row: DropTargetRow) => `${row.base}:${row.path}`;

function DropDialog({ state, onStart, onClose }: DialogProps) {
  const { t } = useTranslation();
  const { base, team } = useApp();
  const [choice, setChoice] = useState<VisibilityChoice>("private");
  const [scopes, setScopes] = useState("");
  const [targets, setTargets] = useState<DropTargetRow[]>([]);
  const [selected, setSelected] = useState("");
  const [collection, setCollection] = useState("");
  const running = state.phase === "running";
  const scopeList = parseScopes(scopes);
  const newCollection = selected.startsWith(NEW_COLLECTION);
  const newIn = newCollection ? selected.slice(NEW_COLLECTION.length) : null;
  const row = targets.find((r) => rowValue(r) === selected);
  const toTeam = row ? row.base === "team" : newIn === "team";
  const local = targets.filter((r) => r.base === "local");
  const onServer = targets.filter((r) => r.base === "team");
  const canStart =
    (choice !== "scopes" || scopeList.length > 0) && (!newCollection || collection.trim().length > 0);

  useEffect(() => {
    let live = true;
    api
      .dropTargets()
      .then((list) => {
        if (!live) return;
        setTargets(list);
        // Where the window is looking is where the files go first; the team only when chosen
        // in the dialog or when the window shows the team.
        const first = list.find((r) => r.base === base) ?? list.find((r) => r.base === "local");
        setSelected((v) => v || (first ? rowValue(first) : ""));
      })
      .catch(() => {
        // The list is a convenience: without it the files still go to My uploads.
      });
    return () => {
      live = false;
    };
  }, [base]);

  const visibility = (): Visibility =>
    choice === "scopes" ? { kind: "scopes", scopes: scopeList } : { kind: choice };

  const target = (): DropTarget => {
    const name = collection.trim();
    if (newIn === "team") return { kind: "team", destination: name };
    if (newCollection) return { kind: "uploads", collection: name };
    if (!row) return { kind: "uploads", collection: null };
    if (row.base === "team") return { kind: "team", destination: row.kind === "uploads" ? null : row.path };
    if (row.kind === "uploads") return { kind: "uploads", collection: null };
    if (row.kind === "collection") return { kind: "uploads", collection: row.name };
    return { kind: "folder", path: row.path };
  };

  const begin = () => onStart(target(), visibility());

  /** The label of one place dropped files may go. */
  const targetLabel = (row: DropTargetRow) => {
    if (row.kind === "uploads") return t("drop.myUploads");
    if (row.kind === "collection") return t("drop.inCollection", { name: row.name });
    return t("drop.watchedFolder", { name: row.name });
  };

  const options = (rows: DropTargetRow[], where: "local" | "team") => (
    <>
      {rows.map((r) => (
        <option key={rowValue(r)} value={rowValue(r)} title={r.path}>
          {targetLabel(r)}
        </option>
      ))}
      <option value={NEW_COLLECTION + where}>{t("drop.newCollection")}</option>
    </>
  );

  return (
    <Dialog
      title={t("drop.title", { count: state.paths.length })}
      onClose={onClose}
      locked={running}
      testId="drop-dialog"
      size="md"
      footer={
        <>
          <button type="button" className="button" onClick={onClose} disabled={running}>
            {t("common.cancel")}
          </button>
          <button
            type="button"
            className="button primary"
            data-testid="drop-confirm"
            disabled={running || !canStart}
            onClick={begin}
          >
            {running ? t("drop.adding") : t("drop.confirm")}
          </button>
        </>
      }
    >
      {state.phase === "confirm" && (
        <div className="form-grid">
          <ul className="file-list compact" aria-label={t("drop.files")}>
            {state.paths.map((p) => (
              <li key={p} title={p}>
                <span className="file-name">{baseName(p)}</span>
                <span className="muted small mono path">{p}</span>
              </li>
            ))}
          </ul>
          <label className="field">
            <span className="field-label">{t("drop.collection")}</span>
            <select
              className="input"
              data-testid="drop-target"
              value={selected}
              onChange={(e) => setSelected(e.target.value)}
            >
              {targets.length === 0 && <option value="">{t("drop.myUploads")}</option>}
              {onServer.length === 0 ? (
                options(local, "local")
              ) : (
                <>
                  <optgroup label={t("team.baseLocal")}>{options(local, "local")}</optgroup>
                  <optgroup label={t("drop.teamGroup", { server: team?.server ?? "" })}>
                    {options(onServer, "team")}
                  </optgroup>
                </>
              )}
            </select>
            <span className="hint" data-testid="drop-target-hint">
              {toTeam ? t("drop.teamHint", { server: team?.server ?? "" }) : t("drop.targetHint")}
            </span>
          </label>
          {newCollection && (
            <label className="field">
              <span className="field-label">{t("drop.collectionName")}</span>
              <input
                className="input"
                data-testid="drop-collection-name"
                value={collection}
                autoFocus
                maxLength={100}
                placeholder={t("drop.collectionPlaceholder")}
                onChange={(e) => setCollection(e.target.value)}
              />
              <span className="hint">{toTeam ? t("drop.teamCollectionHint") : t("drop.collectionHint")}</span>
            </label>
          )}
          <label className="field">
            <span className="field-label">{t("drop.visibility")}</span>
            <select
              className="input"
              data-testid="drop-visibility"
              data-autofocus
              value={choice}
              onChange={(e) => setChoice(e.target.value as VisibilityChoice)}
            >
              <option value="private">{t("drop.private")}</option>
              <option value="public">{t("drop.public")}</option>
              <option value="scopes">{t("drop.scopes")}</option>
            </select>
          </label>
          {choice === "scopes" && (
            <label className="field">
              <span className="field-label">{t("drop.scopesLabel")}</span>
              <input
                className="input mono"
                data-testid="drop-scopes"
                value={scopes}
                autoFocus
                spellCheck={false}
                placeholder={t("drop.scopesPlaceholder")}
                onChange={(e) => setScopes(e.target.value)}
                onKeyDown={(e) => {
                  if (e.key === "Enter" && canStart) begin();
                }}
              />
              <span className="hint">{t("drop.scopesHint")}</span>
            </label>
          )}
          <p className="hint">{t(`drop.hints.${choice}`)}</p>
        </div>
      )}

      {state.phase === "running" && (
        <div>
          <div className="step-line" role="status">
            <span className="spinner" aria-hidden="true" />
            <span>{t("drop.reading")}</span>
          </div>
          <ul className="file-list" data-testid="drop-progress">
            {state.events.map((e, i) => (
              <li key={`${e.path}-${i}`} className={`outcome-row-${e.outcome}`} data-testid="drop-progress-row" data-outcome={e.outcome}>
                <span className="file-name" title={e.path}>
                  {baseName(e.path)}
                </span>
                <OutcomeBadge outcome={e.outcome} />
                {e.reason && <span className="reason">{e.reason}</span>}
              </li>
            ))}
          </ul>
        </div>
      )}

    </Dialog>
  );
}

/** Each dropped file and what became of it (with the reason when it was not added). */
function DropResults({ results }: { results: DroppedFile[] }) {
  return (
    <ul className="file-list toast-files" data-testid="drop-results">
      {results.map((r, i) => (
        <li
          key={`${r.storedAs}-${i}`}
          className={`outcome-row-${r.outcome}`}
          data-testid="drop-result"
          data-outcome={r.outcome}
          data-source={r.source}
          data-stored={r.storedAs}
        >
          <span className="file-name" title={r.source}>
            {baseName(r.source)}
          </span>
          <OutcomeBadge outcome={r.outcome} />
          {r.reason && <span className="reason">{r.reason}</span>}
        </li>
      ))}
    </ul>
  );
}

export function OutcomeBadge({ outcome }: { outcome: string }) {
  const { t } = useTranslation();
  const tone = ACCEPTED.has(outcome) ? "ok" : PROBLEM.has(outcome) ? "bad" : "warn";
  return <span className={`badge outcome outcome-${tone}`}>{t(`outcomes.${outcome}`, { defaultValue: outcome })}</span>;
}
