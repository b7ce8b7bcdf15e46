import { useCallback, useEffect, useState } from "react";
import { useTranslation } from "react-i18next";
import type { DataSourcesView } from "../api";
import { ConfirmDialog } from "../components/Dialog";
import { formatNumber, parseScopes } from "../lib/format";
import { useApp } from "../state/app";
import { useToast } from "../state/toasts";
import { useAdmin } from "./useAdmin";

export function DataSourcesTab() {
  const { t } = useTranslation();
  const { notify, showError } = useToast();
  const admin = useAdmin();
  const onTeam = useApp().base === "team";
  const [view, setView] = useState<DataSourcesView | null>(null);
  const [removing, setRemoving] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [path, setPath] = useState("");
  const [scopes, setScopes] = useState("");
  const [tenant, setTenant] = useState("");
  const [busy, setBusy] = useState(false);

  const load = useCallback(() => {
    admin
      .dataSources()
      .then(setView)
      .catch((e: unknown) => {
        setView({ sources: [], tables: [] });
        showError(e);
      });
  }, [admin, showError]);
  useEffect(load, [load]);

  const valid = name.trim() && path.trim() && parseScopes(scopes).length > 0;
  return (
    <div className="stack">
      <section className="card">
        <h2 className="card-title">{t("data.databases")}</h2>
        {!view ? (
          <div className="loading-block">
            <span className="spinner" aria-hidden="true" />
            {t("common.loading")}
          </div>
        ) : view.sources.length === 0 ? (
          <p className="muted">{t("data.noDatabases")}</p>
        ) : (
          <div className="table-wrap">
            <table className="table" data-testid="data-sources">
              <thead>
                <tr>
                  <th>{t("data.name")}</th>
                  <th>{t("data.scopes")}</th>
                  <th>{t("data.tenant")}</th>
                  <th className="actions-col" />
                </tr>
              </thead>
              <tbody>
                {view.sources.map((s) => (
                  <tr key={s.name} data-testid="data-source-row" data-name={s.name}>
                    <td>
                      <div className="mono">{s.name}</div>
                      <div className="mono small muted path">{s.path}</div>
                    </td>
                    <td>
                      <span className="chips">
                        {s.scopes.map((x) => (
                          <span key={x} className="chip mono">
                            {x}
                          </span>
                        ))}
                      </span>
                    </td>
                    <td className="mono small">{s.tenantColumn ?? "—"}</td>
                    <td className="actions-col">
                      <button type="button" className="button small danger-outline" onClick={() => setRemoving(s.name)}>
                        {t("common.remove")}
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <section className="card">
        <h2 className="card-title">{t("data.add")}</h2>
        <form
          className="form-grid two"
          onSubmit={async (e) => {
            e.preventDefault();
            if (!valid || busy) return;
            setBusy(true);
            try {
              await admin.addDataSource(name.trim(), path.trim(), parseScopes(scopes), tenant.trim() || null);
              notify("success", t("data.added", { name: name.trim() }));
              setName("");
              setPath("");
              setScopes("");
              setTenant("");
              load();
            } catch (err) {
              showError(err);
            } finally {
              setBusy(false);
            }
          }}
        >
          <label className="field">
            <span className="field-label">{t("data.name")}</span>
            <input className="input mono" data-testid="ds-name" value={name} spellCheck={false} placeholder={t("data.namePlaceholder")} onChange={(e) => setName(e.target.value)} />
          </label>
          <label className="field">
            <span className="field-label">{t("data.path")}</span>
            <input className="input mono" data-testid="ds-path" value={path} spellCheck={false} placeholder={t(onTeam ? "data.serverPathPlaceholder" : "data.pathPlaceholder")} onChange={(e) => setPath(e.target.value)} />
          </label>
          <label className="field">
            <span className="field-label">{t("data.scopes")}</span>
            <input className="input mono" data-testid="ds-scopes" value={scopes} spellCheck={false} placeholder={t("acl.scopesPlaceholder")} onChange={(e) => setScopes(e.target.value)} />
          </label>
          <label className="field">
            <span className="field-label">{t("data.tenant")}</span>
            <input className="input mono" data-testid="ds-tenant" value={tenant} spellCheck={false} placeholder={t("models.optional")} onChange={(e) => setTenant(e.target.value)} />
          </label>
          <div className="row-actions span-all">
            <button type="submit" className="button primary" data-testid="ds-add" disabled={!valid || busy}>
              {busy ? t("common.saving") : t("data.addButton")}
            </button>
            <span className="muted small" data-testid="ds-hint" data-base={onTeam ? "team" : "local"}>
              {t(onTeam ? "data.teamHint" : "data.hint")}
            </span>
          </div>
        </form>
      </section>

      <section className="card">
        <h2 className="card-title">{t("data.tables")}</h2>
        {view && view.tables.length === 0 ? (
          <p className="muted">{t("data.noTables")}</p>
        ) : (
          <div className="table-wrap">
            <table className="table">
              <thead>
                <tr>
                  <th>{t("data.table")}</th>
                  <th className="num">{t("data.rows")}</th>
                  <th>{t("data.fromDocument")}</th>
                </tr>
              </thead>
              <tbody>
                {view?.tables.map((x) => (
                  <tr key={x.sqlName}>
                    <td className="mono">{x.sqlName}</td>
                    <td className="num">{formatNumber(x.rows)}</td>
                    <td className="mono small muted path">{x.documentPath}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      {removing && (
        <ConfirmDialog
          title={t("data.removeTitle")}
          message={t("data.removeConfirm", { name: removing })}
          confirmLabel={t("common.remove")}
          danger
          onClose={() => setRemoving(null)}
          onConfirm={async () => {
            try {
              await admin.removeDataSource(removing);
              notify("success", t("data.removed", { name: removing }));
              setRemoving(null);
              load();
            } catch (e) {
              showError(e);
            }
          }}
        />
      )}
    </div>
  );
}
