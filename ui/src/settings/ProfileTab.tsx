import { useTranslation } from "react-i18next";
import { useApp } from "../state/app";

export function ProfileTab() {
  const { t } = useTranslation();
  const { info } = useApp();
  if (!info) return null;
  return (
    <section className="card narrow">
      <dl className="facts">
        <div>
          <dt>{t("profile.user")}</dt>
          <dd>
            {info.displayName} <span className="muted mono small">{info.user}</span>
          </dd>
        </div>
        <div>
          <dt>{t("profile.role")}</dt>
          <dd>{t(`roles.${info.role}`, { defaultValue: info.role })}</dd>
        </div>
        <div className="wide">
          <dt>{t("profile.groups")}</dt>
          <dd>
            {info.groups.length === 0 ? (
              <span className="muted">{t("profile.noGroups")}</span>
            ) : (
              <span className="chips">
                {info.groups.map((g) => (
                  <span key={g} className="chip mono">
                    {g}
                  </span>
                ))}
              </span>
            )}
          </dd>
        </div>
        <div>
          <dt>{t("profile.account")}</dt>
          <dd className="mono">{info.account}</dd>
        </div>
        <div>
          <dt>{t("profile.version")}</dt>
          <dd>{info.version}</dd>
        </div>
        <div className="wide">
          <dt>{t("profile.dataDir")}</dt>
          <dd className="mono small path">{info.dataDir}</dd>
        </div>
      </dl>
    </section>
  );
}
