import { useTranslation } from "react-i18next";
import type { Base } from "../api";
import { useApp } from "../state/app";

/** Where a citation came from: the team server or this computer. Shown only while a team is
 *  joined, when both are possible. */
export function OriginBadge({ base }: { base: Base }) {
  const { t } = useTranslation();
  const { team } = useApp();
  if (!team?.joined) return null;
  const isTeam = base === "team";
  return (
    <span
      className={`origin-badge ${base}`}
      data-testid="source-origin"
      data-origin={base}
      title={isTeam ? t("team.originTitleTeam", { server: team.server ?? "" }) : t("team.originTitleLocal")}
    >
      {t(isTeam ? "team.originTeam" : "team.originLocal")}
    </span>
  );
}
