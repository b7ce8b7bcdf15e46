import { useState } from "react";
import { useTranslation } from "react-i18next";
import { api, toAppError } from "../api";
import { useApp } from "../state/app";
import { useToast } from "../state/toasts";
import { Dialog } from "./Dialog";

/** Signs in with another user's API key; the whole app then reloads for that user. */
export function SwitchUserDialog({ onClose }: { onClose: () => void }) {
  const { t } = useTranslation();
  const { signedIn } = useApp();
  const { notify } = useToast();
  const [key, setKey] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const submit = async () => {
    if (!key.trim() || busy) return;
    setBusy(true);
    setError(null);
    try {
      const info = await api.signIn(key.trim());
      signedIn(info);
      notify("success", t("auth.signedInAs", { name: info.displayName, user: info.user }));
      onClose();
    } catch (e) {
      const err = toAppError(e);
      setError(`${t(`errors.${err.kind}`)}: ${err.message}`);
      setBusy(false);
    }
  };

  return (
    <Dialog
      title={t("auth.switchUser")}
      onClose={onClose}
      size="sm"
      locked={busy}
      footer={
        <>
          <button type="button" className="button" onClick={onClose} disabled={busy}>
            {t("common.cancel")}
          </button>
          <button
            type="submit"
            form="signin-form"
            className="button primary"
            data-testid="signin-submit"
            disabled={busy || !key.trim()}
          >
            {busy ? t("auth.signingIn") : t("auth.signIn")}
          </button>
        </>
      }
    >
      <form
        id="signin-form"
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <label className="field">
          <span className="field-label">{t("auth.apiKey")}</span>
          <input
            type="password"
            className="input mono"
            data-testid="signin-key"
            value={key}
            autoComplete="off"
            spellCheck={false}
            onChange={(e) => setKey(e.target.value)}
            placeholder={t("auth.apiKeyPlaceholder")}
          />
        </label>
        <p className="hint">{t("auth.apiKeyHint")}</p>
        {error && (
          <p className="form-error" role="alert">
            {error}
          </p>
        )}
      </form>
    </Dialog>
  );
}
