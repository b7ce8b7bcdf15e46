import { useCallback, useEffect, useLayoutEffect, useRef, useState, type KeyboardEvent } from "react";
import { useTranslation } from "react-i18next";
import { api, type Source } from "../api";
import { SendIcon, StopIcon } from "../components/icons";
import { useApp } from "../state/app";
import { useChatActions, useChatMeta, useChatState } from "../state/chat";
import { useToast } from "../state/toasts";
import { SourcePanel } from "./SourcePanel";
import { TraceDialog } from "./TraceDialog";
import { TurnView } from "./Turn";

export function ChatPage() {
  const { t } = useTranslation();
  const state = useChatState();
  const { send } = useChatActions();
  const [cited, setCited] = useState<{ turnKey: string; source: Source } | null>(null);
  const [traceId, setTraceId] = useState<string | null>(null);
  const [draft, setDraft] = useState("");
  const scroller = useRef<HTMLDivElement>(null);
  const stick = useRef(true);

  // A different conversation: the panel's source belongs to the old one.
  useEffect(() => {
    setCited(null);
    stick.current = true;
  }, [state.sessionId]);
  useEffect(() => {
    if (cited && !state.turns.some((x) => x.key === cited.turnKey)) setCited(null);
  }, [state.turns, cited]);

  // Follow the answer while it streams, unless the reader scrolled up.
  useLayoutEffect(() => {
    const el = scroller.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [state.turns]);

  const onCite = useCallback((turnKey: string, source: Source) => setCited({ turnKey, source }), []);
  const onTrace = useCallback((id: string) => setTraceId(id), []);
  const closeTrace = useCallback(() => setTraceId(null), []);
  const closePanel = useCallback(() => setCited(null), []);
  const onRetry = useCallback(
    (question: string) => {
      stick.current = true;
      send(question);
    },
    [send],
  );

  const submit = (text: string) => {
    if (!text.trim() || state.asking) return;
    stick.current = true;
    send(text);
    setDraft("");
  };

  const empty = state.turns.length === 0 && !state.loadingConversation;
  return (
    <div className={`chat-page${cited ? " with-panel" : ""}`}>
      <div className="chat-column">
        <div
          className="chat-scroll"
          ref={scroller}
          onScroll={(e) => {
            const el = e.currentTarget;
            stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
          }}
        >
          <div className="chat-content">
            {state.loadingConversation && (
              <div className="loading-block">
                <span className="spinner" aria-hidden="true" />
                {t("common.loading")}
              </div>
            )}
            {empty && <EmptyState onPick={(q) => submit(q)} />}
            {state.turns.map((turn) => (
              <TurnView
                key={turn.key}
                turn={turn}
                activeNumber={cited?.turnKey === turn.key ? cited.source.number : null}
                onCite={onCite}
                onTrace={onTrace}
                onRetry={onRetry}
              />
            ))}
          </div>
        </div>
        <Composer value={draft} onChange={setDraft} onSubmit={submit} />
      </div>
      {cited && <SourcePanel source={cited.source} onClose={closePanel} />}
      {traceId && <TraceDialog traceId={traceId} onClose={closeTrace} />}
    </div>
  );
}

function EmptyState({ onPick }: { onPick: (q: string) => void }) {
  const { t } = useTranslation();
  const examples = t("chat.examples", { returnObjects: true }) as unknown;
  const list = Array.isArray(examples) ? examples.filter((x): x is string => typeof x === "string") : [];
  return (
    <div className="empty-chat">
      <h1>{t("chat.emptyTitle")}</h1>
      <p className="muted">{t("chat.emptyHint")}</p>
      {list.length > 0 && (
        <div className="examples">
          {list.map((q) => (
            <button key={q} type="button" className="example" onClick={() => onPick(q)}>
              {q}
            </button>
          ))}
        </div>
      )}
    </div>
  );
}

interface ComposerProps {
  value: string;
  onChange: (v: string) => void;
  onSubmit: (v: string) => void;
}

/** Enter sends, Shift+Enter breaks the line; while answering the button stops the answer. */
function Composer({ value, onChange, onSubmit }: ComposerProps) {
  const { t } = useTranslation();
  const meta = useChatMeta();
  const { stop, setBrief, setWithTeam } = useChatActions();
  const { base, team } = useApp();
  const area = useRef<HTMLTextAreaElement>(null);
  const asking = meta.asking != null;

  // Focus the input on a new or reopened conversation (not when a first answer names its session).
  const previous = useRef<string | null | undefined>(undefined);
  useEffect(() => {
    // The first answer of a new conversation names its session: not a reason to move focus.
    const firstAnswer = previous.current === null && meta.sessionId !== null && !meta.loadingConversation;
    previous.current = meta.sessionId;
    if (!firstAnswer) area.current?.focus();
  }, [meta.sessionId]); // loadingConversation is read, not tracked

  // Grow with the text up to a limit, then scroll.
  useLayoutEffect(() => {
    const el = area.current;
    if (!el) return;
    el.style.height = "auto";
    el.style.height = `${Math.min(el.scrollHeight, 200)}px`;
  }, [value]);

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    // Never send while an input method (pinyin, …) is composing: Enter picks the candidate.
    if (e.key !== "Enter" || e.shiftKey || e.nativeEvent.isComposing || e.keyCode === 229) return;
    e.preventDefault();
    onSubmit(value);
  };

  return (
    <div className="composer-wrap">
      <form
        className="composer"
        onSubmit={(e) => {
          e.preventDefault();
          onSubmit(value);
        }}
      >
        <textarea
          ref={area}
          className="composer-input"
          data-testid="chat-input"
          rows={1}
          value={value}
          placeholder={t("chat.placeholder")}
          aria-label={t("chat.placeholder")}
          onChange={(e) => onChange(e.target.value)}
          onKeyDown={onKeyDown}
        />
        {asking ? (
          <button
            type="button"
            className="send-button stop"
            data-testid="chat-stop"
            onClick={stop}
            aria-label={t("chat.stop")}
            title={t("chat.stop")}
          >
            <StopIcon />
          </button>
        ) : (
          <button
            type="submit"
            className="send-button"
            data-testid="chat-send"
            disabled={!value.trim()}
            aria-label={t("chat.send")}
            title={t("chat.send")}
          >
            <SendIcon />
          </button>
        )}
      </form>
      <p className="composer-hint">
        <label className="brief-toggle" title={t("chat.briefHint")}>
          <input
            type="checkbox"
            data-testid="chat-brief"
            checked={meta.brief}
            onChange={(e) => setBrief(e.target.checked)}
          />
          {t("chat.brief")}
        </label>
        {base === "local" && team?.joined && (
          <>
            {" · "}
            <label className="brief-toggle" title={t("chat.withTeamHint")}>
              <input
                type="checkbox"
                data-testid="chat-with-team"
                checked={meta.withTeam}
                onChange={(e) => setWithTeam(e.target.checked)}
              />
              {t("chat.withTeam")}
            </label>
          </>
        )}
        {" · "}
        {t("chat.hint")}
        {meta.sessionId && !asking && (
          <>
            {" · "}
            <RememberButton sessionId={meta.sessionId} />
          </>
        )}
      </p>
    </div>
  );
}

