import { useEffect, useRef, useState } from "react";
import { useTranslation } from "react-i18next";
import { api, type DocumentPreview, type Source } from "../api";
import { CloseIcon } from "../components/Dialog";
import { BackIcon, DocIcon, ExternalIcon } from "../components/icons";
import { OriginBadge } from "../components/OriginBadge";
import { useEscape } from "../lib/escape";
import { formatDateTime } from "../lib/format";
import { useToast } from "../state/toasts";
import { DocViewer } from "./DocViewer";

interface Props {
  source: Source;
  onClose: () => void;
}

/** The right-hand panel: one cited source, and on request the whole document around it. */
export function SourcePanel({ source, onClose }: Props) {
  const { t } = useTranslation();
  const { showError } = useToast();
  const [doc, setDoc] = useState<DocumentPreview | null>(null);
  const [viewing, setViewing] = useState(false);
  const [loading, setLoading] = useState(false);
  const panel = useRef<HTMLElement>(null);

  // Another citation: back to its passage.
  useEffect(() => {
    setViewing(false);
    setDoc(null);
    panel.current?.querySelector<HTMLElement>(".panel-body")?.scrollTo({ top: 0 });
  }, [source.evidenceId, source.number]);

  useEscape(() => (viewing ? setViewing(false) : onClose()));

  const openSource = async () => {
    if (source.documentId == null) return;
    if (doc && doc.id === source.documentId) {
      setViewing(true);
      return;
    }
    setLoading(true);
    try {
      const d = await api.openDocument(source.documentId, source.base);
      setDoc(d);
      setViewing(true);
    } catch (e) {
      showError(e);
    } finally {
      setLoading(false);
    }
  };

  const openExternal = async () => {
    if (source.documentId == null) return;
    try {
      await api.openInDefaultApp(source.documentId, source.base);
    } catch (e) {
      showError(e);
    }
  };

  const isSql = source.kind === "sql_result";
  return (
    <aside
      ref={panel}
      className={`side-panel${viewing ? " wide" : ""}`}
      data-testid="source-panel"
      aria-label={t("source.panelLabel")}
    >
      <header className="panel-header">
        {viewing ? (
          <button type="button" className="button small ghost" onClick={() => setViewing(false)}>
            <BackIcon />
            {t("source.backToPassage")}
          </button>
        ) : (
          <span className="panel-kicker">
            <span className="cite static">{source.number}</span>
            {isSql ? t("source.kindSql") : t("source.kindDoc")}
            <OriginBadge base={source.base} />
          </span>
        )}
        <button type="button" className="icon-button" onClick={onClose} aria-label={t("common.close")} title={t("common.close")}>
          <CloseIcon />
        </button>
      </header>

      <div className="panel-title-block">
        <h2 className="panel-title" data-testid="source-title">
          {viewing && doc ? doc.title : source.title}
        </h2>
        <div className="panel-meta">
          {!viewing && (source.authors.length > 0 || source.date) && (
            <span data-testid="source-byline">
              {[
                source.authors.length > 0 ? t("source.from", { people: source.authors.join(", ") }) : null,
                source.date ? formatDateTime(Date.parse(source.date)) : null,
              ]
                .filter(Boolean)
                .join(" · ")}
            </span>
          )}
          {!viewing && source.page != null && <span>{t("source.page", { page: source.page })}</span>}
          {!viewing && source.heading.length > 0 && <span className="heading-path">{source.heading.join(" › ")}</span>}
          {viewing && doc && <span className="mono path" title={doc.path}>{doc.path}</span>}
          {!viewing && source.uri && <span className="mono path" title={source.uri}>{source.uri}</span>}
        </div>
      </div>

      <div className="panel-body">
        {viewing && doc ? (
          <DocViewer doc={doc} chunkId={source.chunkId} autoFocus />
        ) : (
          <>
            {isSql && source.sql && (
              <>
                <div className="section-label">{t("source.sql")}</div>
                <pre className="code" data-testid="source-sql">
                  <code>{source.sql}</code>
                </pre>
                <div className="section-label">{t("source.result")}</div>
              </>
            )}
            <blockquote className={`passage${isSql ? " mono" : ""}`} data-testid="source-passage">
              {source.text}
            </blockquote>
          </>
        )}
      </div>

      {source.documentId != null && (
        <footer className="panel-footer">
          {!viewing && (
            <button type="button" className="button primary" data-testid="open-source" onClick={openSource} disabled={loading}>
              <DocIcon />
              {loading ? t("common.loading") : t("source.open")}
            </button>
          )}
          <button type="button" className="button" data-testid="open-default-app" onClick={openExternal}>
            <ExternalIcon />
            {t("source.openDefault")}
          </button>
        </footer>
      )}
    </aside>
  );
}
