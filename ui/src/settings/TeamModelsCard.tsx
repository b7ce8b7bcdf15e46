import { useEffect, useState } from "react";
import { useTranslation } from "react-i18next";
import { api, type TeamModels } from "../api";
import { useToast } from "../state/toasts";
import { ModelFacts } from "./ModelFacts";

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
        <ModelFacts
          embedder={models.embedder}
          reranker={models.reranker}
          answerModel={models.answerModel}
          notes={models.notes}
          answerTestId="team-answer-model"
        />
      )}
      <p className="muted small">{t("models.teamHint")}</p>
    </section>
  );
}
