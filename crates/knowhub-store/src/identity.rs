//! Identity and permissions of one account: users and their roles, group memberships, API-key
//! hashes, and folder/document ACLs.
//!
//! The policy itself lives in `knowhub-authz`; this module only persists its inputs. Stored
//! values are parsed back through the policy types, and a value that no longer parses is
//! reported as [`StoreError::Corrupt`] naming its row.
//!
//! Every ACL change bumps the single-row `acl_version` counter in the same transaction (by
//! triggers on `acl_entries`, so even a cascade from a deleted source counts); a write that
//! changes nothing (setting the same scopes again, clearing an ACL that is not set) leaves it
//! alone. That counter, not [`AclTree::version`] of a rebuilt tree, is the version to feed
//! permission snapshots.

use knowhub_authz::{
    AclPath, AclTree, AuthzError, KeyHash, Memberships, OrgId, ProjectId, Role, ScopeSet, TeamId,
    UserId,
};
use rusqlite::{OptionalExtension, Row, params};

use crate::{Result, SourceId, Store, StoreError, now_ms};

/// A stored user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRecord {
    pub id: UserId,
    pub display_name: String,
    pub role: Role,
    /// Time since the Unix epoch, in milliseconds.
    pub created_at: i64,
    /// When the user was removed (milliseconds since the Unix epoch); `None` while active.
    pub removed_at: Option<i64>,
}

/// A group a user can belong to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    Team(TeamId),
    Project(ProjectId),
    Org(OrgId),
}

impl Group {
    /// How the group's kind is stored: `team`, `project` or `org`.
    pub fn kind(&self) -> &'static str {
        match self {
            Group::Team(_) => "team",
            Group::Project(_) => "project",
            Group::Org(_) => "org",
        }
    }

    /// The group's id as stored.
    pub fn id(&self) -> &str {
        match self {
            Group::Team(id) => id.as_str(),
            Group::Project(id) => id.as_str(),
            Group::Org(id) => id.as_str(),
        }
    }
}

const FOLDER: &str = "folder";
const DOCUMENT: &str = "document";

fn corrupt(row: impl std::fmt::Display, e: AuthzError) -> StoreError {
    StoreError::Corrupt(format!("{row}: {e}"))
}

fn parse_user_id(table: &str, raw: &str) -> Result<UserId> {
    UserId::new(raw).map_err(|e| corrupt(format!("{table} row of user {raw:?}"), e))
}

fn parse_role(user: &str, raw: &str) -> Result<Role> {
    raw.parse()
        .map_err(|e| corrupt(format!("users row {user:?} (role)"), e))
}

fn user_from_row(r: &Row<'_>) -> rusqlite::Result<(String, String, String, i64, Option<i64>)> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
}

fn user_record(raw: (String, String, String, i64, Option<i64>)) -> Result<UserRecord> {
    let (id, display_name, role, created_at, removed_at) = raw;
    Ok(UserRecord {
        role: parse_role(&id, &role)?,
        id: parse_user_id("users", &id)?,
        display_name,
        created_at,
        removed_at,
    })
}

/// Normalises a document's ACL path; the root is a folder, never a document. Shared by every
/// backend.
pub fn document_acl_path(path: &str) -> Result<AclPath> {
    let parsed = AclPath::parse(path).map_err(StoreError::Invalid)?;
    if parsed.is_root() {
        return Err(StoreError::Invalid(AuthzError::InvalidPath {
            path: path.to_owned(),
            reason: "a document path must name a file, not the root",
        }));
    }
    Ok(parsed)
}

/// A user's memberships from stored `(kind, group id)` rows (group spaces not included).
/// Shared by every backend, so stored values are read back through the policy types one way.
pub fn memberships_from_rows(
    user: &UserId,
    rows: impl IntoIterator<Item = (String, String)>,
) -> Result<Memberships> {
    let mut out = Memberships::default();
    for (kind, group) in rows {
        let row = format!("memberships row ({user}, {kind}, {group:?})");
        match kind.as_str() {
            "team" => out
                .teams
                .push(TeamId::new(&group).map_err(|e| corrupt(&row, e))?),
            "project" => out
                .projects
                .push(ProjectId::new(&group).map_err(|e| corrupt(&row, e))?),
            "org" => out
                .orgs
                .push(OrgId::new(&group).map_err(|e| corrupt(&row, e))?),
            _ => return Err(StoreError::Corrupt(format!("{row}: unknown kind"))),
        }
    }
    Ok(out)
}

