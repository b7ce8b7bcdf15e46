//! The pure policy core of KnowHub permissions: no storage, no I/O (besides the OS random source
//! for new API keys).
//!
//! * [`Scope`] / [`ScopeSet`]: who a piece of knowledge is shared with (`user:<id>`,
//!   `agent:<id>`, `project:<id>`, `team:<id>`, `org:<id>`, `public`), and
//!   [`rank_by_scope_priority`] (user > project > agent > team > org > public).
//! * [`Role`], [`RequestContext`], [`Memberships`] → [`VisibleScopes`]: what a request may read
//!   ([`VisibleScopes::allows`]), and [`can_write`]: owner-only writes.
//! * [`AclTree`]: folder ACLs with per-document overrides and safe path normalisation.
//! * [`ApiKey`] / [`KeyHash`] / [`verify`]: 256-bit API keys stored as SHA-256, checked in
//!   constant time.
//! * [`PermissionSnapshot`]: a stable id of the permission state used for an answer, for audit.
//!
//! ```
//! use knowhub_authz::*;
//!
//! # fn main() -> Result<(), AuthzError> {
//! let ctx = RequestContext {
//!     account: AccountId::new("acme")?,
//!     user: UserId::new("alice")?,
//!     agent: None,
//!     role: "user".parse()?,
//!     session: None,
//!     trace_id: "t-1".into(),
//! };
//! let memberships = Memberships { teams: vec![TeamId::new("search")?], ..Default::default() };
//! let visible = VisibleScopes::for_context(&ctx, &memberships);
//!
//! // Folder ACLs: `handbook/` is public, `handbook/salaries/` only for the `hr` team.
//! let mut acl = AclTree::owner_default(&UserId::new("bob")?);
//! acl.set_folder_acl("handbook", "public".parse()?)?;
//! acl.set_folder_acl("handbook/salaries/", "team:hr".parse()?)?;
//!
//! let acme = AccountId::new("acme")?;
//! assert!(visible.allows(&acme, &acl.effective_scopes("handbook/intro.md")?));
//! assert!(!visible.allows(&acme, &acl.effective_scopes("./handbook/salaries/2026.xlsx")?));
//! assert!(!visible.allows(&acme, &acl.effective_scopes("notes/bob.md")?)); // bob's by default
//! assert!(acl.effective_scopes("handbook/../secrets.md").is_err());
//!
//! // Owner-only writes.
//! assert!(!can_write(&ctx, &UserId::new("bob")?, &acme));
//!
//! // The audit record names the exact permission state.
//! let snapshot = PermissionSnapshot::new(&visible, acl.version());
//! assert_eq!(snapshot.to_string().len(), 64);
//!
//! // API keys: show the secret once, store the hash.
//! let key = ApiKey::generate()?;
//! let stored = key.hash();
//! assert!(verify(key.secret(), &stored));
//! assert!(!verify("kh_wrong", &stored));
//! # Ok(())
//! # }
//! ```

mod acl;
mod apikey;
mod context;
mod error;
mod group;
mod ids;
mod role;
mod scope;
mod snapshot;

pub use acl::{AclPath, AclSource, AclTree, EffectiveAcl};
pub use apikey::{API_KEY_PREFIX, API_KEY_SECRET_BYTES, ApiKey, KeyHash, verify};
pub use context::{Memberships, RequestContext, VisibleScopes, can_write};
pub use error::AuthzError;
pub use group::GroupRole;
pub use ids::{AccountId, AgentId, GroupId, MAX_ID_LEN, OrgId, ProjectId, TeamId, UserId};
pub use role::Role;
pub use scope::{Scope, ScopeSet, rank_by_scope_priority};
pub use snapshot::PermissionSnapshot;
