import { useCallback, useEffect, useState } from "react";
import { useTranslation } from "react-i18next";
import { api, type MemoryRow } from "../api";
import { TrashIcon } from "../components/icons";
import { useApp } from "../state/app";
import { useToast } from "../state/toasts";

/** The order kinds are shown in: who the user is, then how they like things, then tasks. */
const KIND_ORDER = ["background", "preference", "habit", "constraint", "case"];
const rank = (kind: string) => {
  const i = KIND_ORDER.indexOf(kind);
  return i < 0 ? KIND_ORDER.length : i;
};

/** Settings → Memory: what the copilot remembers about the signed-in user in the knowledge
 * base the window shows (this computer's, or the team server's; loaded into every
 * conversation as their profile) and the tasks it learned, each forgettable. Nobody else —
 * administrators included — sees this list. */
export function MemoryTab() {
  const { t } = useTranslation();
  const { notify, showError } = useToast();
  const { base } = useApp();
  const [rows, setRows] = useState<MemoryRow[] | null>(null);
  const [forgetting, setForgetting] = useState<string | null>(null);

  const load = useCallback(() => {
    api.memories(base).then(setRows).catch(showError);
  }, [base, showError]);
  useEffect(load, [load]);

  if (!rows) {
    return (
      <div className="loading-block">
        <span className="spinner" aria-hidden="true" />
        {t("common.loading")}
      </div>
    );
  }

  const forget = async (row: MemoryRow) => {
    setForgetting(row.uri);
    try {
      await api.forgetMemory(row.uri, base);
      setRows((list) => (list ?? []).filter((r) => r.uri !== row.uri));
      notify("success", t("memory.forgotten"));
    } catch (err) {
      showError(err);
    } finally {
      setForgetting(null);
    }
  };

  const kinds = [...new Set(rows.map((r) => r.kind))].sort((a, b) => rank(a) - rank(b));
  return (
    <div className="stack" data-testid="memory-list">
      <section className="card">
        <h2 className="card-title">{t("memory.title")}</h2>
        <p className="muted small">{t("memory.intro")}</p>
        {rows.length === 0 && (
          <p className="muted" data-testid="memory-empty">
            {t("memory.empty")}
          </p>
        )}
      </section>
      {kinds.map((kind) => (
        <section className="card" key={kind}>
          <h3 className="card-title">{t(`memory.kinds.${kind}`, { defaultValue: kind })}</h3>
          <ul className="memory-rows">
            {rows
              .filter((r) => r.kind === kind)
              .map((r) => (
                <li key={r.uri} className="memory-row" data-testid="memory-row" data-kind={r.kind}>
                  <div className="memory-text">
                    <span>{r.content}</span>
                    <span className="muted small block">
                      {t("memory.meta", {
                        confidence: Math.round((r.confidence ?? 0) * 100),
                        count: r.confirmations,
                      })}
                      {r.project && ` · ${t("memory.project", { project: r.project })}`}
                      {r.foundBy === "llm" && ` · ${t("memory.foundByModel")}`}
                    </span>
                  </div>
                  <button
                    type="button"
                    className="icon-button"
                    data-testid="memory-forget"
                    aria-label={t("memory.forget")}
                    title={t("memory.forget")}
                    disabled={forgetting === r.uri}
                    onClick={() => void forget(r)}
                  >
                    <TrashIcon />
                  </button>
                </li>
              ))}
          </ul>
        </section>
      ))}
    </div>
  );
}
