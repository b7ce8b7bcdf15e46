import { useTranslation } from "react-i18next";

/** The models in use: embedder, reranker, what answers now, and why configured ones are not
 * in use. */
export function ModelFacts(props: {
  embedder: string | null;
  reranker: string | null;
  answerModel: string | null;
  notes: string[];
  answerTestId: string;
}) {
  const { t } = useTranslation();
  return (
    <>
      <dl className="facts">
        <div>
          <dt>{t("models.embedder")}</dt>
          <dd className="mono small">{props.embedder ?? t("models.keywordOnly")}</dd>
        </div>
        <div>
          <dt>{t("models.reranker")}</dt>
          <dd className="mono small">{props.reranker ?? t("models.none")}</dd>
        </div>
        <div className="wide">
          <dt>{t("models.loaded")}</dt>
          <dd className="mono small" data-testid={props.answerTestId}>
            {props.answerModel ?? t("models.extractiveNow")}
          </dd>
        </div>
      </dl>
      {props.notes.length > 0 && (
        <ul className="notes" data-testid="model-notes">
          {props.notes.map((n, i) => (
            <li key={i}>{n}</li>
          ))}
        </ul>
      )}
    </>
  );
}
