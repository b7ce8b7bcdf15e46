import {
  createContext,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useRef,
  useState,
  type ReactNode,
} from "react";
import { useTranslation } from "react-i18next";
import { api, onIngestEvent, type AppInfo, type Base, type IngestEvent, type TeamStatus } from "../api";
import { useToast } from "./toasts";

export type Page = "chat" | "sources" | "settings";

export type IngestProgress = Extract<IngestEvent, { type: "progress" }>;

interface AppState {
  info: AppInfo | null;
  /** Why app info could not be read (shown instead of the app). */
  startupError: unknown;
  setInfo: (info: AppInfo) => void;
  /** After a sign-in: new user, so every page reloads. */
  signedIn: (info: AppInfo) => void;
  /** Bumps on every sign-in; pages key their data on it. */
  epoch: number;
  page: Page;
  setPage: (page: Page) => void;
  /** Subscribes to every ingestion event (returns the unsubscribe function). */
  subscribeIngest: (handler: (e: IngestEvent) => void) => () => void;
  retryStartup: () => void;
  /** Where questions, conversations and sources go: this computer or the joined team. */
  base: Base;
  setBase: (base: Base) => void;
  /** The joined team server and whether it answered when last asked (`null`: not read yet). */
  team: TeamStatus | null;
  /** Asks the team server again (after a failure, a join or a leave). */
  refreshTeam: () => void;
}

const BASE_KEY = "knowhub.base";
/** How often a joined team server is asked whether it answers (for the banner). */
const TEAM_POLL_MS = 30_000;

function savedBase(): Base {
  try {
    return localStorage.getItem(BASE_KEY) === "team" ? "team" : "local";
  } catch {
    return "local";
  }
}

const AppContext = createContext<AppState | null>(null);
// Separate so that frequent progress events re-render only what shows them.
const ProgressContext = createContext<IngestProgress | null>(null);

export function AppProvider({ children }: { children: ReactNode }) {
  const { t } = useTranslation();
  const { notify } = useToast();
  const [info, setInfo] = useState<AppInfo | null>(null);
  const [startupError, setStartupError] = useState<unknown>(null);
  const [epoch, setEpoch] = useState(0);
  const [page, setPage] = useState<Page>("chat");
  const [progress, setProgress] = useState<IngestProgress | null>(null);
  const subscribers = useRef(new Set<(e: IngestEvent) => void>());
  const [attempt, setAttempt] = useState(0);
  const [chosenBase, setChosenBase] = useState<Base>(savedBase);
  const [team, setTeam] = useState<TeamStatus | null>(null);
  const [teamAsk, setTeamAsk] = useState(0);

  const setBase = useCallback((b: Base) => {
    setChosenBase(b);
    try {
      localStorage.setItem(BASE_KEY, b);
    } catch {
      // No storage: the choice lasts until the window closes.
    }
  }, []);
  const refreshTeam = useCallback(() => setTeamAsk((n) => n + 1), []);

  useEffect(() => {
    if (!info) return;
    let live = true;
    const ask = () =>
      api
        .teamStatus()
        .then((s) => live && setTeam(s))
        .catch(() => {
          // The command itself failed (outside the app): no team.
        });
    void ask();
    const timer = window.setInterval(() => void ask(), TEAM_POLL_MS);
    return () => {
      live = false;
      window.clearInterval(timer);
    };
  }, [info, teamAsk]);

  // The team is the base only while one is joined.
  const base: Base = chosenBase === "team" && team?.joined ? "team" : "local";

  useEffect(() => {
    let live = true;
    api
      .appInfo()
      .then((i) => {
        if (!live) return;
        setInfo(i);
        setStartupError(null);
      })
      .catch((e: unknown) => live && setStartupError(e));
    return () => {
      live = false;
    };
  }, [attempt]);

  const notifyRef = useRef(notify);
  notifyRef.current = notify;
  const tRef = useRef(t);
  tRef.current = t;

  useEffect(() => {
    let unlisten: (() => void) | null = null;
    let live = true;
    onIngestEvent((e) => {
      if (e.type === "progress") setProgress(e);
      else if (e.type === "idle")
        setProgress((p) => (p ? { ...p, queued: 0, running: 0, current: null, etaSecs: null } : p));
      else if (e.type === "warning") notifyRef.current("warning", tRef.current("ingest.warning"), e.message);
      for (const s of subscribers.current) s(e);
    })
      .then((u) => {
        if (live) unlisten = u;
        else u();
      })
      .catch(() => {
        // Outside the app window (no event bridge): no live ingestion status.
      });
    return () => {
      live = false;
      unlisten?.();
    };
  }, []);

  const subscribeIngest = useCallback((handler: (e: IngestEvent) => void) => {
    subscribers.current.add(handler);
    return () => {
      subscribers.current.delete(handler);
    };
  }, []);

  const signedIn = useCallback((i: AppInfo) => {
    setInfo(i);
    setEpoch((n) => n + 1);
  }, []);

  const retryStartup = useCallback(() => setAttempt((n) => n + 1), []);

  const value = useMemo<AppState>(
    () => ({
      info,
      startupError,
      setInfo,
      signedIn,
      epoch,
      page,
      setPage,
      subscribeIngest,
      retryStartup,
      base,
      setBase,
      team,
      refreshTeam,
    }),
    [info, startupError, signedIn, epoch, page, subscribeIngest, retryStartup, base, setBase, team, refreshTeam],
  );
  return (
    <AppContext.Provider value={value}>
      <ProgressContext.Provider value={progress}>{children}</ProgressContext.Provider>
    </AppContext.Provider>
  );
}

export function useApp(): AppState {
  const ctx = useContext(AppContext);
  if (!ctx) throw new Error("useApp outside AppProvider");
  return ctx;
}

/** The latest ingestion progress, `null` until the first event. */
export function useIngestProgress(): IngestProgress | null {
  return useContext(ProgressContext);
}

/** Calls `handler` for every ingestion event while the component is mounted. */
export function useIngestEvents(handler: (e: IngestEvent) => void): void {
  const { subscribeIngest } = useApp();
  const ref = useRef(handler);
  ref.current = handler;
  useEffect(() => subscribeIngest((e) => ref.current(e)), [subscribeIngest]);
}
