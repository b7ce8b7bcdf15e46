import { useMemo } from "react";
import { api } from "../api";
import { useApp } from "../state/app";

/** The administration calls of the knowledge base the window shows (this computer's, or the
 * joined team's on the server). */
export function useAdmin() {
  const { base } = useApp();
  return useMemo(() => api.admin(base), [base]);
}
