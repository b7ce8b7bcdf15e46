import { createContext, useCallback, useContext, useMemo, useRef, useState, type ReactNode } from "react";
import { useTranslation } from "react-i18next";
import { toAppError } from "../api";

export type ToastTone = "error" | "success" | "info" | "warning";

export interface Toast {
  id: number;
  tone: ToastTone;
  title: string;
  message?: string;
  /** Extra content under the message (a list of files, …). */
  body?: ReactNode;
}

export interface ToastOptions {
  body?: ReactNode;
  /** Stays until dismissed (something the reader must see, such as failures). */
  sticky?: boolean;
}

interface ToastApi {
  /** Shows a short notice; errors stay longer. */
  notify: (tone: ToastTone, title: string, message?: string, options?: ToastOptions) => void;
  /** Shows a failed command: the translated headline of its kind plus the engine's message. */
  showError: (e: unknown) => void;
}

const ToastContext = createContext<ToastApi | null>(null);
const ToastListContext = createContext<{ toasts: Toast[]; dismiss: (id: number) => void }>({
  toasts: [],
  dismiss: () => {},
});

export function ToastProvider({ children }: { children: ReactNode }) {
  const { t } = useTranslation();
  const [toasts, setToasts] = useState<Toast[]>([]);
  const nextId = useRef(1);
  const timers = useRef(new Map<number, number>());

  const dismiss = useCallback((id: number) => {
    setToasts((list) => list.filter((x) => x.id !== id));
    const timer = timers.current.get(id);
    if (timer) window.clearTimeout(timer);
    timers.current.delete(id);
  }, []);

  const notify = useCallback(
    (tone: ToastTone, title: string, message?: string, options?: ToastOptions) => {
      const id = nextId.current++;
      setToasts((list) => [...list.slice(-3), { id, tone, title, message, body: options?.body }]);
      if (options?.sticky) return;
      const ms = options?.body ? 12000 : tone === "error" ? 9000 : tone === "warning" ? 7000 : 4000;
      timers.current.set(id, window.setTimeout(() => dismiss(id), ms));
    },
    [dismiss],
  );

  const showError = useCallback(
    (e: unknown) => {
      const err = toAppError(e);
      if (err.kind === "cancelled") return;
      notify("error", t(`errors.${err.kind}`), err.message);
    },
    [notify, t],
  );

  const api = useMemo(() => ({ notify, showError }), [notify, showError]);
  const list = useMemo(() => ({ toasts, dismiss }), [toasts, dismiss]);
  return (
    <ToastContext.Provider value={api}>
      <ToastListContext.Provider value={list}>{children}</ToastListContext.Provider>
    </ToastContext.Provider>
  );
}

export function useToast(): ToastApi {
  const ctx = useContext(ToastContext);
  if (!ctx) throw new Error("useToast outside ToastProvider");
  return ctx;
}

export function useToastList() {
  return useContext(ToastListContext);
}
