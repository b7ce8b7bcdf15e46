import {
  createContext,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useReducer,
  useRef,
  useState,
  type ReactNode,
} from "react";
import { api, toAppError, type Answer, type AppError, type ChatEvent, type Conversation } from "../api";
import { newRequestId } from "../lib/uuid";
import { useApp } from "./app";
import { useToast } from "./toasts";

export interface StepState {
  node: string;
  status: string;
  timingMs: number;
}

/** One question and what came back. */
export interface Turn {
  /** The request id while asking; the trace id once answered. */
  key: string;
  question: string;
  phase: "asking" | "done" | "error" | "stopped";
  /** The streamed draft (replaced wholesale on a Replace event). */
  draft: string;
  steps: StepState[];
  answer: Answer | null;
  error: AppError | null;
}

interface State {
  sessionId: string | null;
  turns: Turn[];
  /** The request id of the question in flight. */
  asking: string | null;
  loadingConversation: boolean;
  conversations: Conversation[];
}

type Action =
  | { type: "reset" }
  | { type: "conversations"; list: Conversation[] }
  | { type: "loading"; id: string }
  | { type: "loaded"; id: string; answers: Answer[] }
  | { type: "load-failed" }
  | { type: "ask"; requestId: string; question: string }
  | { type: "draft"; requestId: string; text: string }
  | { type: "step"; requestId: string; step: StepState }
  | { type: "answered"; requestId: string; answer: Answer }
  | { type: "failed"; requestId: string; error: AppError }
  | { type: "helpful"; traceId: string; helpful: boolean }
  | { type: "removed"; id: string };

const initial: State = {
  sessionId: null,
  turns: [],
  asking: null,
  loadingConversation: false,
  conversations: [],
};

function doneTurn(a: Answer): Turn {
  return { key: a.traceId, question: a.question, phase: "done", draft: "", steps: [], answer: a, error: null };
}

function updateTurn(state: State, requestId: string, f: (t: Turn) => Turn): State {
  const i = state.turns.findIndex((t) => t.key === requestId);
  if (i < 0) return state;
  const turns = state.turns.slice();
  turns[i] = f(turns[i]);
  return { ...state, turns };
}

function reducer(state: State, action: Action): State {
  switch (action.type) {
    case "reset":
      return { ...initial, conversations: state.conversations };
    case "conversations":
      return { ...state, conversations: action.list };
    case "loading":
      return { ...state, sessionId: action.id, turns: [], asking: null, loadingConversation: true };
    case "loaded":
      if (state.sessionId !== action.id) return state;
      return { ...state, turns: action.answers.map(doneTurn), loadingConversation: false };
    case "load-failed":
      return { ...state, loadingConversation: false };
    case "ask":
      return {
        ...state,
        asking: action.requestId,
        turns: [
          ...state.turns,
          {
            key: action.requestId,
            question: action.question,
            phase: "asking",
            draft: "",
            steps: [],
            answer: null,
            error: null,
          },
        ],
      };
    case "draft":
      return updateTurn(state, action.requestId, (t) => ({ ...t, draft: action.text }));
    case "step":
      return updateTurn(state, action.requestId, (t) => {
        const steps = t.steps.slice();
        const last = steps[steps.length - 1];
        if (last && last.node === action.step.node && last.status === "start") {
          steps[steps.length - 1] = action.step;
        } else {
          steps.push(action.step);
        }
        return { ...t, steps };
      });
    case "answered": {
      if (!state.turns.some((t) => t.key === action.requestId)) return state;
      const next = updateTurn(state, action.requestId, (t) => ({
        ...t,
        key: action.answer.traceId,
        phase: "done",
        answer: action.answer,
      }));
      return {
        ...next,
        asking: state.asking === action.requestId ? null : state.asking,
        sessionId: state.sessionId ?? action.answer.sessionId,
      };
    }
    case "failed": {
      const next = updateTurn(state, action.requestId, (t) => ({
        ...t,
        phase: action.error.kind === "cancelled" ? "stopped" : "error",
        error: action.error,
      }));
      return { ...next, asking: state.asking === action.requestId ? null : state.asking };
    }
    case "helpful":
      return {
        ...state,
        turns: state.turns.map((t) =>
          t.answer?.traceId === action.traceId ? { ...t, answer: { ...t.answer, helpful: action.helpful } } : t,
        ),
      };
    case "removed":
      return {
        ...state,
        conversations: state.conversations.filter((c) => c.id !== action.id),
        ...(state.sessionId === action.id ? { sessionId: null, turns: [], asking: null } : {}),
      };
  }
}