/// The ACL tree of `source` from its stored `(kind, path, scopes)` rows, falling back to
/// `default`. Shared by every backend: a stored entry becomes policy in one place only.
pub fn acl_tree_from_rows(
    source: SourceId,
    default: ScopeSet,
    rows: impl IntoIterator<Item = (String, String, String)>,
) -> Result<AclTree> {
    let mut tree = AclTree::new(default);
    for (kind, path, scopes) in rows {
        let row = format!("acl_entries row ({}, {kind}, {path:?})", source.0);
        let scopes: ScopeSet = scopes.parse().map_err(|e| corrupt(&row, e))?;
        let stored = match kind.as_str() {
            FOLDER => tree.set_folder_acl(&path, scopes),
            DOCUMENT => tree.set_document_acl(&path, scopes),
            _ => return Err(StoreError::Corrupt(format!("{row}: unknown kind"))),
        }
        .map_err(|e| corrupt(&row, e))?;
        if stored.as_str() != path {
            return Err(StoreError::Corrupt(format!(
                "{row}: path is not normalised"
            )));
        }
    }
    Ok(tree)
}

const USER_SELECT: &str = "SELECT id, display_name, role, created_at, removed_at FROM users";

impl Store {
    // ----- users ---------------------------------------------------------------------------

    /// Adds a user; returns `false` (and changes nothing) when the id is already taken, by an
    /// active or a removed user (ids are never reused).
    pub fn add_user(&mut self, id: &UserId, display_name: &str, role: Role) -> Result<bool> {
        let n = self.conn.execute(
            "INSERT INTO users (id, display_name, role, created_at, removed_at)
             VALUES (?1, ?2, ?3, ?4, NULL) ON CONFLICT (id) DO NOTHING",
            params![id.as_str(), display_name, role.as_str(), now_ms()],
        )?;
        Ok(n == 1)
    }

    /// A user by id, removed ones included (see [`UserRecord::removed_at`]).
    pub fn user(&self, id: &UserId) -> Result<Option<UserRecord>> {
        self.conn
            .query_row(
                &format!("{USER_SELECT} WHERE id = ?1"),
                params![id.as_str()],
                user_from_row,
            )
            .optional()?
            .map(user_record)
            .transpose()
    }

    /// All active (not removed) users, by id.
    pub fn users(&self) -> Result<Vec<UserRecord>> {
        let mut stmt = self.conn.prepare(&format!(
            "{USER_SELECT} WHERE removed_at IS NULL ORDER BY id"
        ))?;
        let rows = stmt
            .query_map([], user_from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        rows.into_iter().map(user_record).collect()
    }

    /// Changes an active user's role; returns `false` when there is no such active user.
    pub fn set_role(&mut self, id: &UserId, role: Role) -> Result<bool> {
        let n = self.conn.execute(
            "UPDATE users SET role = ?2 WHERE id = ?1 AND removed_at IS NULL",
            params![id.as_str(), role.as_str()],
        )?;
        Ok(n == 1)
    }

    /// Removes a user: marks the row removed and, in the same transaction, deletes their API
    /// keys (so none of them resolves any more) and their memberships (group spaces included). Returns `false` when
    /// there is no such active user.
    pub fn remove_user(&mut self, id: &UserId) -> Result<bool> {
        let tx = self.conn.transaction()?;
        let n = tx.execute(
            "UPDATE users SET removed_at = ?2 WHERE id = ?1 AND removed_at IS NULL",
            params![id.as_str(), now_ms()],
        )?;
        if n == 1 {
            tx.execute(
                "DELETE FROM api_keys WHERE user_id = ?1",
                params![id.as_str()],
            )?;
            tx.execute(
                "DELETE FROM memberships WHERE user_id = ?1",
                params![id.as_str()],
            )?;
            tx.execute(
                "DELETE FROM group_members WHERE user_id = ?1",
                params![id.as_str()],
            )?;
        }
        tx.commit()?;
        Ok(n == 1)
    }

    // ----- memberships ---------------------------------------------------------------------

    /// Adds an active user to a group; returns whether the membership is new (`false` also
    /// when there is no such active user).
    pub fn add_membership(&mut self, user: &UserId, group: &Group) -> Result<bool> {
        let n = self.conn.execute(
            "INSERT INTO memberships (user_id, kind, group_id)
             SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM users WHERE id = ?1 AND removed_at IS NULL)
             ON CONFLICT (user_id, kind, group_id) DO NOTHING",
            params![user.as_str(), group.kind(), group.id()],
        )?;
        Ok(n == 1)
    }

