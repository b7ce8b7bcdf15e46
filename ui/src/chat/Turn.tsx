import { memo, useState } from "react";
import { useTranslation } from "react-i18next";
import { api, type Answer, type Source } from "../api";
import { CheckIcon, CopyIcon, RouteIcon, ThumbDownIcon, ThumbUpIcon } from "../components/icons";
import { answerForClipboard } from "../lib/citations";
import { copyText } from "../lib/clipboard";
import { formatMs } from "../lib/format";
import type { StepState, Turn } from "../state/chat";
import { useApp } from "../state/app";
import { useChatActions } from "../state/chat";
import { useToast } from "../state/toasts";
import { AnswerText } from "./AnswerText";
import { OriginBadge } from "../components/OriginBadge";

interface Props {
  turn: Turn;
  /** The number of the source shown in the side panel when it belongs to this turn. */
  activeNumber: number | null;
  onCite: (turnKey: string, source: Source) => void;
  onTrace: (traceId: string) => void;
  onRetry: (question: string) => void;
}

export const TurnView = memo(function TurnView({ turn, activeNumber, onCite, onTrace, onRetry }: Props) {
  const { t } = useTranslation();
  return (
    <section className="turn">
      <div className="question">
        <div className="question-bubble">{turn.question}</div>
      </div>
      {turn.phase === "done" && turn.answer ? (
        <AnswerBlock
          answer={turn.answer}
          activeNumber={activeNumber}
          onCite={(s) => onCite(turn.key, s)}
          onTrace={onTrace}
        />
      ) : (
        <div
          className={`answer answer-${turn.phase}`}
          data-testid="answer-pending"
          data-phase={turn.phase}
          aria-busy={turn.phase === "asking"}
        >
          {turn.phase === "asking" && <StepLine steps={turn.steps} />}
          {turn.draft && (
            <div className={`answer-text${turn.phase === "asking" ? " streaming" : " muted"}`} data-testid="answer-draft">
              <AnswerText text={turn.draft} />
            </div>
          )}
          {turn.phase === "stopped" && <p className="answer-note">{t("chat.stopped")}</p>}
          {turn.phase === "error" && turn.error && (
            <div className="answer-error" role="alert">
              <strong>{t(`errors.${turn.error.kind}`)}</strong>
              <span>{turn.error.message}</span>
              <button type="button" className="button small" onClick={() => onRetry(turn.question)}>
                {t("chat.retry")}
              </button>
            </div>
          )}
        </div>
      )}
    </section>
  );
});

/** The live workflow status: the step running now (or the last one finished). */
function StepLine({ steps }: { steps: StepState[] }) {
  const { t } = useTranslation();
  const current = steps[steps.length - 1];
  const label = current
    ? t(`steps.${current.node}`, { defaultValue: current.node })
    : t("chat.thinking");
  const done = steps.filter((s) => s.status !== "start").length;
  return (
    <div className="step-line" role="status" aria-live="polite" data-testid="chat-step">
      <span className="spinner" aria-hidden="true" />
      <span>{label}</span>
      {done > 0 && <span className="step-count">{t("chat.stepsDone", { count: done })}</span>}
    </div>
  );
}

const REASONS = ["no_evidence", "need_clarify", "permission_denied", "tool_error"];

export function StopReasonBadge({ reason }: { reason: string }) {
  const { t } = useTranslation();
  if (!REASONS.includes(reason)) return null;
  return (
    <span className={`badge badge-stop badge-${reason}`} data-testid="stop-reason">
      {t(`stop.${reason}`)}
    </span>
  );
}

interface AnswerProps {
  answer: Answer;
  activeNumber: number | null;
  onCite: (source: Source) => void;
  onTrace: (traceId: string) => void;
}

