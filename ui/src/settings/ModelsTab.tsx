import { useState } from "react";
import { useTranslation } from "react-i18next";
import { api, type LlmSetting } from "../api";
import { useApp } from "../state/app";
import { useToast } from "../state/toasts";

type Kind = LlmSetting["kind"];
const KINDS: Kind[] = ["default", "named", "file", "open_ai", "off"];

export function ModelsTab() {
  const { t } = useTranslation();
  const { info, setInfo } = useApp();
  const { notify, showError } = useToast();
  const models = info?.models;
  const llm = models?.llm ?? { kind: "default" };
  const [kind, setKind] = useState<Kind>(llm.kind);
  const [name, setName] = useState(llm.kind === "named" ? llm.name : (models?.installedLlms[0] ?? ""));
  const [path, setPath] = useState(llm.kind === "file" ? llm.path : "");
  const [baseUrl, setBaseUrl] = useState(llm.kind === "open_ai" ? llm.baseUrl : "");
  const [model, setModel] = useState(llm.kind === "open_ai" ? llm.model : "");
  const [apiKey, setApiKey] = useState("");
  const [saving, setSaving] = useState(false);
  if (!info || !models) return null;
  const hasKey = llm.kind === "open_ai" && llm.hasKey;

  const setting = (): LlmSetting => {
    switch (kind) {
      case "named":
        return { kind, name };
      case "file":
        return { kind, path: path.trim() };
      case "open_ai":
        return { kind, baseUrl: baseUrl.trim(), model: model.trim(), apiKey: apiKey.trim() || null, hasKey };
      default:
        return { kind };
    }
  };

  const valid =
    (kind !== "named" || !!name) &&
    (kind !== "file" || !!path.trim()) &&
    (kind !== "open_ai" || (!!baseUrl.trim() && !!model.trim()));

  return (
    <div className="stack">
      <section className="card">
        <h2 className="card-title">{t("models.search")}</h2>
        <dl className="facts">
          <div>
            <dt>{t("models.embedder")}</dt>
            <dd className="mono small">{models.embedder ?? t("models.keywordOnly")}</dd>
          </div>
          <div>
            <dt>{t("models.reranker")}</dt>
            <dd className="mono small">{models.reranker ?? t("models.none")}</dd>
          </div>
          <div className="wide">
            <dt>{t("models.loaded")}</dt>
            <dd className="mono small" data-testid="llm-loaded">
              {models.llmLoaded ?? t("models.extractiveNow")}
            </dd>
          </div>
        </dl>
        {models.notes.length > 0 && (
          <ul className="notes" data-testid="model-notes">
            {models.notes.map((n, i) => (
              <li key={i}>{n}</li>
            ))}
          </ul>
        )}
      </section>

      <section className="card">
        <h2 className="card-title">{t("models.answerModel")}</h2>
        <form
          onSubmit={async (e) => {
            e.preventDefault();
            if (!valid || saving) return;
            setSaving(true);
            try {
              const next = await api.setLlm(setting());
              setInfo(next);
              setApiKey("");
              notify("success", t("models.saved"));
            } catch (err) {
              showError(err);
            } finally {
              setSaving(false);
            }
          }}
        >
          <fieldset className="radio-group" data-testid="llm-kind">
            <legend className="sr-only">{t("models.answerModel")}</legend>
            {KINDS.map((k) => (
              <div key={k} className={`radio-card${kind === k ? " selected" : ""}`}>
                <label className="radio-label">
                  <input type="radio" name="llm-kind" value={k} checked={kind === k} onChange={() => setKind(k)} />
                  <span>
                    <strong>{t(`models.kinds.${k}.title`)}</strong>
                    <span className="muted small block">{t(`models.kinds.${k}.hint`)}</span>
                  </span>
                </label>
                {kind === k && k === "named" && (
                  <div className="radio-extra">
                    {models.installedLlms.length === 0 ? (
                      <p className="muted small">{t("models.noneInstalled")}</p>
                    ) : (
                      <select className="input" value={name} onChange={(e) => setName(e.target.value)} aria-label={t("models.installed")}>
                        {models.installedLlms.map((m) => (
                          <option key={m} value={m}>
                            {m}
                          </option>
                        ))}
                      </select>
                    )}
                  </div>
                )}
                {kind === k && k === "file" && (
                  <div className="radio-extra">
                    <input
                      className="input mono"
                      value={path}
                      spellCheck={false}
                      placeholder={t("models.filePlaceholder")}
                      aria-label={t("models.filePath")}
                      onChange={(e) => setPath(e.target.value)}
                    />
                  </div>
                )}
                {kind === k && k === "open_ai" && (
                  <div className="radio-extra form-grid">
                    <label className="field">
                      <span className="field-label">{t("models.baseUrl")}</span>
                      <input
                        className="input mono"
                        value={baseUrl}
                        spellCheck={false}
                        placeholder={t("models.baseUrlPlaceholder")}
                        onChange={(e) => setBaseUrl(e.target.value)}
                      />
                    </label>
                    <label className="field">
                      <span className="field-label">{t("models.model")}</span>
                      <input className="input mono" value={model} spellCheck={false} onChange={(e) => setModel(e.target.value)} />
                    </label>
                    <label className="field">
                      <span className="field-label">
                        {t("models.apiKey")}
                        {hasKey && <span className="tag">{t("models.keySaved")}</span>}
                      </span>
                      <input
                        className="input mono"
                        type="password"
                        autoComplete="off"
                        value={apiKey}
                        placeholder={hasKey ? t("models.keepKey") : t("models.optional")}
                        onChange={(e) => setApiKey(e.target.value)}
                      />
                    </label>
                  </div>
                )}
              </div>
            ))}
          </fieldset>
          <div className="row-actions">
            <button type="submit" className="button primary" data-testid="llm-save" disabled={!valid || saving}>
              {saving ? t("common.saving") : t("common.save")}
            </button>
            <span className="muted small">{t("models.appliesNext")}</span>
          </div>
        </form>
      </section>
    </div>
  );
}
