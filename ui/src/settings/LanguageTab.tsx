import { useTranslation } from "react-i18next";
import { currentLanguage, setLanguage, type Language } from "../i18n";

export function LanguageTab() {
  const { t } = useTranslation();
  return (
    <section className="card narrow">
      <label className="field">
        <span className="field-label">{t("settings.language.label")}</span>
        <select
          className="input"
          data-testid="lang-select"
          value={currentLanguage()}
          onChange={(e) => setLanguage(e.target.value as Language)}
        >
          <option value="en" lang="en">
            {t("settings.language.en")}
          </option>
          <option value="zh-CN" lang="zh-CN">
            {t("settings.language.zhCN")}
          </option>
        </select>
      </label>
      <p className="hint">{t("settings.language.hint")}</p>
    </section>
  );
}
