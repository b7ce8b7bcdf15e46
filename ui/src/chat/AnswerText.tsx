import { memo, useMemo } from "react";
import { useTranslation } from "react-i18next";
import type { Source } from "../api";
import { splitCitations } from "../lib/citations";

interface Props {
  text: string;
  /** The answer's sources; markers naming one become buttons. Absent while streaming. */
  sources?: Source[];
  activeNumber?: number | null;
  onCite?: (source: Source) => void;
}

/** Answer text with inline `[n]` markers turned into small citation buttons. */
export const AnswerText = memo(function AnswerText({ text, sources, activeNumber, onCite }: Props) {
  const { t } = useTranslation();
  const segments = useMemo(() => splitCitations(text), [text]);
  const byNumber = useMemo(() => new Map((sources ?? []).map((s) => [s.number, s])), [sources]);
  return (
    <>
      {segments.map((seg, i) => {
        if (seg.kind === "text") return <span key={i}>{seg.text}</span>;
        const source = byNumber.get(seg.number);
        if (!source || !onCite) {
          return (
            <span key={i} className="cite cite-inert" aria-hidden={sources ? undefined : true}>
              {seg.number}
            </span>
          );
        }
        return (
          <button
            key={i}
            type="button"
            className={`cite${activeNumber === seg.number ? " active" : ""}`}
            data-testid="citation-marker"
            data-number={seg.number}
            aria-label={t("chat.citationLabel", { number: seg.number, title: source.title })}
            title={source.title}
            onClick={() => onCite(source)}
          >
            {seg.number}
          </button>
        );
      })}
    </>
  );
});