interface ChatActions {
  send: (question: string) => void;
  /** Brief answers from now on: just the words of the sources that answer, cited. */
  setBrief: (brief: boolean) => void;
  /** Questions on this computer search the joined team's base too, from now on. */
  setWithTeam: (withTeam: boolean) => void;
  stop: () => void;
  newConversation: () => void;
  openConversation: (id: string) => void;
  deleteConversation: (id: string) => Promise<void>;
  refreshConversations: () => void;
  setHelpful: (traceId: string, helpful: boolean) => void;
}

/** What the sidebar and header need: it does not change while an answer streams. */
export interface ChatMeta {
  sessionId: string | null;
  conversations: Conversation[];
  asking: string | null;
  loadingConversation: boolean;
  /** Whether questions ask for brief answers (remembered on this computer). */
  brief: boolean;
  /** Whether questions on this computer also search the joined team (remembered). */
  withTeam: boolean;
}

const BRIEF_KEY = "knowhub.briefAnswers";
const WITH_TEAM_KEY = "knowhub.withTeam";

function saved(key: string): boolean {
  try {
    return localStorage.getItem(key) === "1";
  } catch {
    return false;
  }
}

function remember(key: string, on: boolean) {
  try {
    localStorage.setItem(key, on ? "1" : "0");
  } catch {
    // A private window without storage: the choice lasts until the window closes.
  }
}

// Three contexts so that streamed tokens re-render only the conversation itself, not the
// sidebar, the header or every answer's buttons.
const StateContext = createContext<State | null>(null);
const MetaContext = createContext<ChatMeta | null>(null);
const ActionsContext = createContext<ChatActions | null>(null);

