import { useEffect, useState } from "react";
import { useTranslation } from "react-i18next";
import { api, type TraceView } from "../api";
import { Dialog } from "../components/Dialog";
import { formatMs, formatNumber } from "../lib/format";
import { useApp } from "../state/app";
import { useToast } from "../state/toasts";
import { StopReasonBadge } from "./Turn";

/** "How was this answered": route, steps, evidence with permission decisions, SQL, cuts. */
export function TraceDialog({ traceId, onClose }: { traceId: string; onClose: () => void }) {
  const { t } = useTranslation();
  const { showError } = useToast();
  const [trace, setTrace] = useState<TraceView | null>(null);
  const { base } = useApp();

  useEffect(() => {
    let live = true;
    api
      .trace(traceId, base)
      .then((v) => live && setTrace(v))
      .catch((e: unknown) => {
        if (!live) return;
        showError(e);
        onClose();
      });
    return () => {
      live = false;
    };
  }, [traceId, base, showError, onClose]);

  return (
    <Dialog title={t("trace.title")} onClose={onClose} size="xl">
      {!trace ? (
        <div className="loading-block" data-testid="trace-loading">
          <span className="spinner" aria-hidden="true" />
          {t("common.loading")}
        </div>
      ) : (
        <TraceBody trace={trace} />
      )}
    </Dialog>
  );
}

