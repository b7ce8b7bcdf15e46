//! Users, roles, group memberships, API-key hashes and folder/document ACLs in the team
//! database, with the same rules and records as the SQLite store's identity domain.
//!
//! The policy lives in `knowhub-authz`; this module only persists its inputs, and parses stored
//! values back through the policy types (a value that no longer parses is `Corrupt`).
//!
//! Replicas cache nothing here: every request reads what it needs, and `permission_version`
//! (bumped by triggers in the writing transaction, on any change to users' roles or removal,
//! memberships, group-space members, keys or ACLs) lets a replica validate a cached permission
//! snapshot in the same round trip as its first read.

use knowhub_authz::{
    AclPath, AclTree, AuthzError, GroupId, KeyHash, Memberships, Role, ScopeSet, UserId,
};
use knowhub_store::{
    Group, SourceId, StoreError, UserRecord, acl_tree_from_rows, document_acl_path,
    memberships_from_rows,
};
use postgres::Row;

use crate::{Database, PgError, Result, now_ms};

const FOLDER: &str = "folder";
const DOCUMENT: &str = "document";
const USER_SELECT: &str = "SELECT id, display_name, role, created_at, removed_at FROM users";

/// The identity domain of a team database.
#[derive(Debug, Clone)]
pub struct PgIdentity {
    db: Database,
}

fn corrupt(row: impl std::fmt::Display, e: AuthzError) -> PgError {
    PgError::Corrupt(format!("{row}: {e}"))
}

/// The shared readers report bad input and corrupt rows as the store's errors.
fn store_error(e: StoreError) -> PgError {
    match e {
        StoreError::Invalid(e) => invalid(e),
        StoreError::Corrupt(message) => PgError::Corrupt(message),
        other => PgError::Corrupt(other.to_string()),
    }
}

fn invalid(e: AuthzError) -> PgError {
    PgError::Invalid(e.to_string())
}

fn user_id(table: &str, raw: &str) -> Result<UserId> {
    UserId::new(raw).map_err(|e| corrupt(format!("{table} row of user {raw:?}"), e))
}

fn role(user: &str, raw: &str) -> Result<Role> {
    raw.parse()
        .map_err(|e| corrupt(format!("users row {user:?} (role)"), e))
}

fn user_record(r: &Row) -> Result<UserRecord> {
    let id: String = r.get(0);
    Ok(UserRecord {
        role: role(&id, r.get(2))?,
        id: user_id("users", &id)?,
        display_name: r.get(1),
        created_at: r.get(3),
        removed_at: r.get(4),
    })
}

impl PgIdentity {
    pub fn new(db: &Database) -> PgIdentity {
        PgIdentity { db: db.clone() }
    }

    /// Adds a user; `false` (changing nothing) when the id is taken, by an active or a removed
    /// user (ids are never reused).
    pub fn add_user(&self, id: &UserId, display_name: &str, role: Role) -> Result<bool> {
        let mut client = self.db.client()?;
        let n = client.execute(
            "INSERT INTO users (id, display_name, role, created_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (id) DO NOTHING",
            &[&id.as_str(), &display_name, &role.as_str(), &now_ms()],
        )?;
        Ok(n == 1)
    }

    /// A user by id, removed ones included.
    pub fn user(&self, id: &UserId) -> Result<Option<UserRecord>> {
        let mut client = self.db.client()?;
        let row = client.query_opt(&format!("{USER_SELECT} WHERE id = $1"), &[&id.as_str()])?;
        row.as_ref().map(user_record).transpose()
    }

    /// All active users, by id.
    pub fn users(&self) -> Result<Vec<UserRecord>> {
        let mut client = self.db.client()?;
        let rows = client.query(
            &format!("{USER_SELECT} WHERE removed_at IS NULL ORDER BY id"),
            &[],
        )?;
        rows.iter().map(user_record).collect()
    }

    /// Changes an active user's role; `false` when there is no such active user.
    pub fn set_role(&self, id: &UserId, role: Role) -> Result<bool> {
        let mut client = self.db.client()?;
        let n = client.execute(
            "UPDATE users SET role = $2 WHERE id = $1 AND removed_at IS NULL AND role <> $2",
            &[&id.as_str(), &role.as_str()],
        )?;
        if n == 1 {
            return Ok(true);
        }
        // The same role again is not a change, but the user exists.
        Ok(self.user(id)?.is_some_and(|u| u.removed_at.is_none()))
    }