/** "Remember what I said": commits this conversation to the user's memories (Settings →
 * Memory lists and forgets them) and says what was kept. */
function RememberButton({ sessionId }: { sessionId: string }) {
  const { t } = useTranslation();
  const { notify, showError } = useToast();
  const { base } = useApp();
  const [busy, setBusy] = useState(false);
  const remember = async () => {
    setBusy(true);
    try {
      const r = await api.rememberConversation(sessionId, base);
      const kept = [...r.created, ...r.confirmed];
      const title =
        kept.length === 0
          ? t("memory.nothingNew")
          : t("memory.remembered", { created: r.created.length, confirmed: r.confirmed.length });
      const body =
        kept.length > 0 ? (
          <ul className="file-list toast-files" data-testid="remember-results">
            {kept.map((m) => (
              <li key={m.uri}>
                <span className="muted">{t(`memory.kinds.${m.kind}`, { defaultValue: m.kind })}:</span> {m.content}
              </li>
            ))}
          </ul>
        ) : undefined;
      notify(kept.length === 0 ? "info" : "success", title, r.modelError ?? undefined, { body });
    } catch (err) {
      showError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <button type="button" className="link-button" data-testid="chat-remember" disabled={busy} onClick={() => void remember()}>
      {busy ? t("memory.remembering") : t("memory.rememberConversation")}
    </button>
  );
}
