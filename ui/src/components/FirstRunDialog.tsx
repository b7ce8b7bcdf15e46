import { useEffect, useState } from "react";
import { useTranslation } from "react-i18next";
import { api } from "../api";
import { TeamTab } from "../settings/TeamTab";
import { useApp } from "../state/app";
import { useToast } from "../state/toasts";
import { Dialog } from "./Dialog";

/** The first start: "use KnowHub on this computer only" or "join a team knowledge base" (the
 *  join form of Settings → Team, where it stays for later). Asked once; closing it counts as
 *  this computer only. */
export function FirstRunDialog() {
  const { t } = useTranslation();
  const { info, team, setInfo } = useApp();
  const { showError } = useToast();
  const [joining, setJoining] = useState(false);
  const [done, setDone] = useState(false);

  const finish = async () => {
    setDone(true);
    try {
      await api.finishFirstRun();
    } catch (e) {
      showError(e);
    }
  };

  // Joining records the choice on its own; the dialog closes once the team answers.
  useEffect(() => {
    if (joining && team?.joined) setDone(true);
  }, [joining, team?.joined]);

  // Once closed, the app's own record says so too.
  useEffect(() => {
    if (done && info?.firstRun) setInfo({ ...info, firstRun: false });
  }, [done, info, setInfo]);

  if (!info?.firstRun || done) return null;
  return (
    <Dialog title={t("welcome.title")} onClose={finish} size={joining ? "lg" : "md"} testId="first-run">
      {joining ? (
        <>
          <TeamTab />
          <button type="button" className="link-button" onClick={() => setJoining(false)}>
            {t("welcome.back")}
          </button>
        </>
      ) : (
        <div className="stack">
          <p className="muted">{t("welcome.intro")}</p>
          <button type="button" className="choice" data-testid="first-run-local" data-autofocus onClick={finish}>
            <strong>{t("welcome.localTitle")}</strong>
            <span className="muted small">{t("welcome.localHint")}</span>
          </button>
          <button type="button" className="choice" data-testid="first-run-team" onClick={() => setJoining(true)}>
            <strong>{t("welcome.teamTitle")}</strong>
            <span className="muted small">{t("welcome.teamHint")}</span>
          </button>
        </div>
      )}
    </Dialog>
  );
}
