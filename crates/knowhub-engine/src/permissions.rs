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

use knowhub_authz::{AccountId, RequestContext, Role, ScopeSet, VisibleScopes};
use knowhub_index::DocFilter;

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
