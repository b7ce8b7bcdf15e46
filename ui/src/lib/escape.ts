import { useEffect, useRef } from "react";

// Esc closes the top-most open layer only (a dialog over the source panel closes first).
const stack: { current: () => void }[] = [];

function onKey(e: KeyboardEvent) {
  if (e.key !== "Escape" || e.defaultPrevented || !stack.length) return;
  if (e.isComposing) return;
  e.preventDefault();
  stack[stack.length - 1].current();
}

let installed = false;

/** Registers `handler` for Esc while `active`; later registrations take precedence. */
export function useEscape(handler: () => void, active = true): void {
  const ref = useRef(handler);
  ref.current = handler;
  useEffect(() => {
    if (!active) return;
    if (!installed) {
      window.addEventListener("keydown", onKey);
      installed = true;
    }
    stack.push(ref);
    return () => {
      const i = stack.indexOf(ref);
      if (i >= 0) stack.splice(i, 1);
    };
  }, [active]);
}