    /// Removes a user: marks the row removed and, in the same transaction, deletes their keys
    /// and memberships (group spaces included). `false` when there is no such active user.
    pub fn remove_user(&self, id: &UserId) -> Result<bool> {
        let mut client = self.db.client()?;
        let mut tx = client.transaction()?;
        let n = tx.execute(
            "UPDATE users SET removed_at = $2 WHERE id = $1 AND removed_at IS NULL",
            &[&id.as_str(), &now_ms()],
        )?;
        if n == 1 {
            tx.execute("DELETE FROM api_keys WHERE user_id = $1", &[&id.as_str()])?;
            tx.execute(
                "DELETE FROM memberships WHERE user_id = $1",
                &[&id.as_str()],
            )?;
            tx.execute(
                "DELETE FROM group_members WHERE user_id = $1",
                &[&id.as_str()],
            )?;
        }
        tx.commit()?;
        Ok(n == 1)
    }

    /// Adds an active user to a group; whether the membership is new.
    pub fn add_membership(&self, user: &UserId, group: &Group) -> Result<bool> {
        let mut client = self.db.client()?;
        let n = client.execute(
            "INSERT INTO memberships (user_id, kind, group_id)
             SELECT $1, $2, $3 WHERE EXISTS
                 (SELECT 1 FROM users WHERE id = $1 AND removed_at IS NULL)
             ON CONFLICT (user_id, kind, group_id) DO NOTHING",
            &[&user.as_str(), &group.kind(), &group.id()],
        )?;
        Ok(n == 1)
    }

    /// Removes a user from a group; whether they were a member.
    pub fn remove_membership(&self, user: &UserId, group: &Group) -> Result<bool> {
        let mut client = self.db.client()?;
        let n = client.execute(
            "DELETE FROM memberships WHERE user_id = $1 AND kind = $2 AND group_id = $3",
            &[&user.as_str(), &group.kind(), &group.id()],
        )?;
        Ok(n == 1)
    }

