import { useCallback, useEffect, useState } from "react";
import { useTranslation } from "react-i18next";
import type { FolderNode, ReadersView } from "../api";
import { baseName, formatNumber, parseScopes } from "../lib/format";
import { useToast } from "../state/toasts";
import { useAdmin } from "./useAdmin";

/** The engine describes "no scopes" in words; treat both forms as nobody. */
function isNobody(effective: string): boolean {
  const s = effective.trim();
  return s === "" || s.startsWith("(none");
}

export function PermissionsTab() {
  const { t } = useTranslation();
  const admin = useAdmin();
  const { showError } = useToast();
  const [tree, setTree] = useState<FolderNode[] | null>(null);
  const [selected, setSelected] = useState<string | null>(null);

  const load = useCallback(() => {
    admin.folderTree()
      .then((nodes) => {
        setTree(nodes);
        setSelected((s) => (s && nodes.some((n) => n.path === s) ? s : (nodes[0]?.path ?? null)));
      })
      .catch((e: unknown) => {
        setTree([]);
        showError(e);
      });
  }, [admin, showError]);

  useEffect(load, [load]);

  const node = tree?.find((n) => n.path === selected) ?? null;
  return (
    <div className="acl-layout">
      <section className="card acl-tree" aria-label={t("acl.folders")}>
        <h2 className="card-title">{t("acl.folders")}</h2>
        {tree === null ? (
          <div className="loading-block">
            <span className="spinner" aria-hidden="true" />
            {t("common.loading")}
          </div>
        ) : tree.length === 0 ? (
          <p className="muted">{t("acl.noFolders")}</p>
        ) : (
          <ul className="tree" role="listbox" aria-label={t("acl.folders")}>
            {tree.map((n) => (
              <li key={n.path} role="presentation">
                <button
                  type="button"
                  role="option"
                  aria-selected={n.path === selected}
                  className={`tree-row${n.path === selected ? " selected" : ""}`}
                  style={{ paddingLeft: 10 + n.depth * 18 }}
                  data-testid="acl-folder"
                  data-path={n.path}
                  onClick={() => setSelected(n.path)}
                  title={n.path}
                >
                  <span className="tree-name">{n.depth === 0 ? n.path : baseName(n.relative)}</span>
                  <span className="tree-count muted small">{formatNumber(n.documents)}</span>
                  <AclSummary node={n} />
                </button>
              </li>
            ))}
          </ul>
        )}
      </section>
      {node && <AclEditor key={node.path} node={node} onSaved={load} />}
    </div>
  );
}

function AclSummary({ node }: { node: FolderNode }) {
  const { t } = useTranslation();
  if (node.explicit != null) {
    return (
      <span className="acl-summary">
        <strong className="mono">{node.explicit}</strong>
        <span className="tag">{t("acl.setHere")}</span>
      </span>
    );
  }
  if (isNobody(node.effective)) {
    return <span className="acl-summary muted">{t("acl.nobody")}</span>;
  }
  return (
    <span className="acl-summary muted">
      <span className="mono">{node.effective}</span>{" "}
      <span className="small">
        {t("acl.inheritedFrom", { from: node.inheritedFrom ? node.inheritedFrom : t("acl.root") })}
      </span>
    </span>
  );
}

function AclEditor({ node, onSaved }: { node: FolderNode; onSaved: () => void }) {
  const admin = useAdmin();
  const { t } = useTranslation();
  const { notify, showError } = useToast();
  const [text, setText] = useState(node.explicit ?? "");
  const [saving, setSaving] = useState(false);
  const [readers, setReaders] = useState<ReadersView | null>(null);

  const loadReaders = useCallback(() => {
    admin.folderReaders(node.path)
      .then(setReaders)
      .catch((e: unknown) => {
        setReaders(null);
        showError(e);
      });
  }, [admin, node.path, showError]);

  useEffect(loadReaders, [loadReaders]);

  const save = async (scopes: string[]) => {
    setSaving(true);
    try {
      await admin.setFolderAcl(node.path, scopes);
      notify("success", scopes.length ? t("acl.saved") : t("acl.cleared"));
      if (!scopes.length) setText("");
      onSaved();
      loadReaders();
    } catch (e) {
      showError(e);
    } finally {
      setSaving(false);
    }
  };

  const changed = text.trim() !== (node.explicit ?? "").trim();
  return (
    <section className="card acl-editor" aria-label={t("acl.editor")}>
      <h2 className="card-title mono path" title={node.path}>
        {node.path}
      </h2>
      <p className="muted small">
        {node.explicit != null
          ? t("acl.explicitNow", { scopes: node.explicit })
          : isNobody(node.effective)
            ? t("acl.nobodyNow")
            : t("acl.inheritedNow", {
                scopes: node.effective,
                from: node.inheritedFrom ? node.inheritedFrom : t("acl.root"),
              })}
      </p>
      <form
        className="acl-form"
        onSubmit={(e) => {
          e.preventDefault();
          void save(parseScopes(text));
        }}
      >
        <label className="field">
          <span className="field-label">{t("acl.scopes")}</span>
          <input
            className="input mono"
            data-testid="acl-scopes-input"
            value={text}
            spellCheck={false}
            placeholder={t("acl.scopesPlaceholder")}
            onChange={(e) => setText(e.target.value)}
          />
          <span className="hint">{t("acl.scopesHint")}</span>
        </label>
        <div className="row-actions">
          <button type="submit" className="button primary" data-testid="acl-save" disabled={saving}>
            {saving ? t("common.saving") : t("common.save")}
          </button>
          {node.explicit != null && (
            <button type="button" className="button" data-testid="acl-clear" disabled={saving} onClick={() => save([])}>
              {t("acl.clear")}
            </button>
          )}
          {changed && <span className="muted small">{t("common.unsaved")}</span>}
        </div>
      </form>

      <h3>{t("acl.whoCanSee")}</h3>
      {readers === null ? (
        <div className="loading-block">
          <span className="spinner" aria-hidden="true" />
          {t("common.loading")}
        </div>
      ) : (
        <>
          <p className="muted small">{t("acl.documentsInFolder", { count: readers.documents })}</p>
          <ul className="readers" data-testid="readers-list">
            {readers.readers.map((r) => (
              <li
                key={r.user}
                className={`reader${r.readable === 0 ? " cannot" : ""}`}
                data-testid="reader-row"
                data-user={r.user}
                data-readable={r.readable}
              >
                <span className="reader-name">
                  {r.displayName}
                  <span className="muted mono small"> {r.user}</span>
                </span>
                <span className="badge small-badge">{t(`roles.${r.role}`, { defaultValue: r.role })}</span>
                <span className={`reader-count${r.readable === 0 ? " muted" : ""}`}>
                  {r.readable === 0
                    ? t("acl.cannotSee")
                    : t("acl.canSee", { readable: formatNumber(r.readable), total: formatNumber(readers.documents) })}
                </span>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