export function ChatProvider({ children }: { children: ReactNode }) {
  const { epoch, info, base, team, refreshTeam } = useApp();
  const baseRef = useRef(base);
  baseRef.current = base;
  const { showError } = useToast();
  const [state, dispatch] = useReducer(reducer, initial);
  const stateRef = useRef(state);
  stateRef.current = state;
  const [brief, setBriefState] = useState(() => saved(BRIEF_KEY));
  const briefRef = useRef(brief);
  briefRef.current = brief;
  const setBrief = useCallback((on: boolean) => {
    setBriefState(on);
    remember(BRIEF_KEY, on);
  }, []);
  const [chosenWithTeam, setWithTeamState] = useState(() => saved(WITH_TEAM_KEY));
  // Only while a team is joined and the questions go to this computer's copilot.
  const withTeam = chosenWithTeam && base === "local" && !!team?.joined;
  const withTeamRef = useRef(withTeam);
  withTeamRef.current = withTeam;
  const setWithTeam = useCallback((on: boolean) => {
    setWithTeamState(on);
    remember(WITH_TEAM_KEY, on);
  }, []);

  // Streamed tokens are buffered and applied once per frame: no re-render per token.
  const drafts = useRef(new Map<string, string>());
  const frame = useRef<number | null>(null);
  const flush = useCallback(() => {
    frame.current = null;
    for (const [requestId, text] of drafts.current) dispatch({ type: "draft", requestId, text });
  }, []);
  const scheduleFlush = useCallback(() => {
    if (frame.current == null) frame.current = requestAnimationFrame(flush);
  }, [flush]);

  // A failure of the team server's connection also updates its banner.
  const failed = useCallback(
    (e: unknown) => {
      const kind = toAppError(e).kind;
      if (baseRef.current === "team" && ["offline", "tls", "unauthenticated"].includes(kind)) refreshTeam();
      showError(e);
    },
    [refreshTeam, showError],
  );

  const refreshConversations = useCallback(() => {
    api
      .conversations(baseRef.current)
      .then((list) => dispatch({ type: "conversations", list }))
      .catch(failed);
  }, [failed]);

  const cancelInFlight = useCallback(() => {
    const asking = stateRef.current.asking;
    if (asking) void api.cancelAsk(asking);
  }, []);

  // A different user or knowledge base: nothing of the previous one stays on screen.
  useEffect(() => {
    if (!info) return;
    cancelInFlight();
    dispatch({ type: "reset" });
    dispatch({ type: "conversations", list: [] });
    refreshConversations();
  }, [epoch, info?.user, base]); // not on every app-info update

  const send = useCallback(
    (raw: string) => {
      const question = raw.trim();
      if (!question || stateRef.current.asking) return;
      const requestId = newRequestId();
      const sessionId = stateRef.current.sessionId;
      dispatch({ type: "ask", requestId, question });
      drafts.current.set(requestId, "");
      const onEvent = (e: ChatEvent) => {
        if (e.type === "token") {
          drafts.current.set(requestId, (drafts.current.get(requestId) ?? "") + e.text);
          scheduleFlush();
        } else if (e.type === "replace") {
          drafts.current.set(requestId, e.text);
          scheduleFlush();
        } else {
          dispatch({ type: "step", requestId, step: { node: e.node, status: e.status, timingMs: e.timingMs } });
        }
      };
      api
        .ask(question, sessionId, requestId, briefRef.current, baseRef.current, withTeamRef.current, onEvent)
        .then((answer) => {
          flush();
          drafts.current.delete(requestId);
          dispatch({ type: "answered", requestId, answer });
          // A new conversation appears; an older one moves to the top.
          refreshConversations();
        })
        .catch((e: unknown) => {
          flush();
          drafts.current.delete(requestId);
          const err = toAppError(e);
          dispatch({ type: "failed", requestId, error: err });
          failed(err);
        });
    },
    [flush, scheduleFlush, refreshConversations, failed],
  );

  const stop = useCallback(() => {
    const asking = stateRef.current.asking;
    if (asking) void api.cancelAsk(asking);
  }, []);

  const newConversation = useCallback(() => {
    cancelInFlight();
    dispatch({ type: "reset" });
  }, [cancelInFlight]);

  const openConversation = useCallback(
    (id: string) => {
      if (stateRef.current.sessionId === id && !stateRef.current.loadingConversation) return;
      cancelInFlight();
      dispatch({ type: "loading", id });
      api
        .conversation(id, baseRef.current)
        .then((answers) => dispatch({ type: "loaded", id, answers }))
        .catch((e: unknown) => {
          dispatch({ type: "load-failed" });
          failed(e);
        });
    },
    [cancelInFlight, failed],
  );

  const deleteConversation = useCallback(
    async (id: string) => {
      if (stateRef.current.sessionId === id) cancelInFlight();
      await api.deleteConversation(id, baseRef.current);
      dispatch({ type: "removed", id });
    },
    [cancelInFlight],
  );

  const setHelpful = useCallback((traceId: string, helpful: boolean) => {
    dispatch({ type: "helpful", traceId, helpful });
  }, []);

  useEffect(
    () => () => {
      if (frame.current != null) cancelAnimationFrame(frame.current);
    },
    [],
  );

  const actions = useMemo<ChatActions>(
    () => ({
      send,
      setBrief,
      setWithTeam,
      stop,
      newConversation,
      openConversation,
      deleteConversation,
      refreshConversations,
      setHelpful,
    }),
    [send, setBrief, setWithTeam, stop, newConversation, openConversation, deleteConversation, refreshConversations, setHelpful],
  );
  const { sessionId, conversations, asking, loadingConversation } = state;
  const meta = useMemo<ChatMeta>(
    () => ({ sessionId, conversations, asking, loadingConversation, brief, withTeam }),
    [sessionId, conversations, asking, loadingConversation, brief, withTeam],
  );
  return (
    <ActionsContext.Provider value={actions}>
      <MetaContext.Provider value={meta}>
        <StateContext.Provider value={state}>{children}</StateContext.Provider>
      </MetaContext.Provider>
    </ActionsContext.Provider>
  );
}

function need<T>(v: T | null, name: string): T {
  if (v === null) throw new Error(`${name} outside ChatProvider`);
  return v;
}

/** The whole conversation, turns included (changes with every streamed frame). */
export function useChatState(): State {
  return need(useContext(StateContext), "useChatState");
}

/** Session, conversation list and whether a question is in flight. */
export function useChatMeta(): ChatMeta {
  return need(useContext(MetaContext), "useChatMeta");
}

/** Stable functions: send, stop, open, delete, … */
export function useChatActions(): ChatActions {
  return need(useContext(ActionsContext), "useChatActions");
}
