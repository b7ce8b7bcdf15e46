//! Resources (seed 002): code, credentials, cookies… that knowledge items reference by
//! `resource_ids`, with a public `body` and a `secure_body` encrypted at rest
//! ([`crate::secrets`]).
//!
//! * **Visibility** is the knowledge items' rule: read scopes = `scopes` ∪ `user:<owner>`,
//!   ADMIN sees the account, ROOT everything; decided inside the store query
//!   ([`ResourceFilter`]). Invisible → `NotFound`; visible but not changeable → `Forbidden`.
//! * **Secure bodies** are decrypted and returned only by [`Engine::resource_get`] and only to
//!   the owner or an administrator of the account (or ROOT); other readers get
//!   `secure_body: None` (`has_secure_body` still says whether there is one). Lists, saves and
//!   updates never return them. The audit log records the action, the id and whether the
//!   secret was returned — never the secret.
//! * **Expiry**: a resource past `expires_at` is refused by `resource_get` (`Forbidden`,
//!   "expired") and left out of lists inside the query; its owner can still update (renew)
//!   or delete it.
//! * **Ids** are `resource-{unix_ms}-{random}` unless the caller names one, as seed 002's
//!   examples do (`credentials/website_a`, `code/selenium/login`): lower-case path segments
//!   of letters, digits, `_`, `-`, `.`, joined by `/`. Ids are unique in the account, so a
//!   taken id is a `Conflict` — which tells the caller only that the name is in use, never
//!   what is behind it.

use std::collections::BTreeMap;
use std::sync::Arc;

use knowhub_authz::Scope;
use knowhub_store::{ResourceFilter, ResourceRecord};
use serde::{Deserialize, Serialize};

use crate::knowledge::parse_scopes;
use crate::permissions::Access;
use crate::queue::now_ms;
use crate::secrets::{self, KeySource, SecureBody};
use crate::{Engine, EngineError, RequestContext, Result};

/// Resource content types (seed 002 names code, credential, cookie; the rest are common kinds).
pub const RESOURCE_TYPES: &[&str] = &[
    "code",
    "credential",
    "cookie",
    "token",
    "config",
    "text",
    "other",
];

/// A new resource (seed 002 `POST /api/resource`). Owned by the caller.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NewResource {
    /// A name of the caller's choosing (`credentials/website_a`); default: a generated id.
    pub id: Option<String>,
    /// One of [`RESOURCE_TYPES`].
    pub content_type: String,
    pub title: String,
    pub description: String,
    /// The public part.
    pub body: String,
    /// The secret part (encrypted at rest).
    pub secure_body: Option<SecureBody>,
    /// Default: `user:<caller>`. A user may only share with scopes they belong to.
    pub scopes: Vec<String>,
    pub tags: BTreeMap<String, String>,
    /// A JSON object (language, acquired_at, …); `null` = `{}`.
    pub metadata: serde_json::Value,
    /// RFC 3339 (`2026-03-07T10:00:00Z`, offsets and fractions accepted).
    pub expires_at: Option<String>,
}

/// Changes to a resource. Owner or administrators.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResourceUpdate {
    pub content_type: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    pub body: Option<String>,
    /// A new secret (re-encrypted with a fresh nonce).
    pub secure_body: Option<SecureBody>,
    /// Remove the secret.
    pub clear_secure_body: bool,
    pub scopes: Option<Vec<String>>,
    pub tags: Option<BTreeMap<String, String>>,
    pub metadata: Option<serde_json::Value>,
    /// A new expiry (RFC 3339).
    pub expires_at: Option<String>,
    /// Never expires.
    pub clear_expires_at: bool,
}

/// Filters for [`Engine::resource_list`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResourceListOptions {
    pub content_types: Vec<String>,
    pub scopes: Vec<String>,
    pub tags: BTreeMap<String, String>,
    pub owner: Option<String>,
    /// Default 100.
    pub limit: Option<usize>,
    pub offset: usize,
}

/// A resource as a caller sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resource {
    pub id: String,
    pub content_type: String,
    pub title: String,
    pub description: String,
    pub owner: String,
    pub scopes: Vec<String>,
    pub tags: BTreeMap<String, String>,
    pub metadata: serde_json::Value,
    pub body: String,
    /// Whether a secret is stored (true even when it is withheld from this caller).
    pub has_secure_body: bool,
    /// The decrypted secret: only from `resource_get`, only for the owner or administrators.
    pub secure_body: Option<SecureBody>,
    /// RFC 3339.
    pub expires_at: Option<String>,
    pub expires_at_ms: Option<i64>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

fn view(r: ResourceRecord, secure_body: Option<SecureBody>) -> Resource {
    Resource {
        has_secure_body: r.secure.is_some(),
        secure_body,
        expires_at: r
            .expires_at_ms
            .map(|ms| crate::knowledge::rfc3339(ms.div_euclid(1000))),
        expires_at_ms: r.expires_at_ms,
        id: r.id,
        content_type: r.content_type,
        title: r.title,
        description: r.description,
        owner: r.owner,
        scopes: r.scopes,
        tags: r.tags,
        metadata: r.metadata,
        body: r.body,
        created_at_ms: r.created_at_ms,
        updated_at_ms: r.updated_at_ms,
    }
}