    /// Removes a user from a group; returns whether they were a member.
    pub fn remove_membership(&mut self, user: &UserId, group: &Group) -> Result<bool> {
        let n = self.conn.execute(
            "DELETE FROM memberships WHERE user_id = ?1 AND kind = ?2 AND group_id = ?3",
            params![user.as_str(), group.kind(), group.id()],
        )?;
        Ok(n == 1)
    }

    /// The groups of a user, each list sorted by group id (empty for an unknown user).
    pub fn memberships(&self, user: &UserId) -> Result<Memberships> {
        let mut stmt = self.conn.prepare(
            "SELECT kind, group_id FROM memberships WHERE user_id = ?1 ORDER BY kind, group_id",
        )?;
        let rows = stmt
            .query_map(params![user.as_str()], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut out = memberships_from_rows(user, rows)?;
        out.groups = self.group_ids_of(user)?;
        Ok(out)
    }

    // ----- API keys ------------------------------------------------------------------------

    /// Stores the hash of a new API key of an active user; returns `false` (storing nothing)
    /// when there is no such active user or the hash is already stored.
    pub fn add_api_key(&mut self, user: &UserId, hash: &KeyHash, label: &str) -> Result<bool> {
        let n = self.conn.execute(
            "INSERT INTO api_keys (hash, user_id, created_at, label)
             SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM users WHERE id = ?2 AND removed_at IS NULL)
             ON CONFLICT (hash) DO NOTHING",
            params![hash.to_string(), user.as_str(), now_ms(), label],
        )?;
        Ok(n == 1)
    }

