//! Read permissions as a retrieval filter: who may read which stored document.
//!
//! A document's effective read scopes come from its source's ACL tree (document override, else
//! the nearest folder with an explicit ACL, else the source default — empty, i.e. nobody but
//! admins). The filter is computed from the store at query time, so an ACL or membership
//! change is visible to the very next query without re-indexing; it is then pushed into both
//! the BM25 and the vector scan through [`crate::SearchOptions::filter`].
//!
//! Groundwork for the permissions issue: not every engine call takes a `RequestContext` yet.

use std::collections::HashSet;
use std::path::Path;

use knowhub_authz::{
    AccountId, ApiKey, KeyHash, RequestContext, Role, Scope, ScopeSet, UserId, VisibleScopes,
};
use knowhub_index::DocFilter;
use knowhub_store::{Group, UserRecord};

use crate::{Engine, EngineError, Result};

/// The account every engine serves until multi-tenancy lands (see `DataPaths`).
pub const DEFAULT_ACCOUNT: &str = "default";

impl Engine {
    /// The documents `ctx` may read, as a filter for [`Engine::retrieve`]: `None` means
    /// everything (ROOT, or an ADMIN of this account). A context of another account reads
    /// nothing.
    pub fn read_filter(&self, ctx: &RequestContext) -> Result<Option<DocFilter>> {
        let account = AccountId::new(DEFAULT_ACCOUNT)
            .map_err(|e| EngineError::InvalidInput(e.to_string()))?;
        let store = self.store();
        let memberships = store.memberships(&ctx.user)?;
        let visible = VisibleScopes::for_context(ctx, &memberships);
        match ctx.role {
            Role::Root => return Ok(None),
            Role::Admin if ctx.account == account => return Ok(None),
            _ => {}
        }
        let mut allowed: HashSet<u64> = HashSet::new();
        if ctx.account != account {
            return Ok(Some(DocFilter::allow_only(allowed)));
        }
        for source in store.sources()? {
            let tree = store.acl_tree(source.id, ScopeSet::new())?;
            for doc in store.documents(source.root_path.as_deref())? {
                if doc.source != source.id {
                    continue;
                }
                let rel = match &source.root_path {
                    Some(root) => Path::new(&doc.path)
                        .strip_prefix(root)
                        .map(|p| p.to_string_lossy().replace('\\', "/"))
                        .unwrap_or_default(),
                    // Individually added files: the ACL path is the file name.
                    None => Path::new(&doc.path)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                };
                // A path the policy refuses (cannot happen for stored paths) is unreadable.
                if let Ok(scopes) = tree.effective_scopes(&rel)
                    && visible.allows(&account, &scopes)
                {
                    allowed.insert(doc.id.0 as u64);
                }
            }
        }
        Ok(Some(DocFilter::allow_only(allowed)))
    }
}

/// A folder's ACL: what is set on it, and what its documents effectively get.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FolderAcl {
    pub folder: String,
    /// The folder relative to its source root (`""` = the root).
    pub relative: String,
    /// Scopes its documents effectively get (the nearest explicit ACL, or none).
    pub effective: String,
}

impl Engine {
    /// Stored documents `ctx` may read (optionally only under a folder): a user never learns
    /// the names of documents they cannot read.
    pub fn documents_for(
        &self,
        ctx: &RequestContext,
        under: Option<&Path>,
    ) -> Result<Vec<knowhub_store::DocumentRecord>> {
        let docs = self.documents(under)?;
        Ok(match self.read_filter(ctx)? {
            None => docs,
            Some(filter) => docs
                .into_iter()
                .filter(|d| filter.allows(d.id.0 as u64))
                .collect(),
        })
    }

    /// Adds a user (`false`: the id exists, or existed — ids are never reused).
    pub fn add_user(&self, id: &UserId, name: &str, role: Role) -> Result<bool> {
        Ok(self.store().add_user(id, name, role)?)
    }

    /// Active users.
    pub fn users(&self) -> Result<Vec<UserRecord>> {
        Ok(self.store().users()?)
    }

    /// Removes a user; their API keys and memberships go at once.
    pub fn remove_user(&self, id: &UserId) -> Result<bool> {
        Ok(self.store().remove_user(id)?)
    }

    /// Changes a user's role.
    pub fn set_role(&self, id: &UserId, role: Role) -> Result<bool> {
        Ok(self.store().set_role(id, role)?)
    }

