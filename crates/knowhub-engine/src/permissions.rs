//! Permissions inside the engine: every call that reads or writes data takes a
//! [`RequestContext`] and goes through [`Engine::authorize`] first.
//!
//! * **Who**: the context names the account, user, agent and role; `authorize` re-reads the
//!   user from the store, so a removed user is refused at once and a changed role applies to
//!   the next call (a context can never carry more power than the store grants now).
//! * **What they may read**: a document's effective read scopes are its ACL (document override,
//!   else the nearest folder with an explicit ACL) plus `user:<owner>` — whoever added a
//!   document can always read it. A USER reads a document iff those scopes intersect their
//!   visible scopes (`user:<me>`, their teams, projects, orgs, `public`); ADMIN reads their
//!   account; ROOT reads everything.
//! * **How it is enforced**: the readable set becomes a [`DocFilter`] pushed *into* the BM25 and
//!   vector scans, and filters every listing, count, preview and status. It is computed from
//!   the store, keyed by the permission snapshot and the store's document-set version, so an
//!   ACL, membership, role or document change is visible to the very next call.
//! * **Not found, never forbidden**: anything a context may not read is reported exactly as if
//!   it did not exist.
//! * **Audit**: reads and writes append an audit record with the permission snapshot id and,
//!   for retrievals, the allowed evidence and the documents the filter withheld.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use knowhub_authz::{
    AccountId, ApiKey, PermissionSnapshot, RequestContext, Role, Scope, ScopeSet, UserId,
    VisibleScopes, can_write,
};
use knowhub_index::DocFilter;
use knowhub_store::{AuditEntry, AuditRecord, DocumentId, Group, SourceId, UserRecord};

use crate::{Engine, EngineError, Result};

/// The account every single-account setup (and dev mode) uses.
pub const DEFAULT_ACCOUNT: &str = "default";
/// The user of dev mode (no keys configured), with role ROOT.
pub const DEFAULT_USER: &str = "default";
/// The principal of the root key.
pub(crate) const ROOT_KEY_USER: &str = "root";

/// How many (snapshot, document-set) readable sets are kept.
const READABLE_CACHE: usize = 32;

/// A request's resolved permissions: computed once per call by [`Engine::authorize`].
#[derive(Debug, Clone)]
pub struct Access {
    /// The context, with the role the store grants now.
    pub ctx: RequestContext,
    pub visible: VisibleScopes,
    pub snapshot: PermissionSnapshot,
    /// Readable documents; `None` = every document of the account.
    readable: Option<Arc<HashSet<u64>>>,
}

impl Access {
    /// Whether the request may read document `id`.
    pub fn can_read(&self, id: DocumentId) -> bool {
        self.readable
            .as_ref()
            .is_none_or(|set| set.contains(&(id.0 as u64)))
    }

    /// The readable documents (`None`: every document of the account).
    pub(crate) fn readable(&self) -> Option<&Arc<HashSet<u64>>> {
        self.readable.as_ref()
    }

    /// Whether the request sees the whole account (ADMIN, ROOT).
    pub fn sees_everything(&self) -> bool {
        self.readable.is_none()
    }

    /// The filter retrieval pushes into both scans (`None`: no restriction).
    pub fn filter(&self) -> Option<DocFilter> {
        self.readable.as_ref().map(|set| {
            let set = Arc::clone(set);
            DocFilter::new(move |id| set.contains(&id))
        })
    }

    /// Like [`Access::filter`], also recording which documents the filter withheld (and how
    /// many of their chunks matched), for the audit record.
    pub(crate) fn recording_filter(&self) -> (Option<DocFilter>, Arc<Mutex<HashMap<u64, u64>>>) {
        let withheld: Arc<Mutex<HashMap<u64, u64>>> = Arc::default();
        let filter = self.readable.as_ref().map(|set| {
            let set = Arc::clone(set);
            let withheld = Arc::clone(&withheld);
            DocFilter::new(move |id| {
                let ok = set.contains(&id);
                if !ok {
                    let mut w = withheld.lock().unwrap_or_else(|p| p.into_inner());
                    *w.entry(id).or_default() += 1;
                }
                ok
            })
        });
        (filter, withheld)
    }

    pub(crate) fn is_admin(&self) -> bool {
        matches!(self.ctx.role, Role::Root | Role::Admin)
    }
}

