import { useEffect, useState } from "react";
import { useTranslation } from "react-i18next";
import { api, type TeamModels } from "../api";
import { useToast } from "../state/toasts";

/** The models the joined team server answers and searches with. They are set where the server
 * starts (`knowhub serve --llm … --embedder …`), so this shows them and says so. */
export function TeamModelsCard() {
  const { t } = useTranslation();
  const { showError } = useToast();
  const [models, setModels] = useState<TeamModels | null>(null);
  useEffect(() => {
    api.teamModels().then(setModels).catch(showError);
  }, [showError]);
  return (
    <section className="card" data-testid="team-models">
      <h2 className="card-title">{t("models.teamTitle")}</h2>
      {!models ? (
        <div className="loading-block">
          <span className="spinner" aria-hidden="true" />
          {t("common.loading")}
        </div>
      ) : (
        <dl className="facts">
          <div className="wide">
            <dt>{t("models.loaded")}</dt>
            <dd className="mono small" data-testid="team-answer-model">
              {models.answerModel ?? t("models.extractiveNow")}
            </dd>
          </div>
          <div>
            <dt>{t("models.embedder")}</dt>
            <dd className="mono small">{models.embedder ?? t("models.keywordOnly")}</dd>
          </div>
          <div>
            <dt>{t("models.reranker")}</dt>
            <dd className="mono small">{models.reranker ?? t("models.none")}</dd>
          </div>
        </dl>
      )}
      {models && models.notes.length > 0 && (
        <ul className="notes">
          {models.notes.map((n, i) => (
            <li key={i}>{n}</li>
          ))}
        </ul>
      )}
      <p className="muted small">{t("models.teamHint")}</p>
    </section>
  );
}