function AnswerBlock({ answer, activeNumber, onCite, onTrace }: AnswerProps) {
  const { t } = useTranslation();
  const { notify } = useToast();
  const [copied, setCopied] = useState(false);
  const [noting, setNoting] = useState(false);

  const copy = async () => {
    const ok = await copyText(
      answerForClipboard(answer.text, answer.sources, (page) => t("source.page", { page })),
    );
    if (ok) {
      setCopied(true);
      window.setTimeout(() => setCopied(false), 1500);
    } else {
      notify("error", t("chat.copyFailed"));
    }
  };

  return (
    <article
      className="answer"
      data-testid="answer"
      data-trace-id={answer.traceId}
      data-stop-reason={answer.stopReason}
    >
      {answer.stopReason !== "ok" && <StopReasonBadge reason={answer.stopReason} />}
      {answer.notice && (
        <p className="answer-notice" role="status" data-testid="answer-notice">
          {answer.notice}
        </p>
      )}
      <div className="answer-text" data-testid="answer-text">
        <AnswerText text={answer.text} sources={answer.sources} activeNumber={activeNumber} onCite={onCite} />
      </div>
      {answer.sources.length > 0 && (
        <ul className="source-chips" aria-label={t("chat.sources")}>
          {answer.sources.map((s) => (
            <li key={s.number}>
              <button
                type="button"
                className={`chip source-chip${activeNumber === s.number ? " active" : ""}`}
                data-testid="source-chip"
                data-number={s.number}
                onClick={() => onCite(s)}
                title={s.uri || s.title}
              >
                <span className="chip-number">{s.number}</span>
                <span className="chip-title">{s.title}</span>
                {s.page != null && <span className="chip-page">{t("source.pageShort", { page: s.page })}</span>}
                <OriginBadge base={s.base} />
              </button>
            </li>
          ))}
        </ul>
      )}
      <div className="answer-actions">
        <button type="button" className="icon-button" onClick={copy} title={t("chat.copy")} aria-label={t("chat.copy")}>
          {copied ? <CheckIcon /> : <CopyIcon />}
        </button>
        <Feedback answer={answer} onAskNote={setNoting} />
        <button type="button" className="link-button" data-testid="trace-button" onClick={() => onTrace(answer.traceId)}>
          <RouteIcon />
          {t("trace.open")}
        </button>
        <span className="answer-meta">
          {[
            answer.writtenBy === "extractive" ? t("chat.extractive") : answer.model,
            answer.totalMs > 0 ? formatMs(answer.totalMs) : null,
          ]
            .filter(Boolean)
            .join(" · ")}
        </span>
      </div>
      {noting && <FeedbackNote traceId={answer.traceId} onClose={() => setNoting(false)} />}
    </article>
  );
}

/** Helpful / not helpful. "Not helpful" counts at once and then offers an optional note. */
function Feedback({ answer, onAskNote }: { answer: Answer; onAskNote: (open: boolean) => void }) {
  const { t } = useTranslation();
  const send = useSendFeedback(answer.traceId);
  const { notify } = useToast();
  const [busy, setBusy] = useState(false);
  const vote = async (helpful: boolean) => {
    setBusy(true);
    const ok = await send(helpful, "");
    setBusy(false);
    if (!ok) return;
    if (helpful) {
      onAskNote(false);
      notify("success", t("feedback.thanks"));
    } else {
      onAskNote(true);
    }
  };
  return (
    <>
      <button
        type="button"
        className={`icon-button${answer.helpful === true ? " pressed" : ""}`}
        data-testid="feedback-up"
        aria-pressed={answer.helpful === true}
        title={t("feedback.helpful")}
        aria-label={t("feedback.helpful")}
        disabled={busy}
        onClick={() => void vote(true)}
      >
        <ThumbUpIcon />
      </button>
      <button
        type="button"
        className={`icon-button${answer.helpful === false ? " pressed" : ""}`}
        data-testid="feedback-down"
        aria-pressed={answer.helpful === false}
        title={t("feedback.notHelpful")}
        aria-label={t("feedback.notHelpful")}
        disabled={busy}
        onClick={() => void vote(false)}
      >
        <ThumbDownIcon />
      </button>
    </>
  );
}

function useSendFeedback(traceId: string) {
  const { setHelpful } = useChatActions();
  const { showError } = useToast();
  const { base } = useApp();
  return async (helpful: boolean, note: string) => {
    try {
      await api.sendFeedback(traceId, helpful, note, base);
      setHelpful(traceId, helpful);
      return true;
    } catch (e) {
      showError(e);
      return false;
    }
  };
}

/** The optional "what was wrong" note after a "not helpful". */
function FeedbackNote({ traceId, onClose }: { traceId: string; onClose: () => void }) {
  const { t } = useTranslation();
  const send = useSendFeedback(traceId);
  const { notify } = useToast();
  const [note, setNote] = useState("");
  const [busy, setBusy] = useState(false);
  const id = `note-${traceId}`;
  return (
    <form
      className="feedback-note"
      data-testid="feedback-note"
      onSubmit={async (e) => {
        e.preventDefault();
        if (note.trim()) {
          setBusy(true);
          const ok = await send(false, note.trim());
          setBusy(false);
          if (!ok) return;
        }
        onClose();
        notify("success", t("feedback.thanks"));
      }}
      onKeyDown={(e) => {
        if (e.key === "Escape") {
          e.preventDefault();
          e.stopPropagation();
          onClose();
        }
      }}
    >
      <label className="field-label" htmlFor={id}>
        {t("feedback.noteLabel")}
      </label>
      <textarea
        id={id}
        className="input"
        data-testid="feedback-note-input"
        rows={2}
        maxLength={4000}
        value={note}
        autoFocus
        placeholder={t("feedback.notePlaceholder")}
        onChange={(e) => setNote(e.target.value)}
      />
      <div className="feedback-note-actions">
        <button type="button" className="button small" onClick={onClose}>
          {t("feedback.skip")}
        </button>
        <button type="submit" className="button small primary" data-testid="feedback-submit" disabled={busy}>
          {t("feedback.send")}
        </button>
      </div>
    </form>
  );
}
