import { useCallback, useEffect, useState } from "react";
import { useTranslation } from "react-i18next";
import type { NewKey, UserRow } from "../api";
import { CloseIcon, ConfirmDialog } from "../components/Dialog";
import { CheckIcon, CopyIcon } from "../components/icons";
import { copyText } from "../lib/clipboard";
import { useApp } from "../state/app";
import { useToast } from "../state/toasts";
import { useAdmin } from "./useAdmin";

type Pending = { kind: "remove" | "revoke" | "rotate"; user: UserRow };

export function UsersTab() {
  const { t } = useTranslation();
  const { info } = useApp();
  const admin = useAdmin();
  const { notify, showError } = useToast();
  const [users, setUsers] = useState<UserRow[] | null>(null);
  const [pending, setPending] = useState<Pending | null>(null);
  const [newKey, setNewKey] = useState<NewKey | null>(null);

  const load = useCallback(() => {
    admin.users()
      .then(setUsers)
      .catch((e: unknown) => {
        setUsers([]);
        showError(e);
      });
  }, [admin, showError]);
  useEffect(load, [load]);

  const run = async (what: () => Promise<unknown>, done?: string) => {
    try {
      await what();
      if (done) notify("success", done);
      load();
      return true;
    } catch (e) {
      showError(e);
      return false;
    }
  };

  return (
    <div className="stack">
      {newKey && <NewKeyBox key={newKey.apiKey} value={newKey} onDismiss={() => setNewKey(null)} />}
      <AddUserForm
        onAdded={(k) => {
          setNewKey(k);
          load();
        }}
      />

      <section className="card">
        <h2 className="card-title">{t("users.title")}</h2>
        {users === null ? (
          <div className="loading-block">
            <span className="spinner" aria-hidden="true" />
            {t("common.loading")}
          </div>
        ) : (
          <div className="table-wrap">
            <table className="table users" data-testid="users-table">
              <thead>
                <tr>
                  <th>{t("users.user")}</th>
                  <th>{t("users.role")}</th>
                  <th>{t("users.groups")}</th>
                  <th className="actions-col">{t("users.actions")}</th>
                </tr>
              </thead>
              <tbody>
                {users.map((u) => (
                  <tr key={u.id} data-testid="user-row" data-user={u.id}>
                    <td>
                      <div>{u.displayName}</div>
                      <div className="mono small muted">{u.id}</div>
                    </td>
                    <td>
                      {u.role === "ROOT" ? (
                        <span className="badge">{t("roles.ROOT")}</span>
                      ) : (
                        <select
                          className="input compact"
                          data-testid="user-role"
                          value={u.role}
                          aria-label={t("users.roleFor", { user: u.id })}
                          disabled={u.id === info?.user}
                          onChange={(e) => {
                            const role = e.target.value;
                            void run(() => admin.setRole(u.id, role), t("users.roleChanged", { user: u.id, role: t(`roles.${role}`) }));
                          }}
                        >
                          <option value="USER">{t("roles.USER")}</option>
                          <option value="ADMIN">{t("roles.ADMIN")}</option>
                        </select>
                      )}
                    </td>
                    <td>
                      <Groups user={u} onChange={(group, join) => run(() => admin.setMembership(u.id, group, join))} />
                    </td>
                    <td className="actions-col">
                      <div className="row-actions">
                        <button type="button" className="button small" onClick={() => setPending({ kind: "rotate", user: u })}>
                          {t("users.rotate")}
                        </button>
                        <button type="button" className="button small" onClick={() => setPending({ kind: "revoke", user: u })}>
                          {t("users.revoke")}
                        </button>
                        {u.id !== info?.user && u.role !== "ROOT" && (
                          <button
                            type="button"
                            className="button small danger-outline"
                            data-testid="user-remove"
                            onClick={() => setPending({ kind: "remove", user: u })}
                          >
                            {t("users.remove")}
                          </button>
                        )}
                      </div>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      {pending && (
        <ConfirmDialog
          title={t(`users.confirm.${pending.kind}.title`)}
          message={t(`users.confirm.${pending.kind}.message`, { user: pending.user.displayName, id: pending.user.id })}
          confirmLabel={t(`users.confirm.${pending.kind}.ok`)}
          danger={pending.kind !== "rotate"}
          onClose={() => setPending(null)}
          onConfirm={async () => {
            const { kind, user } = pending;
            if (kind === "remove") {
              if (await run(() => admin.removeUser(user.id), t("users.removed", { user: user.id }))) setPending(null);
            } else if (kind === "revoke") {
              try {
                const n = await admin.revokeKeys(user.id);
                notify("success", t("users.revoked", { count: n, user: user.id }));
                setPending(null);
              } catch (e) {
                showError(e);
              }
            } else {
              try {
                setNewKey(await admin.rotateKey(user.id));
                setPending(null);
              } catch (e) {
                showError(e);
              }
            }
          }}
        />
      )}
    </div>
  );
}

function Groups({ user, onChange }: { user: UserRow; onChange: (group: string, join: boolean) => Promise<boolean> }) {
  const { t } = useTranslation();
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const add = async () => {
    const group = text.trim();
    if (!group) return;
    setBusy(true);
    if (await onChange(group, true)) setText("");
    setBusy(false);
  };
  return (
    <div className="groups">
      {user.groups.map((g) => (
        <span key={g} className="chip mono" data-testid="group-chip" data-group={g}>
          {g}
          <button
            type="button"
            className="chip-remove"
            aria-label={t("users.removeGroup", { group: g })}
            title={t("users.removeGroup", { group: g })}
            onClick={() => void onChange(g, false)}
          >
            ×
          </button>
        </span>
      ))}
      <form
        className="group-add"
        onSubmit={(e) => {
          e.preventDefault();
          void add();
        }}
      >
        <input
          className="input compact mono"
          data-testid="group-add-input"
          value={text}
          disabled={busy}
          spellCheck={false}
          placeholder={t("users.groupPlaceholder")}
          aria-label={t("users.addGroupFor", { user: user.id })}
          onChange={(e) => setText(e.target.value)}
        />
      </form>
    </div>
  );
}

function AddUserForm({ onAdded }: { onAdded: (k: NewKey) => void }) {
  const admin = useAdmin();
  const { t } = useTranslation();
  const { showError, notify } = useToast();
  const [id, setId] = useState("");
  const [name, setName] = useState("");
  const [role, setRole] = useState("USER");
  const [busy, setBusy] = useState(false);
  return (
    <section className="card">
      <h2 className="card-title">{t("users.add")}</h2>
      <form
        className="inline-form"
        onSubmit={async (e) => {
          e.preventDefault();
          if (!id.trim() || busy) return;
          setBusy(true);
          try {
            const key = await admin.addUser(id.trim(), name.trim(), role);
            notify("success", t("users.added", { user: key.user }));
            setId("");
            setName("");
            setRole("USER");
            onAdded(key);
          } catch (err) {
            showError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        <label className="field">
          <span className="field-label">{t("users.id")}</span>
          <input
            className="input mono"
            data-testid="add-user-id"
            value={id}
            spellCheck={false}
            autoComplete="off"
            placeholder={t("users.idPlaceholder")}
            onChange={(e) => setId(e.target.value)}
          />
        </label>
        <label className="field">
          <span className="field-label">{t("users.displayName")}</span>
          <input
            className="input"
            data-testid="add-user-name"
            value={name}
            autoComplete="off"
            placeholder={t("users.displayNamePlaceholder")}
            onChange={(e) => setName(e.target.value)}
          />
        </label>
        <label className="field">
          <span className="field-label">{t("users.role")}</span>
          <select className="input" data-testid="add-user-role" value={role} onChange={(e) => setRole(e.target.value)}>
            <option value="USER">{t("roles.USER")}</option>
            <option value="ADMIN">{t("roles.ADMIN")}</option>
          </select>
        </label>
        <button type="submit" className="button primary" data-testid="add-user-submit" disabled={busy || !id.trim()}>
          {busy ? t("common.saving") : t("users.addButton")}
        </button>
      </form>
    </section>
  );
}

/** A new API key, shown once, in the page (it does not block the rest of the tab). */
function NewKeyBox({ value, onDismiss }: { value: NewKey; onDismiss: () => void }) {
  const { t } = useTranslation();
  const [copied, setCopied] = useState(false);
  return (
    <section className="card new-key-card" data-testid="new-key-box" role="region" aria-label={t("users.newKeyTitle", { user: value.user })}>
      <div className="new-key-header">
        <h2 className="card-title">{t("users.newKeyTitle", { user: value.user })}</h2>
        <button type="button" className="icon-button" onClick={onDismiss} aria-label={t("common.close")} title={t("common.close")}>
          <CloseIcon />
        </button>
      </div>
      <p className="warning-box" role="note">
        {t("users.newKeyWarning")}
      </p>
      <div className="key-box">
        <code className="key" data-testid="new-key">{value.apiKey}</code>
        <button
          type="button"
          className="button small"
          onClick={async () => {
            if (await copyText(value.apiKey)) {
              setCopied(true);
              window.setTimeout(() => setCopied(false), 1500);
            }
          }}
        >
          {copied ? <CheckIcon /> : <CopyIcon />}
          {copied ? t("common.copied") : t("common.copy")}
        </button>
      </div>
    </section>
  );
}
