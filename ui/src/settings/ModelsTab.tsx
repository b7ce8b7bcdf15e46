import { useCallback, useEffect, useState } from "react";
import { useTranslation } from "react-i18next";
import { api, type AppInfo, type LlmSetting, type ModelRow } from "../api";
import { advance, DownloadStatus, startProgress, type DownloadProgress } from "../components/DownloadProgress";
import { formatBytes } from "../lib/format";
import { useApp } from "../state/app";
import { useToast } from "../state/toasts";
import { ModelFacts } from "./ModelFacts";
import { TeamModelsCard } from "./TeamModelsCard";

type Kind = LlmSetting["kind"];
const KINDS: Kind[] = ["default", "named", "file", "open_ai", "off"];

/** This computer's models, or (with the team base shown) the team server's. */
export function ModelsTab() {
  const { base } = useApp();
  return base === "team" ? <TeamModelsCard /> : <LocalModelsTab />;
}

function LocalModelsTab() {
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
  const [library, setLibrary] = useState<ModelRow[]>([]);
  const reload = useCallback(async () => {
    try {
      setLibrary(await api.modelLibrary());
    } catch (err) {
      showError(err);
    }
  }, [showError]);
  useEffect(() => {
    void reload();
  }, [reload]);
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
        <ModelFacts
          embedder={models.embedder}
          reranker={models.reranker}
          answerModel={models.llmLoaded}
          notes={models.notes}
          answerTestId="llm-loaded"
        />
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

      <SearchModelsCard info={info} library={library} onSaved={setInfo} />
      <ModelLibraryCard
        library={library}
        reload={async () => {
          await reload();
          // A new answer model or embedder is now selectable above.
          setInfo(await api.appInfo());
        }}
        modelsDir={models.modelsDir}
      />
    </div>
  );
}

/** Embedder, reranker and device: loaded when the knowledge base opens, so a change is saved
 * now and applied by a restart (an embedder change then re-embeds in the background). */