/// The readable-set cache: (snapshot, document-set version) → documents.
pub(crate) type ReadableCache = Mutex<Vec<(([u8; 32], u64), Arc<HashSet<u64>>)>>;

/// A folder's ACL: what is set on it, and what its documents effectively get.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FolderAcl {
    pub folder: String,
    /// The folder relative to its source root (`""` = the root).
    pub relative: String,
    /// Scopes set on this folder itself (`None`: inherited).
    pub explicit: Option<String>,
    /// Scopes its documents effectively get (the nearest explicit ACL; the owner of each
    /// document and administrators can always read it too).
    pub effective: String,
    /// Where `effective` comes from: this folder, an ancestor (its relative path), or nowhere.
    pub inherited_from: Option<String>,
}

/// Who may read the documents under a folder (see [`Engine::folder_readers`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FolderReaders {
    pub folder: String,
    /// Documents stored under the folder.
    pub documents: u64,
    pub readers: Vec<FolderReader>,
}

/// One user's view of a folder.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FolderReader {
    pub user: String,
    pub display_name: String,
    pub role: String,
    /// How many of the folder's documents they may read (0: the folder is invisible to them).
    pub readable: u64,
}

/// A folder the caller may see (it holds at least one document they may read).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FolderEntry {
    pub path: String,
    /// Readable documents directly or indirectly inside.
    pub documents: u64,
}