impl Engine {
    /// Replaces the key source for secure bodies (default: `<data dir>/secret.key`).
    pub fn set_key_source(&self, source: Arc<dyn KeySource>) {
        self.resource_keys.set(source);
    }

    fn resource_key(&self) -> Result<secrets::SecretKey> {
        Ok(self.resource_keys.get(&self.paths.root).key()?)
    }

    /// Saves a new resource owned by the caller. The result carries no secure body.
    pub fn resource_save(&self, ctx: &RequestContext, new: NewResource) -> Result<Resource> {
        let access = self.authorize(ctx)?;
        let title = new.title.trim().to_owned();
        let secret = new.secure_body.filter(|s| !s.is_empty());
        if title.is_empty() && new.body.trim().is_empty() && secret.is_none() {
            return Err(EngineError::InvalidInput(
                "a resource needs a title, a body or a secure body".into(),
            ));
        }
        let scopes = if new.scopes.is_empty() {
            vec![Scope::User(access.ctx.user.clone()).to_string()]
        } else {
            self.grantable_scopes(&access, &new.scopes, "resources")?
        };
        let id = match new.id.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            Some(chosen) => {
                check_resource_id(chosen)?;
                if self.store().resource(chosen)?.is_some() {
                    return Err(EngineError::Conflict(format!(
                        "the resource id {chosen} is already in use"
                    )));
                }
                chosen.to_owned()
            }
            None => new_resource_id()?,
        };
        let secure = match &secret {
            Some(s) => Some(secrets::seal(&self.resource_key()?, &id, s)?),
            None => None,
        };
        let record = ResourceRecord {
            seq: 0,
            id,
            content_type: check_type(&new.content_type)?,
            title,
            description: new.description.trim().to_owned(),
            owner: access.ctx.user.as_str().to_owned(),
            scopes,
            tags: new.tags,
            metadata: check_metadata(new.metadata)?,
            body: new.body,
            secure,
            expires_at_ms: new.expires_at.as_deref().map(parse_rfc3339).transpose()?,
            created_at_ms: 0,
            updated_at_ms: 0,
        };
        let stored = self.store().insert_resource(&record)?;
        self.audit_write(&access, "resource.save", &stored.id, true)?;
        Ok(view(stored, None))
    }

    /// One resource. `NotFound` when it does not exist or the caller may not see it;
    /// `Forbidden` ("expired") past its `expires_at`. The secure body is decrypted only for
    /// the owner and administrators.
    pub fn resource_get(&self, ctx: &RequestContext, id: &str) -> Result<Resource> {
        let access = self.authorize(ctx)?;
        let filter = ResourceFilter {
            reader: self.reader(&access),
            ..Default::default()
        };
        let found = self.store().resource_matching(id, &filter)?;
        let Some(record) = found else {
            self.audit(
                &access,
                ("resource.get", id, "not_found"),
                0,
                0,
                serde_json::Value::Null,
            )?;
            return Err(not_found(id));
        };
        if let Some(at) = record.expires_at_ms.filter(|at| *at <= now_ms()) {
            self.audit(
                &access,
                ("resource.get", id, "expired"),
                0,
                0,
                serde_json::Value::Null,
            )?;
            return Err(EngineError::Forbidden(format!(
                "resource {id} expired at {}",
                crate::knowledge::rfc3339(at.div_euclid(1000))
            )));
        }
        let entitled = self.may_write(&access, Some(&record.owner));
        let secret = match (&record.secure, entitled) {
            (Some(sealed), true) => Some(secrets::open(&self.resource_key()?, id, sealed)?),
            _ => None,
        };
        let evidence = serde_json::json!({
            "secure_body": match (record.secure.is_some(), secret.is_some()) {
                (false, _) => "none",
                (true, true) => "returned",
                (true, false) => "withheld",
            }
        });
        self.audit(&access, ("resource.get", id, "ok"), 1, 0, evidence)?;
        Ok(view(record, secret))
    }

    /// Live resources the caller may see, newest first; never with secure bodies.
    pub fn resource_list(
        &self,
        ctx: &RequestContext,
        options: &ResourceListOptions,
    ) -> Result<Vec<Resource>> {
        let access = self.authorize(ctx)?;
        let filter = ResourceFilter {
            reader: self.reader(&access),
            content_types: options.content_types.clone(),
            scopes: parse_scopes(&options.scopes)?
                .iter()
                .map(ToString::to_string)
                .collect(),
            tags: options.tags.clone(),
            owner: options.owner.clone(),
            live_at_ms: Some(now_ms()),
        };
        let rows =
            self.store()
                .list_resources(&filter, options.limit.unwrap_or(100), options.offset)?;
        Ok(rows.into_iter().map(|r| view(r, None)).collect())
    }

    /// Changes a resource (owner or administrators; works on expired ones, to renew them).
    /// The result carries no secure body.
    pub fn resource_update(
        &self,
        ctx: &RequestContext,
        id: &str,
        update: ResourceUpdate,
    ) -> Result<Resource> {
        let access = self.authorize(ctx)?;
        let mut record = self.writable_resource(&access, id)?;
        if let Some(t) = &update.content_type {
            record.content_type = check_type(t)?;
        }
        if let Some(t) = update.title {
            record.title = t.trim().to_owned();
        }
        if let Some(d) = update.description {
            record.description = d.trim().to_owned();
        }
        if let Some(b) = update.body {
            record.body = b;
        }
        if let Some(scopes) = &update.scopes {
            record.scopes = if scopes.is_empty() {
                vec![format!("user:{}", record.owner)]
            } else {
                self.grantable_scopes(&access, scopes, "resources")?
            };
        }
        if let Some(tags) = update.tags {
            record.tags = tags;
        }
        if let Some(m) = update.metadata {
            record.metadata = check_metadata(m)?;
        }
        if update.clear_expires_at {
            record.expires_at_ms = None;
        }
        if let Some(at) = &update.expires_at {
            record.expires_at_ms = Some(parse_rfc3339(at)?);
        }
        if update.clear_secure_body {
            record.secure = None;
        }
        if let Some(secret) = update.secure_body.filter(|s| !s.is_empty()) {
            record.secure = Some(secrets::seal(&self.resource_key()?, id, &secret)?);
        }
        let stored = self
            .store()
            .update_resource(&record)?
            .ok_or_else(|| not_found(id))?;
        self.audit_write(&access, "resource.update", id, true)?;
        Ok(view(stored, None))
    }

    /// Deletes a resource (owner or administrators).
    pub fn resource_delete(&self, ctx: &RequestContext, id: &str) -> Result<()> {
        let access = self.authorize(ctx)?;
        let record = self.writable_resource(&access, id)?;
        if !self.store().delete_resource(&record.id)? {
            return Err(not_found(id));
        }
        self.audit_write(&access, "resource.delete", id, true)
    }

    // ----- helpers --------------------------------------------------------------------------

    /// The resource, when `access` may change it: `NotFound` if invisible, `Forbidden` if only
    /// visible.
    fn writable_resource(&self, access: &Access, id: &str) -> Result<ResourceRecord> {
        let filter = ResourceFilter {
            reader: self.reader(access),
            ..Default::default()
        };
        let found = self.store().resource_matching(id, &filter)?;
        let record = found.ok_or_else(|| not_found(id))?;
        if !self.may_write(access, Some(&record.owner)) {
            return Err(EngineError::Forbidden(format!(
                "only the owner of resource {id} or an administrator can change it"
            )));
        }
        Ok(record)
    }
}