function SearchModelsCard({
  info,
  library,
  onSaved,
}: {
  info: AppInfo;
  library: ModelRow[];
  onSaved: (info: AppInfo) => void;
}) {
  const { t } = useTranslation();
  const { notify, showError } = useToast();
  const saved = info.models.search;
  const installedEmbedders = library.filter((m) => m.role === "embedder" && m.state === "ok");
  const known = ["default", "off", ...installedEmbedders.map((m) => m.name)];
  const [embedder, setEmbedder] = useState(known.includes(saved.embedder) ? saved.embedder : "folder");
  const [embedderFolder, setEmbedderFolder] = useState(known.includes(saved.embedder) ? "" : saved.embedder);
  const [reranker, setReranker] = useState(saved.reranker ?? "");
  const [gpu, setGpu] = useState(saved.gpu);
  const [busy, setBusy] = useState(false);
  const chosenEmbedder = embedder === "folder" ? embedderFolder.trim() : embedder;
  const valid = chosenEmbedder.length > 0;

  return (
    <section className="card" data-testid="search-models">
      <h2 className="card-title">{t("models.searchSettings")}</h2>
      {info.models.restartNeeded && (
        <div className="warning-box restart-box" role="status" data-testid="restart-needed">
          <span>{t("models.restartNeeded")}</span>
          <button
            type="button"
            className="button small"
            data-testid="restart-app"
            onClick={() => {
              api.restartApp().catch(showError);
            }}
          >
            {t("models.restartNow")}
          </button>
        </div>
      )}
      <form
        className="form-grid"
        onSubmit={async (e) => {
          e.preventDefault();
          if (!valid || busy) return;
          setBusy(true);
          try {
            const next = await api.setSearchModels({
              embedder: chosenEmbedder,
              reranker: reranker.trim() || null,
              gpu,
            });
            onSaved(next);
            notify("success", t("models.searchSaved"), next.models.restartNeeded ? t("models.restartNeeded") : undefined);
          } catch (err) {
            showError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        <label className="field">
          <span className="field-label">{t("models.embedder")}</span>
          <select className="input" data-testid="embedder-choice" value={embedder} onChange={(e) => setEmbedder(e.target.value)}>
            <option value="default">{t("models.embedderDefault")}</option>
            {installedEmbedders.map((m) => (
              <option key={m.name} value={m.name}>
                {m.name}
              </option>
            ))}
            <option value="folder">{t("models.embedderFolder")}</option>
            <option value="off">{t("models.keywordOnly")}</option>
          </select>
          {info.models.embedderFromEnv && <span className="hint">{t("models.embedderFromEnv")}</span>}
        </label>
        {embedder === "folder" && (
          <label className="field">
            <span className="field-label">{t("models.folder")}</span>
            <input
              className="input mono"
              value={embedderFolder}
              spellCheck={false}
              placeholder={t("models.folderPlaceholder")}
              onChange={(e) => setEmbedderFolder(e.target.value)}
            />
          </label>
        )}
        <label className="field">
          <span className="field-label">{t("models.reranker")}</span>
          <input
            className="input mono"
            data-testid="reranker-folder"
            value={reranker}
            spellCheck={false}
            placeholder={t("models.rerankerPlaceholder")}
            onChange={(e) => setReranker(e.target.value)}
          />
          <span className="hint">{t("models.rerankerHint")}</span>
        </label>
        <label className="checkbox-row">
          <input type="checkbox" checked={gpu} onChange={(e) => setGpu(e.target.checked)} data-testid="use-gpu" />
          <span>
            {t("models.useGpu")}
            <span className="muted small block">{info.models.gpuBuilt ? t("models.gpuHint") : t("models.gpuNotBuilt")}</span>
          </span>
        </label>
        <div className="row-actions">
          <button type="submit" className="button primary" data-testid="search-models-save" disabled={!valid || busy}>
            {busy ? t("common.saving") : t("common.save")}
          </button>
          <span className="muted small">{t("models.appliesRestart")}</span>
        </div>
      </form>
    </section>
  );
}

/** The models KnowHub can download from the package registry, each verified by checksum. */
function ModelLibraryCard({
  library,
  reload,
  modelsDir,
}: {
  library: ModelRow[];
  reload: () => Promise<void>;
  modelsDir: string | null;
}) {
  const { t } = useTranslation();
  const { notify, showError } = useToast();
  const [progress, setProgress] = useState<DownloadProgress | null>(null);

  const download = async (name: string) => {
    setProgress(startProgress(name));
    try {
      await api.downloadModel(name, (e) => setProgress((p) => advance(p, name, e)));
      notify("success", t("models.downloaded", { name }));
    } catch (err) {
      showError(err);
    } finally {
      setProgress(null);
      await reload().catch(showError);
    }
  };

  return (
    <section className="card" data-testid="model-library">
      <h2 className="card-title">{t("models.library")}</h2>
      <p className="muted small">
        {t("models.libraryHint")} {modelsDir && <span className="mono">{modelsDir}</span>}
      </p>
      <table className="table">
        <thead>
          <tr>
            <th>{t("models.name")}</th>
            <th>{t("models.role")}</th>
            <th>{t("models.size")}</th>
            <th>{t("models.state")}</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {library.map((m) => {
            const mine = progress?.name === m.name;
            return (
              <tr key={m.name} data-testid="model-row" data-model={m.name} data-state={m.state}>
                <td>
                  <span className="mono small">{m.name}</span>
                  {m.inUse && <span className="tag">{t("models.inUse")}</span>}
                  {m.description && <span className="muted small block">{m.description}</span>}
                </td>
                <td>{t(`models.roles.${m.role}`, { defaultValue: m.role })}</td>
                <td className="mono small">{m.sizeBytes ? formatBytes(m.sizeBytes) : "—"}</td>
                <td>
                  <span className={`badge outcome outcome-${m.state === "ok" ? "ok" : m.state === "corrupt" ? "bad" : "warn"}`}>
                    {t(`models.states.${m.state}`, { defaultValue: m.state })}
                  </span>
                </td>
                <td className="row-actions">
                  {mine ? (
                    <DownloadStatus progress={progress} />
                  ) : m.state !== "ok" ? (
                    <button
                      type="button"
                      className="button small"
                      data-testid="model-download"
                      disabled={progress !== null}
                      onClick={() => download(m.name)}
                    >
                      {m.state === "corrupt" ? t("models.repair") : t("models.download")}
                    </button>
                  ) : null}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}