impl Engine {
    /// Resolves what `ctx` may do. Fails with [`EngineError::Unauthenticated`] for a removed or
    /// unknown user (ROOT contexts from the root key need no stored user).
    pub fn authorize(&self, ctx: &RequestContext) -> Result<Access> {
        let store = self.store();
        let mut ctx = ctx.clone();
        match store.user(&ctx.user)? {
            Some(u) if u.removed_at.is_some() => {
                return Err(EngineError::Unauthenticated(format!(
                    "user {} has been removed",
                    ctx.user
                )));
            }
            // The store's role is the truth: a demoted admin is a user on the next call.
            // (`Role` orders ROOT < ADMIN < USER: the larger is the less privileged.)
            Some(u) => ctx.role = ctx.role.max(u.role),
            None if ctx.role == Role::Root => {}
            None => {
                return Err(EngineError::Unauthenticated(format!(
                    "no user {} in account {}",
                    ctx.user, self.account
                )));
            }
        }
        let memberships = store.memberships(&ctx.user)?;
        let visible = VisibleScopes::for_context(&ctx, &memberships);
        let snapshot = PermissionSnapshot::new(&visible, store.acl_version()?);
        let same_account = ctx.account == self.account;
        let readable = if ctx.role == Role::Root || (ctx.role == Role::Admin && same_account) {
            None
        } else if !same_account {
            Some(Arc::new(HashSet::new()))
        } else {
            let key = (*snapshot.id(), store.doc_version()?);
            let cached = {
                let cache = self
                    .readable_cache
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                cache
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| Arc::clone(v))
            };
            match cached {
                Some(set) => Some(set),
                None => {
                    let set = Arc::new(readable_documents(&**store, &self.account, &visible)?);
                    let mut cache = self
                        .readable_cache
                        .lock()
                        .unwrap_or_else(|p| p.into_inner());
                    if cache.len() >= READABLE_CACHE {
                        cache.remove(0);
                    }
                    cache.push((key, Arc::clone(&set)));
                    Some(set)
                }
            }
        };
        Ok(Access {
            ctx,
            visible,
            snapshot,
            readable,
        })
    }

    /// Fails with [`EngineError::Forbidden`] unless the caller is an ADMIN of this account or
    /// ROOT.
    pub(crate) fn require_admin(&self, access: &Access, what: &str) -> Result<()> {
        if access.is_admin()
            && (access.ctx.role == Role::Root || access.ctx.account == self.account)
        {
            Ok(())
        } else {
            Err(EngineError::Forbidden(format!(
                "only an administrator can {what}"
            )))
        }
    }

    /// Whether `access` may change or delete something owned by `owner` (owner-only writes;
    /// unowned legacy data: administrators only).
    pub(crate) fn may_write(&self, access: &Access, owner: Option<&str>) -> bool {
        match owner.and_then(|o| UserId::new(o).ok()) {
            Some(owner) => can_write(&access.ctx, &owner, &self.account),
            None => self.require_admin(access, "").is_ok(),
        }
    }

    /// Appends an audit record for `access` (failures to audit are logged, never hidden: the
    /// call fails).
    pub(crate) fn audit(
        &self,
        access: &Access,
        (action, target, outcome): (&str, &str, &str),
        allowed: u64,
        filtered: u64,
        evidence: serde_json::Value,
    ) -> Result<()> {
        let role = access.ctx.role.as_str();
        let snapshot = access.snapshot.to_string();
        let evidence = evidence.to_string();
        self.store().append_audit(&AuditEntry {
            trace_id: &access.ctx.trace_id,
            user: access.ctx.user.as_str(),
            agent: access.ctx.agent.as_ref().map(|a| a.as_str()),
            role,
            action,
            target,
            snapshot: &snapshot,
            outcome,
            allowed,
            filtered,
            evidence: &evidence,
        })?;
        Ok(())
    }

    /// The audit trail, newest first: administrators see the account's, users their own.
    pub fn audit_trail(&self, ctx: &RequestContext, limit: usize) -> Result<Vec<AuditRecord>> {
        let access = self.authorize(ctx)?;
        let only = (!access.is_admin()).then_some(&access.ctx.user);
        Ok(self.store().audit(limit, only)?)
    }

    /// Stored documents `ctx` may read (optionally only under a folder): a user never learns
    /// the names of documents they cannot read.
    pub fn documents(
        &self,
        ctx: &RequestContext,
        under: Option<&Path>,
    ) -> Result<Vec<knowhub_store::DocumentRecord>> {
        let access = self.authorize(ctx)?;
        let docs: Vec<_> = self
            .all_documents(under)?
            .into_iter()
            .filter(|d| access.can_read(d.id))
            .collect();
        self.audit(
            &access,
            (
                "list",
                &under.map(|p| p.display().to_string()).unwrap_or_default(),
                "ok",
            ),
            docs.len() as u64,
            0,
            serde_json::Value::Null,
        )?;
        Ok(docs)
    }

    /// One document by id, or [`EngineError::NotFound`] (also when `ctx` may not read it).
    pub fn document(
        &self,
        ctx: &RequestContext,
        id: DocumentId,
    ) -> Result<knowhub_store::DocumentRecord> {
        let access = self.authorize(ctx)?;
        self.readable_document(&access, id)
    }

    pub(crate) fn readable_document(
        &self,
        access: &Access,
        id: DocumentId,
    ) -> Result<knowhub_store::DocumentRecord> {
        match self.store().document(id)? {
            Some(doc) if access.can_read(doc.id) => Ok(doc),
            _ => Err(not_found_document(&id.0.to_string())),
        }
    }

    /// The folders `ctx` can see: those holding at least one document they may read, with
    /// their ancestors up to the source root. Folders with nothing readable stay invisible.
    pub fn folders(&self, ctx: &RequestContext) -> Result<Vec<FolderEntry>> {
        let access = self.authorize(ctx)?;
        let sources = self.store().sources()?;
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for doc in self.all_documents(None)? {
            if !access.can_read(doc.id) {
                continue;
            }
            let Some(root) = sources
                .iter()
                .find(|s| s.id == doc.source)
                .and_then(|s| s.root_path.as_deref())
            else {
                continue;
            };
            let mut dir = Path::new(&doc.path).parent();
            while let Some(d) = dir {
                *counts.entry(d.display().to_string()).or_default() += 1;
                if d == Path::new(root) {
                    break;
                }
                dir = d.parent();
            }
        }
        Ok(counts
            .into_iter()
            .map(|(path, documents)| FolderEntry { path, documents })
            .collect())
    }

    /// Adds a user (`false`: the id exists, or existed — ids are never reused). Admins only.
    pub fn add_user(
        &self,
        ctx: &RequestContext,
        id: &UserId,
        name: &str,
        role: Role,
    ) -> Result<bool> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "add users")?;
        // The principals of the root key and of dev mode: a stored user with the same id
        // would change what those contexts resolve to.
        if [ROOT_KEY_USER, DEFAULT_USER].contains(&id.as_str()) {
            return Err(EngineError::InvalidInput(format!(
                "{id} is a reserved user id"
            )));
        }
        if role == Role::Root && access.ctx.role != Role::Root {
            return Err(EngineError::Forbidden(
                "only ROOT can create ROOT users".into(),
            ));
        }
        let added = self.store().add_user(id, name, role)?;
        self.audit_write(&access, "user.add", id.as_str(), added)?;
        Ok(added)
    }

    /// Users of the account: administrators see all active users, a user only themself.
    pub fn users(&self, ctx: &RequestContext) -> Result<Vec<UserRecord>> {
        let access = self.authorize(ctx)?;
        let users = self.store().users()?;
        Ok(if access.is_admin() {
            users
        } else {
            users
                .into_iter()
                .filter(|u| u.id == access.ctx.user)
                .collect()
        })
    }

    /// Revokes every API key of a user (the user stays, with their documents; a new key can
    /// be made with [`Engine::rotate_api_key`]). The user themself or administrators.
    pub fn revoke_api_keys(&self, ctx: &RequestContext, id: &UserId) -> Result<usize> {
        let access = self.authorize(ctx)?;
        if access.ctx.user != *id {
            self.require_admin(&access, "revoke other users' keys")?;
        }
        let n = self.store().revoke_api_keys(id)?;
        self.audit_write(&access, "user.revoke_keys", id.as_str(), n > 0)?;
        Ok(n)
    }

    /// The teams, projects and orgs of a user, as scopes (`team:hr`, …): the user themself
    /// or administrators.
    pub fn user_groups(&self, ctx: &RequestContext, id: &UserId) -> Result<Vec<String>> {
        let access = self.authorize(ctx)?;
        if access.ctx.user != *id {
            self.require_admin(&access, "see other users' groups")?;
        }
        let m = self.store().memberships(id)?;
        let mut out: Vec<String> = m.teams.iter().map(|t| format!("team:{t}")).collect();
        out.extend(m.projects.iter().map(|p| format!("project:{p}")));
        out.extend(m.orgs.iter().map(|o| format!("org:{o}")));
        Ok(out)
    }

    /// "Who can see this": for every active user of the account, how many of the documents
    /// under `folder` they may read, decided by the same rule every read path uses.
    /// Administrators only.
    pub fn folder_readers(&self, ctx: &RequestContext, folder: &Path) -> Result<FolderReaders> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "preview who can read a folder")?;
        let docs = self.all_documents(Some(folder))?;
        let mut readers = Vec::new();
        // Bound first: the store lock must not be held while each user is authorized.
        let users = self.store().users()?;
        for user in users {
            if user.removed_at.is_some() {
                continue;
            }
            let as_user = RequestContext {
                account: self.account.clone(),
                user: user.id.clone(),
                agent: None,
                role: user.role,
                session: None,
                trace_id: access.ctx.trace_id.clone(),
            };
            let theirs = self.authorize(&as_user)?;
            let readable = docs.iter().filter(|d| theirs.can_read(d.id)).count() as u64;
            readers.push(FolderReader {
                user: user.id.to_string(),
                display_name: user.display_name.clone(),
                role: user.role.to_string(),
                readable,
            });
        }
        Ok(FolderReaders {
            folder: folder.display().to_string(),
            documents: docs.len() as u64,
            readers,
        })
    }

    /// Removes a user; their API keys and memberships go at once. Admins only.
    pub fn remove_user(&self, ctx: &RequestContext, id: &UserId) -> Result<bool> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "remove users")?;
        let removed = self.store().remove_user(id)?;
        self.audit_write(&access, "user.remove", id.as_str(), removed)?;
        Ok(removed)
    }

    /// Changes a user's role. Admins only; only ROOT grants ROOT.
    pub fn set_role(&self, ctx: &RequestContext, id: &UserId, role: Role) -> Result<bool> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "change roles")?;
        if role == Role::Root && access.ctx.role != Role::Root {
            return Err(EngineError::Forbidden("only ROOT can grant ROOT".into()));
        }
        let changed = self.store().set_role(id, role)?;
        self.audit_write(&access, "user.role", &format!("{id}={role}"), changed)?;
        Ok(changed)
    }

    /// Adds a user to a team, project or org (given as a scope: `team:<id>`, …). Admins only.
    pub fn add_membership(&self, ctx: &RequestContext, id: &UserId, group: &Scope) -> Result<bool> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "change memberships")?;
        let group = group_of(group)?;
        let added = self.store().add_membership(id, &group)?;
        self.audit_write(&access, "user.join", id.as_str(), added)?;
        Ok(added)
    }

    /// Removes a user from a team, project or org. Admins only.
    pub fn remove_membership(
        &self,
        ctx: &RequestContext,
        id: &UserId,
        group: &Scope,
    ) -> Result<bool> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "change memberships")?;
        let group = group_of(group)?;
        let removed = self.store().remove_membership(id, &group)?;
        self.audit_write(&access, "user.leave", id.as_str(), removed)?;
        Ok(removed)
    }

    /// Replaces every API key of `id` with a new one, returned once (only its hash is kept).
    /// Users may rotate their own key; administrators anyone's.
    pub fn rotate_api_key(&self, ctx: &RequestContext, id: &UserId) -> Result<ApiKey> {
        let access = self.authorize(ctx)?;
        if access.ctx.user != *id {
            self.require_admin(&access, "rotate other users' keys")?;
        }
        let key = ApiKey::generate().map_err(|e| EngineError::InvalidInput(e.to_string()))?;
        if !self.store().rotate_api_keys(id, &key.hash())? {
            return Err(EngineError::NotFound(format!("no active user {id}")));
        }
        self.audit_write(&access, "user.rotate_key", id.as_str(), true)?;
        Ok(key)
    }

    /// Sets (or with `None` clears) the read scopes of an ingested folder; applies to the
    /// next query. Administrators, or the user who added the folder.
    pub fn set_folder_acl(
        &self,
        ctx: &RequestContext,
        folder: &Path,
        scopes: Option<&ScopeSet>,
    ) -> Result<FolderAcl> {
        let access = self.authorize(ctx)?;
        let (source, rel) = self.folder_in_source(&access, folder)?;
        let owner = self.store().source_owner(source)?;
        if !self.may_write(&access, owner.as_deref()) {
            return Err(EngineError::Forbidden(
                "only an administrator or the user who added this folder can change who sees it"
                    .into(),
            ));
        }
        {
            let mut store = self.store();
            match scopes {
                Some(s) => store.set_folder_acl(source, &rel, s)?,
                None => store.clear_folder_acl(source, &rel)?,
            };
        }
        let target = format!(
            "{} = {}",
            folder.display(),
            scopes.map_or("(inherit)".to_owned(), ToString::to_string)
        );
        self.audit_write(&access, "acl.set", &target, true)?;
        self.describe_folder_acl(folder, source, &rel)
    }

    /// The ACL a folder's documents get (for folders the caller can see).
    pub fn folder_acl(&self, ctx: &RequestContext, folder: &Path) -> Result<FolderAcl> {
        let access = self.authorize(ctx)?;
        let (source, rel) = self.folder_in_source(&access, folder)?;
        self.describe_folder_acl(folder, source, &rel)
    }

    fn describe_folder_acl(&self, folder: &Path, source: SourceId, rel: &str) -> Result<FolderAcl> {
        let tree = self.store().acl_tree(source, ScopeSet::new())?;
        // The effective ACL of a (hypothetical) document directly inside the folder.
        let probe = if rel.is_empty() {
            "x".to_owned()
        } else {
            format!("{rel}/x")
        };
        let eff = tree
            .effective(&probe)
            .map_err(|e| EngineError::InvalidInput(e.to_string()))?;
        let (explicit, inherited_from) = match eff.source {
            knowhub_authz::AclSource::Folder(p) if p.as_str() == rel => {
                (Some(eff.scopes.to_string()), None)
            }
            knowhub_authz::AclSource::Folder(p) => (None, Some(p.as_str().to_owned())),
            _ => (None, None),
        };
        let effective = if eff.scopes.is_empty() {
            "(none: each document's owner and administrators only)".to_owned()
        } else {
            eff.scopes.to_string()
        };
        Ok(FolderAcl {
            folder: folder.display().to_string(),
            relative: rel.to_owned(),
            explicit,
            effective,
            inherited_from,
        })
    }

    /// The ingested folder source containing `folder`, and the path relative to its root —
    /// `NotFound` unless the caller can see the folder (it holds something they may read) or
    /// administers the account or owns the source.
    fn folder_in_source(&self, access: &Access, folder: &Path) -> Result<(SourceId, String)> {
        let not_found = || {
            EngineError::NotFound(format!(
                "{} is not an ingested folder you can see",
                folder.display()
            ))
        };
        let abs = self.fs.canonicalize(folder).map_err(|_| not_found())?;
        let sources = self.store().sources()?;
        let (source, rel) = sources
            .iter()
            .filter_map(|s| {
                let root = Path::new(s.root_path.as_deref()?);
                let rel = abs.strip_prefix(root).ok()?;
                Some((
                    s,
                    rel.to_string_lossy().replace('\\', "/"),
                    root.components().count(),
                ))
            })
            // The innermost source wins when folders were ingested inside each other.
            .max_by_key(|(_, _, depth)| *depth)
            .map(|(s, rel, _)| (s, rel))
            .ok_or_else(not_found)?;
        let visible = self.may_write(access, source.owner.as_deref())
            || self
                .all_documents(Some(&abs))?
                .iter()
                .any(|d| access.can_read(d.id));
        if !visible {
            return Err(not_found());
        }
        Ok((source.id, rel))
    }

    pub(crate) fn audit_write(
        &self,
        access: &Access,
        action: &str,
        target: &str,
        changed: bool,
    ) -> Result<()> {
        self.audit(
            access,
            (action, target, if changed { "ok" } else { "unchanged" }),
            0,
            0,
            serde_json::Value::Null,
        )
    }
}