    /// Replaces all API keys of an active user by `hash` (labelled `rotated`) atomically: the
    /// old keys stop resolving as the new one starts. Returns `false` (changing nothing) when
    /// there is no such active user or the hash belongs to another user.
    pub fn rotate_api_keys(&mut self, user: &UserId, hash: &KeyHash) -> Result<bool> {
        let tx = self.conn.transaction()?;
        let active: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM users WHERE id = ?1 AND removed_at IS NULL)",
            params![user.as_str()],
            |r| r.get(0),
        )?;
        if !active {
            return Ok(false);
        }
        tx.execute(
            "DELETE FROM api_keys WHERE user_id = ?1",
            params![user.as_str()],
        )?;
        let n = tx.execute(
            "INSERT INTO api_keys (hash, user_id, created_at, label) VALUES (?1, ?2, ?3, 'rotated')
             ON CONFLICT (hash) DO NOTHING",
            params![hash.to_string(), user.as_str(), now_ms()],
        )?;
        if n == 0 {
            // Dropping the transaction rolls the deletion back.
            return Ok(false);
        }
        tx.commit()?;
        Ok(true)
    }

    /// Deletes every API key of a user (they can no longer sign in until a new key is made).
    /// Returns how many keys were revoked.
    pub fn revoke_api_keys(&mut self, user: &UserId) -> Result<usize> {
        Ok(self.conn.execute(
            "DELETE FROM api_keys WHERE user_id = ?1",
            params![user.as_str()],
        )?)
    }

    /// How many API keys exist (dev mode = none configured).
    pub fn api_key_count(&self) -> Result<u64> {
        let n: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM api_keys", [], |r| r.get(0))?;
        Ok(n.max(0) as u64)
    }

    /// The active user an API-key hash belongs to, with their current role.
    pub fn user_for_key_hash(&self, hash: &KeyHash) -> Result<Option<(UserId, Role)>> {
        let row: Option<(String, String)> = self
            .conn
            .query_row(
                "SELECT u.id, u.role FROM api_keys k JOIN users u ON u.id = k.user_id
                 WHERE k.hash = ?1 AND u.removed_at IS NULL",
                params![hash.to_string()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        row.map(|(id, role)| Ok((parse_user_id("api_keys", &id)?, parse_role(&id, &role)?)))
            .transpose()
    }

    // ----- ACLs ----------------------------------------------------------------------------

    fn set_acl(
        &mut self,
        source: SourceId,
        kind: &str,
        path: &AclPath,
        scopes: &ScopeSet,
    ) -> Result<bool> {
        let n = self.conn.execute(
            "INSERT INTO acl_entries (source_id, kind, path, scopes) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (source_id, kind, path) DO UPDATE SET scopes = excluded.scopes
             WHERE scopes <> excluded.scopes",
            params![source.0, kind, path.as_str(), scopes.to_string()],
        )?;
        Ok(n == 1)
    }

    fn clear_acl(&mut self, source: SourceId, kind: &str, path: &AclPath) -> Result<bool> {
        let n = self.conn.execute(
            "DELETE FROM acl_entries WHERE source_id = ?1 AND kind = ?2 AND path = ?3",
            params![source.0, kind, path.as_str()],
        )?;
        Ok(n == 1)
    }

    /// Sets the explicit ACL of a folder of `source` (`""` is the source root; the path is
    /// normalised, unsafe paths are [`StoreError::Invalid`]). Returns whether anything changed.
    pub fn set_folder_acl(
        &mut self,
        source: SourceId,
        folder: &str,
        scopes: &ScopeSet,
    ) -> Result<bool> {
        let path = AclPath::parse(folder).map_err(StoreError::Invalid)?;
        self.set_acl(source, FOLDER, &path, scopes)
    }

    /// Removes a folder's explicit ACL; returns whether one was set.
    pub fn clear_folder_acl(&mut self, source: SourceId, folder: &str) -> Result<bool> {
        let path = AclPath::parse(folder).map_err(StoreError::Invalid)?;
        self.clear_acl(source, FOLDER, &path)
    }

    /// Sets a document's ACL override; returns whether anything changed.
    pub fn set_document_acl(
        &mut self,
        source: SourceId,
        document: &str,
        scopes: &ScopeSet,
    ) -> Result<bool> {
        let path = document_acl_path(document)?;
        self.set_acl(source, DOCUMENT, &path, scopes)
    }

    /// Removes a document's ACL override; returns whether one was set.
    pub fn clear_document_acl(&mut self, source: SourceId, document: &str) -> Result<bool> {
        let path = document_acl_path(document)?;
        self.clear_acl(source, DOCUMENT, &path)
    }

    /// The ACL tree of `source`, rebuilt from its stored entries, falling back to `default`.
    ///
    /// The tree's own [`AclTree::version`] only counts the rebuild; use
    /// [`Store::acl_version`] for the stored version.
    pub fn acl_tree(&self, source: SourceId, default: ScopeSet) -> Result<AclTree> {
        let mut stmt = self.conn.prepare(
            "SELECT kind, path, scopes FROM acl_entries WHERE source_id = ?1 ORDER BY kind, path",
        )?;
        let rows = stmt
            .query_map(params![source.0], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        acl_tree_from_rows(source, default, rows)
    }

    /// The ACL version: bumped by every ACL change, never by reads or no-op writes.
    pub fn acl_version(&self) -> Result<u64> {
        let v: i64 =
            self.conn
                .query_row("SELECT version FROM acl_version WHERE id = 1", [], |r| {
                    r.get(0)
                })?;
        u64::try_from(v).map_err(|_| StoreError::Corrupt(format!("acl_version row: {v} < 0")))
    }
}
