import { useTranslation } from "react-i18next";
import { useIngestProgress } from "../state/app";
import { baseName } from "../lib/format";

/** The header pill: what background ingestion is doing right now. */
export function IngestStatus() {
  const { t } = useTranslation();
  const p = useIngestProgress();
  const pending = p ? p.queued + p.running : 0;
  const state = !p ? "idle" : p.paused ? "paused" : pending > 0 ? "working" : "idle";
  let label: string;
  if (state === "paused") label = t("ingest.paused", { count: pending });
  else if (state === "working") label = t("ingest.working", { count: pending });
  else label = t("ingest.idle");
  // A long scan: how far OCR got in the file being read.
  const reading = p?.current && p.pages != null && p.pagesRead != null ? t("ingest.ocrPages", { done: p.pagesRead, pages: p.pages }) : null;
  const details = [
    p?.current ? t("ingest.current", { file: baseName(p.current) }) : null,
    reading,
    p?.etaSecs != null && state === "working" ? t("ingest.eta", { count: Math.max(1, Math.round(p.etaSecs / 60)) }) : null,
    p && p.failed > 0 ? t("ingest.failedCount", { count: p.failed }) : null,
  ].filter((x): x is string => !!x);

  return (
    <div
      className={`ingest-pill ingest-${state}`}
      data-testid="ingest-status"
      data-state={state}
      role="status"
      aria-live="polite"
      title={[label, ...details].join(" · ")}
    >
      <span className={`dot${state === "working" ? " pulse" : ""}`} aria-hidden="true" />
      <span className="ingest-label">{label}</span>
      {state === "working" && p?.current && <span className="ingest-current">{baseName(p.current)}</span>}
      {state === "working" && reading && (
        <span className="ingest-current" data-testid="ingest-ocr-pages">
          {reading}
        </span>
      )}
      {p && p.failed > 0 && <span className="ingest-failed">{t("ingest.failedCount", { count: p.failed })}</span>}
    </div>
  );
}