/// The documents of `account` readable with `visible` (a USER's view).
fn readable_documents(
    store: &dyn knowhub_store::backend::Backend,
    account: &AccountId,
    visible: &VisibleScopes,
) -> Result<HashSet<u64>> {
    let me = visible
        .scopes()
        .iter()
        .find_map(|s| match s {
            Scope::User(u) => Some(u.as_str().to_owned()),
            _ => None,
        })
        .unwrap_or_default();
    let sources = store.sources()?;
    let mut trees = std::collections::HashMap::new();
    for s in &sources {
        trees.insert(
            s.id,
            (s.root_path.clone(), store.acl_tree(s.id, ScopeSet::new())?),
        );
    }
    let mut allowed = HashSet::new();
    let mut attachments = Vec::new();
    for row in store.access_rows()? {
        // An attachment is readable exactly when its mail is (decided below).
        if row.parent.is_some() {
            attachments.push(row);
            continue;
        }
        // Whoever added a document can always read it (its scopes include `user:<owner>`).
        if row.owner.as_deref() == Some(me.as_str()) {
            allowed.insert(row.id.0 as u64);
            continue;
        }
        let Some((root, tree)) = trees.get(&row.source) else {
            continue;
        };
        let rel = acl_path_of(root.as_deref(), &row.path);
        // A path the policy refuses (cannot happen for stored paths) is unreadable.
        if let Ok(scopes) = tree.effective_scopes(&rel)
            && visible.allows(account, &scopes)
        {
            allowed.insert(row.id.0 as u64);
        }
    }
    // A mail comes before its attachments (a shorter path), an attachment before its own.
    attachments.sort_by_key(|row| row.path.len());
    for row in attachments {
        if row
            .parent
            .is_some_and(|mail| allowed.contains(&(mail.0 as u64)))
        {
            allowed.insert(row.id.0 as u64);
        }
    }
    Ok(allowed)
}