    /// The groups of a user, group spaces included, each list sorted by id in byte order as
    /// SQLite sorts (empty for an unknown user).
    pub fn memberships(&self, user: &UserId) -> Result<Memberships> {
        let mut client = self.db.client()?;
        // One statement, so both kinds of membership come from one snapshot.
        let rows = client.query(
            "SELECT kind, group_id FROM (
                 SELECT kind, group_id FROM memberships WHERE user_id = $1
                 UNION ALL
                 SELECT 'group', group_id FROM group_members WHERE user_id = $1) m
             ORDER BY kind, group_id COLLATE \"C\"",
            &[&user.as_str()],
        )?;
        let (spaces, others): (Vec<_>, Vec<_>) = rows
            .iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
            .partition(|(kind, _)| kind == "group");
        let mut out = memberships_from_rows(user, others).map_err(store_error)?;
        out.groups = spaces
            .into_iter()
            .map(|(_, g)| {
                GroupId::new(&g).map_err(|e| corrupt(format!("group_members row ({g}, {user})"), e))
            })
            .collect::<Result<_>>()?;
        Ok(out)
    }

    /// Stores the hash of a new key of an active user; `false` (storing nothing) when there is
    /// no such active user or the hash is already stored.
    pub fn add_api_key(&self, user: &UserId, hash: &KeyHash, label: &str) -> Result<bool> {
        let mut client = self.db.client()?;
        let n = client.execute(
            "INSERT INTO api_keys (hash, user_id, created_at, label)
             SELECT $1, $2, $3, $4 WHERE EXISTS
                 (SELECT 1 FROM users WHERE id = $2 AND removed_at IS NULL)
             ON CONFLICT (hash) DO NOTHING",
            &[&hash.to_string(), &user.as_str(), &now_ms(), &label],
        )?;
        Ok(n == 1)
    }

    /// Replaces all keys of an active user by `hash` atomically. `false` (changing nothing)
    /// when there is no such active user or the hash belongs to someone else.
    pub fn rotate_api_keys(&self, user: &UserId, hash: &KeyHash) -> Result<bool> {
        let mut client = self.db.client()?;
        let mut tx = client.transaction()?;
        // Locks the user's row: a concurrent removal waits for the rotation, or wins.
        let active = tx
            .query_opt(
                "SELECT 1 FROM users WHERE id = $1 AND removed_at IS NULL FOR UPDATE",
                &[&user.as_str()],
            )?
            .is_some();
        if !active {
            return Ok(false);
        }
        tx.execute("DELETE FROM api_keys WHERE user_id = $1", &[&user.as_str()])?;
        let n = tx.execute(
            "INSERT INTO api_keys (hash, user_id, created_at, label) VALUES ($1, $2, $3, 'rotated')
             ON CONFLICT (hash) DO NOTHING",
            &[&hash.to_string(), &user.as_str(), &now_ms()],
        )?;
        if n == 0 {
            // Dropping the transaction rolls the deletion back.
            return Ok(false);
        }
        tx.commit()?;
        Ok(true)
    }

    /// Deletes every key of a user; how many were revoked.
    pub fn revoke_api_keys(&self, user: &UserId) -> Result<u64> {
        let mut client = self.db.client()?;
        Ok(client.execute("DELETE FROM api_keys WHERE user_id = $1", &[&user.as_str()])?)
    }

    /// How many API keys exist (dev mode = none configured).
    pub fn api_key_count(&self) -> Result<u64> {
        let mut client = self.db.client()?;
        let n: i64 = client
            .query_one("SELECT count(*) FROM api_keys", &[])?
            .get(0);
        Ok(n.max(0) as u64)
    }

    /// The active user a key hash belongs to, with their current role.
    pub fn user_for_key_hash(&self, hash: &KeyHash) -> Result<Option<(UserId, Role)>> {
        let mut client = self.db.client()?;
        let row = client.query_opt(
            "SELECT u.id, u.role FROM api_keys k JOIN users u ON u.id = k.user_id
             WHERE k.hash = $1 AND u.removed_at IS NULL",
            &[&hash.to_string()],
        )?;
        row.map(|r| {
            let id: String = r.get(0);
            Ok((user_id("api_keys", &id)?, role(&id, r.get(1))?))
        })
        .transpose()
    }

    fn set_acl(
        &self,
        source: SourceId,
        kind: &str,
        path: &AclPath,
        scopes: &ScopeSet,
    ) -> Result<bool> {
        let mut client = self.db.client()?;
        let n = client.execute(
            "INSERT INTO acl_entries (source_id, kind, path, scopes) VALUES ($1, $2, $3, $4)
             ON CONFLICT (source_id, kind, path) DO UPDATE SET scopes = excluded.scopes
             WHERE acl_entries.scopes <> excluded.scopes",
            &[&source.0, &kind, &path.as_str(), &scopes.to_string()],
        )?;
        Ok(n == 1)
    }

    fn clear_acl(&self, source: SourceId, kind: &str, path: &AclPath) -> Result<bool> {
        let mut client = self.db.client()?;
        let n = client.execute(
            "DELETE FROM acl_entries WHERE source_id = $1 AND kind = $2 AND path = $3",
            &[&source.0, &kind, &path.as_str()],
        )?;
        Ok(n == 1)
    }

    /// Sets the explicit ACL of a folder (`""` is the source root); whether anything changed.
    pub fn set_folder_acl(
        &self,
        source: SourceId,
        folder: &str,
        scopes: &ScopeSet,
    ) -> Result<bool> {
        let path = AclPath::parse(folder).map_err(invalid)?;
        self.set_acl(source, FOLDER, &path, scopes)
    }

    /// Removes a folder's explicit ACL; whether one was set.
    pub fn clear_folder_acl(&self, source: SourceId, folder: &str) -> Result<bool> {
        let path = AclPath::parse(folder).map_err(invalid)?;
        self.clear_acl(source, FOLDER, &path)
    }

    /// Sets a document's ACL override; whether anything changed.
    pub fn set_document_acl(
        &self,
        source: SourceId,
        document: &str,
        scopes: &ScopeSet,
    ) -> Result<bool> {
        let path = document_acl_path(document).map_err(store_error)?;
        self.set_acl(source, DOCUMENT, &path, scopes)
    }

    /// Removes a document's ACL override; whether one was set.
    pub fn clear_document_acl(&self, source: SourceId, document: &str) -> Result<bool> {
        let path = document_acl_path(document).map_err(store_error)?;
        self.clear_acl(source, DOCUMENT, &path)
    }

    /// The ACL tree of `source`, rebuilt from its stored entries, falling back to `default`.
    pub fn acl_tree(&self, source: SourceId, default: ScopeSet) -> Result<AclTree> {
        let mut client = self.db.client()?;
        let rows = client.query(
            "SELECT kind, path, scopes FROM acl_entries WHERE source_id = $1 ORDER BY kind, path",
            &[&source.0],
        )?;
        acl_tree_from_rows(
            source,
            default,
            rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))),
        )
        .map_err(store_error)
    }

    /// The version of everything a permission decision reads: bumped in the writing
    /// transaction by every change to ACLs, memberships, keys, roles or removals, never by
    /// reads or writes that change nothing.
    pub fn permission_version(&self) -> Result<u64> {
        let mut client = self.db.client()?;
        let v: i64 = client
            .query_one("SELECT version FROM permission_version WHERE id = 1", &[])?
            .get(0);
        u64::try_from(v).map_err(|_| PgError::Corrupt(format!("permission_version: {v} < 0")))
    }
}
