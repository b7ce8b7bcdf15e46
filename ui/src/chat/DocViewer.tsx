import { useLayoutEffect, useMemo, useRef } from "react";
import { useTranslation } from "react-i18next";
import type { DocumentPreview } from "../api";
import { splitAtPassage } from "../lib/highlight";

/** A document's text with the cited passage highlighted and scrolled into view. */
interface Props {
  doc: DocumentPreview;
  chunkId: number | null;
  /** Take the keyboard focus when shown (arrow keys scroll, Esc goes back). */
  autoFocus?: boolean;
}

export function DocViewer({ doc, chunkId, autoFocus }: Props) {
  const { t } = useTranslation();
  const parts = useMemo(() => splitAtPassage(doc, chunkId), [doc, chunkId]);
  const mark = useRef<HTMLElement>(null);
  const box = useRef<HTMLDivElement>(null);

  useLayoutEffect(() => {
    if (autoFocus) box.current?.focus({ preventScroll: true });
    mark.current?.scrollIntoView({ block: "center" });
  }, [parts, autoFocus]);

  return (
    <div ref={box} className="doc-viewer" data-testid="doc-viewer" tabIndex={0} aria-label={t("viewer.label", { title: doc.title })}>
      {doc.text.length === 0 ? (
        <p className="muted">{t("viewer.empty")}</p>
      ) : parts ? (
        <div className="doc-text">
          {parts.before}
          <mark ref={mark} className="doc-highlight" data-testid="doc-highlight">
            {parts.passage}
          </mark>
          {parts.after}
        </div>
      ) : (
        <div className="doc-text">{doc.text}</div>
      )}
    </div>
  );
}