/// A document's path inside its source's ACL tree.
pub(crate) fn acl_path_of(root: Option<&str>, path: &str) -> String {
    match root {
        Some(root) => Path::new(path)
            .strip_prefix(root)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default(),
        // Individually added files: the ACL path is the file name.
        None => Path::new(path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    }
}

pub(crate) fn not_found_document(what: &str) -> EngineError {
    EngineError::NotFound(format!("no document {what}"))
}

fn group_of(group: &Scope) -> Result<Group> {
    Ok(match group {
        Scope::Team(t) => Group::Team(t.clone()),
        Scope::Project(p) => Group::Project(p.clone()),
        Scope::Org(o) => Group::Org(o.clone()),
        other => {
            return Err(EngineError::InvalidInput(format!(
                "{other} is not a group (expected team:<id>, project:<id> or org:<id>)"
            )));
        }
    })
}

/// A fresh trace id for a request: time, a random number drawn once per process, and a
/// counter. The random part (not the process id) keeps replicas apart that share a database:
/// in containers every replica may be process 1.
pub fn new_trace_id() -> String {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static PROCESS: OnceLock<u64> = OnceLock::new();
    let process = PROCESS.get_or_init(|| {
        let mut bytes = [0u8; 8];
        match getrandom::fill(&mut bytes) {
            Ok(()) => u64::from_le_bytes(bytes),
            // No system randomness: the process id and start time still tell most apart.
            Err(_) => u64::from(std::process::id()) ^ (now_nanos() << 20),
        }
    });
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!(
        "t{ms:x}-{process:x}-{}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn now_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// A document opened for reading or preview: its record, extracted text and passages.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DocumentView {
    pub document: knowhub_store::DocumentRecord,
    /// The canonical extracted text (passage offsets refer to it).
    pub text: String,
    pub passages: Vec<knowhub_store::ChunkRecord>,
}

impl Engine {
    /// Opens a stored document for preview (the "open source" of a citation), by id or path —
    /// `NotFound` when it does not exist *or* `ctx` may not read it.
    pub fn open_document(&self, ctx: &RequestContext, doc: DocRef<'_>) -> Result<DocumentView> {
        let access = self.authorize(ctx)?;
        let found = match doc {
            DocRef::Id(id) => self.store().document(id)?,
            DocRef::Path(p) => self
                .store()
                .document_by_path(&self.stored_path(p).display().to_string())?,
        };
        let label = match doc {
            DocRef::Id(id) => id.0.to_string(),
            DocRef::Path(p) => p.display().to_string(),
        };
        let Some(document) = found.filter(|d| access.can_read(d.id)) else {
            self.audit(
                &access,
                ("open", &label, "not_found"),
                0,
                0,
                serde_json::Value::Null,
            )?;
            return Err(not_found_document(&label));
        };
        let (text, passages) = {
            let store = self.store();
            (
                store.document_text(document.id)?.unwrap_or_default(),
                store.document_chunks(document.id)?,
            )
        };
        self.audit(
            &access,
            ("open", &document.path, "ok"),
            1,
            0,
            serde_json::json!([{ "document": document.id.0, "decision": "allow" }]),
        )?;
        Ok(DocumentView {
            document,
            text,
            passages,
        })
    }

    /// Resolves a citation (a chunk id) to its passage — `NotFound` unless `ctx` may read it.
    pub fn passage(
        &self,
        ctx: &RequestContext,
        chunk: knowhub_store::ChunkId,
    ) -> Result<knowhub_store::ChunkRecord> {
        let access = self.authorize(ctx)?;
        let found = self.store().chunks(&[chunk])?.into_iter().next();
        match found.filter(|c| access.can_read(c.document_id)) {
            Some(c) => {
                self.audit(&access, ("passage", &chunk.0.to_string(), "ok"), 1, 0, serde_json::json!([{ "chunk": chunk.0, "document": c.document_id.0, "decision": "allow" }]))?;
                Ok(c)
            }
            None => {
                self.audit(
                    &access,
                    ("passage", &chunk.0.to_string(), "not_found"),
                    0,
                    0,
                    serde_json::Value::Null,
                )?;
                Err(EngineError::NotFound(format!("no passage {}", chunk.0)))
            }
        }
    }

    /// A readable document's original file, so that a front end can hand over the bytes
    /// without reading them whole (the HTTP API streams them) and every download is audited
    /// (`file`). The store's copy of the version that was parsed comes first (a team database
    /// keeps one, so every replica serves it), else the file on this machine's disk.
    /// `NotFound` when the document does not exist or `ctx` may not read it, and a `NotFound`
    /// that says so when there is neither (the file moved, was deleted, or was read on another
    /// machine): its stored text and passages stay readable through [`Engine::open_document`].
    pub fn document_file(
        &self,
        ctx: &RequestContext,
        id: DocumentId,
    ) -> Result<(knowhub_store::DocumentRecord, knowhub_store::OriginalFile)> {
        let access = self.authorize(ctx)?;
        let document = match self.readable_document(&access, id) {
            Ok(d) => d,
            Err(e) => {
                let target = id.0.to_string();
                self.audit(
                    &access,
                    ("file", &target, "not_found"),
                    0,
                    0,
                    serde_json::Value::Null,
                )?;
                return Err(e);
            }
        };
        // Bound first: the store's guard must be released before the audit below takes it.
        let kept = self.store().original_file(id)?;
        let file = match kept {
            Some(kept) => kept,
            None => match open_regular_file(Path::new(&document.path)) {
                Ok(file) => file,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    self.audit(
                        &access,
                        ("file", &document.path, "gone"),
                        0,
                        0,
                        serde_json::Value::Null,
                    )?;
                    return Err(EngineError::NotFound(format!(
                        "the original file of document {id} is no longer on this machine (its \
                         text and passages are still readable)"
                    )));
                }
                Err(source) => {
                    return Err(EngineError::Io {
                        path: document.path.clone(),
                        source,
                    });
                }
            },
        };
        self.audit(
            &access,
            ("file", &document.path, "ok"),
            1,
            0,
            serde_json::json!([{ "document": id.0, "decision": "allow" }]),
        )?;
        Ok((document, file))
    }

    /// The audit trail, newest first, optionally only one user's: administrators may name any
    /// user (or none: the whole account), users only themselves, since another user's trail
    /// shows what that user asked and read.
    pub fn audit_trail_for(
        &self,
        ctx: &RequestContext,
        limit: usize,
        user: Option<&UserId>,
    ) -> Result<Vec<AuditRecord>> {
        let access = self.authorize(ctx)?;
        let only = match user {
            _ if access.is_admin() => user,
            Some(u) if u != &access.ctx.user => {
                return Err(EngineError::Forbidden(
                    "only an administrator can read another user's audit trail".into(),
                ));
            }
            _ => Some(&access.ctx.user),
        };
        Ok(self.store().audit(limit, only)?)
    }
}

/// A document named by id or by path.
#[derive(Debug, Clone, Copy)]
pub enum DocRef<'a> {
    Id(DocumentId),
    Path(&'a Path),
}

impl Engine {
    /// Sets (or with `None` clears) a single document's own read scopes, overriding its
    /// folder's; applies to the next query. The document's owner, or an administrator;
    /// `NotFound` for documents the caller cannot read.
    pub fn set_document_acl(
        &self,
        ctx: &RequestContext,
        file: &Path,
        scopes: Option<&ScopeSet>,
    ) -> Result<String> {
        let access = self.authorize(ctx)?;
        let abs = self.stored_path(file);
        let label = file.display().to_string();
        let doc = self
            .store()
            .document_by_path(&abs.display().to_string())?
            .filter(|d| access.can_read(d.id))
            .ok_or_else(|| not_found_document(&label))?;
        if !self.may_write(&access, doc.owner.as_deref()) {
            return Err(EngineError::Forbidden(
                "only an administrator or the user who added this document can change who sees it"
                    .into(),
            ));
        }
        if doc.parent.is_some() {
            return Err(EngineError::InvalidInput(format!(
                "{label} is an attachment: it follows its mail's permissions (set them on the mail)"
            )));
        }
        let root = self
            .store()
            .sources()?
            .into_iter()
            .find(|s| s.id == doc.source)
            .and_then(|s| s.root_path);
        let rel = acl_path_of(root.as_deref(), &doc.path);
        {
            let mut store = self.store();
            match scopes {
                Some(s) => store.set_document_acl(doc.source, &rel, s)?,
                None => store.clear_document_acl(doc.source, &rel)?,
            };
        }
        let effective = self
            .store()
            .acl_tree(doc.source, ScopeSet::new())?
            .effective_scopes(&rel)
            .map_err(|e| EngineError::InvalidInput(e.to_string()))?;
        let target = format!(
            "{} = {}",
            doc.path,
            scopes.map_or("(inherit)".to_owned(), ToString::to_string)
        );
        self.audit_write(&access, "acl.set_document", &target, true)?;
        Ok(if effective.is_empty() {
            "(none: the owner and administrators only)".to_owned()
        } else {
            effective.to_string()
        })
    }
}

/// A file on this machine's disk as an [`OriginalFile`](knowhub_store::OriginalFile); only a
/// regular file, since opening a FIFO or a device would block or never end.
fn open_regular_file(path: &Path) -> std::io::Result<knowhub_store::OriginalFile> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::ErrorKind::NotFound.into());
    }
    let file = std::fs::File::open(path)?;
    Ok(knowhub_store::OriginalFile {
        len: meta.len(),
        reader: Box::new(file),
    })
}
