import { useTranslation } from "react-i18next";
import { useToastList } from "../state/toasts";
import { CloseIcon } from "./Dialog";

/** Bottom-right notices; errors are announced assertively. */
export function Toasts() {
  const { t } = useTranslation();
  const { toasts, dismiss } = useToastList();
  return (
    <div className="toasts" aria-live="polite">
      {toasts.map((x) => (
        <div
          key={x.id}
          className={`toast toast-${x.tone}`}
          data-testid="toast"
          data-tone={x.tone}
          role={x.tone === "error" ? "alert" : "status"}
        >
          <div className="toast-text">
            <strong>{x.title}</strong>
            {x.message && <span className="toast-message">{x.message}</span>}
            {x.body}
          </div>
          <button
            type="button"
            className="icon-button"
            onClick={() => dismiss(x.id)}
            aria-label={t("common.dismiss")}
            title={t("common.dismiss")}
          >
            <CloseIcon />
          </button>
        </div>
      ))}
    </div>
  );
}