fn check_type(t: &str) -> Result<String> {
    let t = t.trim().to_ascii_lowercase();
    let t = if t.is_empty() { "text".to_owned() } else { t };
    if RESOURCE_TYPES.contains(&t.as_str()) {
        Ok(t)
    } else {
        Err(EngineError::InvalidInput(format!(
            "unknown resource type '{t}' (one of: {})",
            RESOURCE_TYPES.join(", ")
        )))
    }
}

fn check_metadata(m: serde_json::Value) -> Result<serde_json::Value> {
    match m {
        serde_json::Value::Null => Ok(serde_json::json!({})),
        serde_json::Value::Object(_) => Ok(m),
        _ => Err(EngineError::InvalidInput(
            "resource metadata must be a JSON object".into(),
        )),
    }
}

fn not_found(id: &str) -> EngineError {
    EngineError::NotFound(format!("no resource {id}"))
}

/// Longest caller-chosen resource id.
const MAX_RESOURCE_ID: usize = 128;

/// A caller-chosen id: `segment(/segment)*`, each segment of `a-z 0-9 _ - .`, not `.`/`..`.
fn check_resource_id(id: &str) -> Result<()> {
    let ok_segment = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-.".contains(c))
    };
    if id.len() <= MAX_RESOURCE_ID && id.split('/').all(ok_segment) {
        Ok(())
    } else {
        Err(EngineError::InvalidInput(format!(
            "a resource id is lower-case letters, digits, '_', '-', '.' in segments joined by              '/' (at most {MAX_RESOURCE_ID} characters), e.g. credentials/website_a — not {id:?}"
        )))
    }
}

/// `resource-{unix_ms}-{12 random hex digits}`.
fn new_resource_id() -> Result<String> {
    let mut bytes = [0u8; 6];
    getrandom::fill(&mut bytes)
        .map_err(|e| EngineError::InvalidInput(format!("no randomness for an id: {e}")))?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("resource-{}-{hex}", now_ms()))
}

/// RFC 3339 (`YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`, `T` or space) → unix milliseconds.
pub fn parse_rfc3339(text: &str) -> Result<i64> {
    chrono::DateTime::parse_from_rfc3339(text.trim())
        .map(|t| t.timestamp_millis())
        .map_err(|_| {
            EngineError::InvalidInput(format!(
                "'{text}' is not an RFC 3339 time (like 2026-03-07T10:00:00Z)"
            ))
        })
}