function TraceBody({ trace }: { trace: TraceView }) {
  const { t } = useTranslation();
  const standaloneDiffers =
    trace.standaloneQuestion.trim() !== "" && trace.standaloneQuestion.trim() !== trace.question.trim();
  return (
    <div className="trace" data-testid="trace-view" data-trace-id={trace.traceId}>
      <dl className="facts">
        <div>
          <dt>{t("trace.route")}</dt>
          <dd data-testid="trace-route">
            <span className="badge">{t(`routes.${trace.route}`, { defaultValue: trace.route })}</span>
            {trace.routedBy && (
              <span className="muted small">
                {" "}
                {t("trace.routedBy", { by: t(`routedBy.${trace.routedBy}`, { defaultValue: trace.routedBy }) })}
              </span>
            )}
          </dd>
        </div>
        <div>
          <dt>{t("trace.stopReason")}</dt>
          <dd data-testid="trace-stop-reason">
            {trace.stopReason === "ok" ? (
              <span className="badge badge-ok">{t("stop.ok")}</span>
            ) : (
              <StopReasonBadge reason={trace.stopReason} />
            )}
          </dd>
        </div>
        <div>
          <dt>{t("trace.total")}</dt>
          <dd>{formatMs(trace.totalMs)}</dd>
        </div>
        <div>
          <dt>{t("trace.model")}</dt>
          <dd>
            {trace.model ?? t("trace.noModel")}
            {(trace.promptTokens > 0 || trace.completionTokens > 0) && (
              <span className="muted small">
                {" "}
                {t("trace.tokens", {
                  prompt: formatNumber(trace.promptTokens),
                  completion: formatNumber(trace.completionTokens),
                })}
              </span>
            )}
          </dd>
        </div>
        <div className="wide">
          <dt>{t("trace.permSnapshot")}</dt>
          <dd className="mono small" data-testid="trace-perm-snapshot">
            {trace.permSnapshotId || "—"}
          </dd>
        </div>
        {trace.conversationSummary && (
          <div className="wide">
            <dt>{t("trace.earlier")}</dt>
            <dd className="pre-line" data-testid="trace-earlier">
              {trace.conversationSummary}
            </dd>
          </div>
        )}
        {standaloneDiffers && (
          <div className="wide">
            <dt>{t("trace.standalone")}</dt>
            <dd>{trace.standaloneQuestion}</dd>
          </div>
        )}
        {trace.ragQueries.length > 0 && (
          <div className="wide">
            <dt>{t("trace.searches")}</dt>
            <dd>
              <ul className="plain-list">
                {trace.ragQueries.map((q, i) => (
                  <li key={i}>{q}</li>
                ))}
              </ul>
            </dd>
          </div>
        )}
      </dl>

      <h3>{t("trace.steps")}</h3>
      <div className="table-wrap">
        <table className="table" data-testid="trace-steps">
          <thead>
            <tr>
              <th>{t("trace.step")}</th>
              <th>{t("trace.action")}</th>
              <th>{t("trace.status")}</th>
              <th className="num">{t("trace.time")}</th>
            </tr>
          </thead>
          <tbody>
            {trace.steps.map((s, i) => (
              <tr key={i}>
                <td>
                  {t(`steps.${s.node}`, { defaultValue: s.node })}
                  <span className="muted small mono"> {s.node}</span>
                </td>
                <td className="small">
                  {s.action}
                  {s.error && <div className="error-text small">{s.error}</div>}
                </td>
                <td>
                  <span className={`status status-${s.status}`}>{t(`stepStatus.${s.status}`, { defaultValue: s.status })}</span>
                </td>
                <td className="num">{formatMs(s.timingMs)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>

      <h3>{t("trace.evidence")}</h3>
      {trace.evidence.length === 0 ? (
        <p className="muted">{t("trace.noEvidence")}</p>
      ) : (
        <div className="table-wrap">
          <table className="table" data-testid="trace-evidence">
            <thead>
              <tr>
                <th>{t("trace.source")}</th>
                <th>{t("trace.permission")}</th>
                <th className="num">{t("trace.score")}</th>
                <th>{t("trace.cited")}</th>
              </tr>
            </thead>
            <tbody>
              {trace.evidence.map((e) => (
                <tr key={e.evidenceId} data-testid="trace-evidence-row" data-authz={e.authz} data-cited={e.cited}>
                  <td>
                    <div className="evidence-title">
                      {e.title || e.evidenceId}
                      {e.page != null && <span className="muted small"> · {t("source.page", { page: e.page })}</span>}
                      {e.kind === "sql_result" && <span className="badge small-badge">{t("source.kindSql")}</span>}
                    </div>
                    {e.excerpt && <div className="excerpt small muted">{e.excerpt}</div>}
                  </td>
                  <td>
                    <span className={`authz authz-${e.authz}`}>{t(`authz.${e.authz}`, { defaultValue: e.authz })}</span>
                  </td>
                  <td className="num mono small">{e.score != null ? e.score.toFixed(3) : "—"}</td>
                  <td>{e.cited ? <span className="cited-mark">{t("trace.citedYes")}</span> : ""}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      {trace.sql && (
        <>
          <h3>{t("trace.sql")}</h3>
          <p className="muted small">
            {t("trace.sqlSource", {
              source: trace.sql.source,
              by: t(`routedBy.${trace.sql.generatedBy}`, { defaultValue: trace.sql.generatedBy }),
            })}
          </p>
          <pre className="code" data-testid="trace-sql">
            <code>{trace.sql.sql}</code>
          </pre>
          {trace.sql.preview && (
            <>
              <div className="section-label">{t("trace.preview")}</div>
              <pre className="code preview">{trace.sql.preview}</pre>
            </>
          )}
        </>
      )}

      {trace.cutSentences.length > 0 && (
        <>
          <h3>{t("trace.cut")}</h3>
          <p className="muted small">{t("trace.cutHint")}</p>
          <ul className="cut-list" data-testid="trace-cut">
            {trace.cutSentences.map((s, i) => (
              <li key={i}>{s}</li>
            ))}
          </ul>
        </>
      )}

      {trace.toolErrors.length > 0 && (
        <>
          <h3>{t("trace.toolErrors")}</h3>
          <ul className="plain-list error-text">
            {trace.toolErrors.map((s, i) => (
              <li key={i}>{s}</li>
            ))}
          </ul>
        </>
      )}
      <p className="muted small mono trace-id">{trace.traceId}</p>
    </div>
  );
}