    /// Adds a user to a team, project or org (given as a scope: `team:<id>`, …).
    pub fn add_membership(&self, id: &UserId, group: &Scope) -> Result<bool> {
        let group = match group {
            Scope::Team(t) => Group::Team(t.clone()),
            Scope::Project(p) => Group::Project(p.clone()),
            Scope::Org(o) => Group::Org(o.clone()),
            other => {
                return Err(EngineError::InvalidInput(format!(
                    "{other} is not a group (expected team:<id>, project:<id> or org:<id>)"
                )));
            }
        };
        Ok(self.store().add_membership(id, &group)?)
    }

    /// Replaces every API key of `id` with a new one, returned once (only its hash is kept).
    pub fn rotate_api_key(&self, id: &UserId) -> Result<ApiKey> {
        let key = ApiKey::generate().map_err(|e| EngineError::InvalidInput(e.to_string()))?;
        if !self.store().rotate_api_keys(id, &key.hash())? {
            return Err(EngineError::InvalidInput(format!("no active user {id}")));
        }
        Ok(key)
    }

    /// The request context of the holder of `api_key`, or `None` when no active user has it.
    pub fn context_for_key(&self, api_key: &str, trace_id: &str) -> Result<Option<RequestContext>> {
        let found = self.store().user_for_key_hash(&KeyHash::of(api_key))?;
        found
            .map(|(user, role)| self.context(user, role, trace_id))
            .transpose()
    }

    /// The request context of a stored user (`--as` on the command line).
    pub fn context_for_user(&self, id: &UserId, trace_id: &str) -> Result<RequestContext> {
        let user = self
            .store()
            .user(id)?
            .filter(|u| u.removed_at.is_none())
            .ok_or_else(|| EngineError::InvalidInput(format!("no active user {id}")))?;
        self.context(user.id, user.role, trace_id)
    }

    fn context(&self, user: UserId, role: Role, trace_id: &str) -> Result<RequestContext> {
        Ok(RequestContext {
            account: AccountId::new(DEFAULT_ACCOUNT)
                .map_err(|e| EngineError::InvalidInput(e.to_string()))?,
            user,
            agent: None,
            role,
            session: None,
            trace_id: trace_id.to_owned(),
        })
    }

    /// Sets (or with `None` clears) the read scopes of an ingested folder; applies to the
    /// next query.
    pub fn set_folder_acl(&self, folder: &Path, scopes: Option<&ScopeSet>) -> Result<FolderAcl> {
        let (source, rel) = self.folder_in_source(folder)?;
        {
            let mut store = self.store();
            match scopes {
                Some(s) => store.set_folder_acl(source, &rel, s)?,
                None => store.clear_folder_acl(source, &rel)?,
            };
        }
        self.folder_acl(folder)
    }

    /// The ACL a folder's documents get.
    pub fn folder_acl(&self, folder: &Path) -> Result<FolderAcl> {
        let (source, rel) = self.folder_in_source(folder)?;
        let tree = self.store().acl_tree(source, ScopeSet::new())?;
        // The effective ACL of a (hypothetical) document directly inside the folder.
        let probe = if rel.is_empty() {
            "x".to_owned()
        } else {
            format!("{rel}/x")
        };
        let effective = tree
            .effective_scopes(&probe)
            .map_err(|e| EngineError::InvalidInput(e.to_string()))?;
        Ok(FolderAcl {
            folder: folder.display().to_string(),
            relative: rel,
            effective: if effective.is_empty() {
                "(none: administrators only)".to_owned()
            } else {
                effective.to_string()
            },
        })
    }

    /// The ingested folder source containing `folder`, and the path relative to its root.
    fn folder_in_source(&self, folder: &Path) -> Result<(knowhub_store::SourceId, String)> {
        let abs = self
            .fs
            .canonicalize(folder)
            .map_err(|source| EngineError::Io {
                path: folder.display().to_string(),
                source,
            })?;
        let sources = self.store().sources()?;
        sources
            .iter()
            .filter_map(|s| {
                let root = Path::new(s.root_path.as_deref()?);
                let rel = abs.strip_prefix(root).ok()?;
                Some((
                    s.id,
                    rel.to_string_lossy().replace('\\', "/"),
                    root.components().count(),
                ))
            })
            // The innermost source wins when folders were ingested inside each other.
            .max_by_key(|(_, _, depth)| *depth)
            .map(|(id, rel, _)| (id, rel))
            .ok_or_else(|| {
                EngineError::InvalidInput(format!(
                    "{} is not inside an ingested folder (ingest it first)",
                    folder.display()
                ))
            })
    }
}
