//! Folder ACLs with per-document overrides.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{AuthzError, Scope, ScopeSet, UserId};

/// A normalised path relative to a source root: `/`-separated, no empty, `.` or `..`
/// components, no leading or trailing `/`. The root folder is the empty path.
///
/// Normalisation ([`AclPath::parse`]) collapses `./` and repeated or trailing slashes and
/// *rejects* anything that could name a different file than it appears to: `..` components,
/// absolute paths (leading `/` or a drive letter such as `C:`), backslashes (ambiguous between
/// platforms) and control characters (NUL included). It never touches the file system, so it
/// cannot follow symlinks; callers resolve those before asking.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AclPath(String);

impl AclPath {
    /// The source root folder.
    pub fn root() -> Self {
        Self(String::new())
    }

    /// Normalises `path` (see the type docs); `""`, `"."` and `"./"` are the root.
    pub fn parse(path: &str) -> Result<Self, AuthzError> {
        let bad = |reason| AuthzError::InvalidPath {
            path: path.to_owned(),
            reason,
        };
        if path.chars().any(char::is_control) {
            return Err(bad("contains a control character"));
        }
        if path.contains('\\') {
            return Err(bad("contains a backslash; use '/' as the separator"));
        }
        if path.starts_with('/') {
            return Err(bad("absolute paths are not allowed"));
        }
        let mut parts: Vec<&str> = Vec::new();
        for (i, part) in path.split('/').enumerate() {
            match part {
                "" | "." => {}
                ".." => return Err(bad("'..' components are not allowed")),
                _ => {
                    if i == 0 && is_drive_prefix(part) {
                        return Err(bad("absolute (drive-letter) paths are not allowed"));
                    }
                    parts.push(part);
                }
            }
        }
        Ok(Self(parts.join("/")))
    }

    /// Whether this is the root folder.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The normalised path.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The parent folder, `None` for the root.
    pub fn parent(&self) -> Option<AclPath> {
        if self.is_root() {
            return None;
        }
        Some(match self.0.rfind('/') {
            Some(at) => Self(self.0[..at].to_owned()),
            None => Self::root(),
        })
    }
}

/// `C:` / `c:foo`: a Windows drive prefix.
fn is_drive_prefix(part: &str) -> bool {
    let b = part.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

impl fmt::Display for AclPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for AclPath {
    type Err = AuthzError;
    fn from_str(s: &str) -> Result<Self, AuthzError> {
        Self::parse(s)
    }
}

impl TryFrom<String> for AclPath {
    type Error = AuthzError;
    fn try_from(s: String) -> Result<Self, AuthzError> {
        Self::parse(&s)
    }
}

impl From<AclPath> for String {
    fn from(p: AclPath) -> String {
        p.0
    }
}

/// Where an effective ACL came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclSource<'a> {
    /// The document's own override.
    Document,
    /// The nearest ancestor folder with an explicit ACL.
    Folder(&'a AclPath),
    /// No explicit ACL applied: the tree's default.
    Default,
}

/// An effective ACL and its origin (for "why can/can't I see this" explanations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectiveAcl<'a> {
    /// The scopes that apply.
    pub scopes: &'a ScopeSet,
    /// Where they came from.
    pub source: AclSource<'a>,
}

/// Explicit folder ACLs and per-document overrides for one source root.
///
/// A document's effective scopes are its own override if it has one, else the ACL of the
/// *nearest* ancestor folder with an explicit ACL (a nested folder's ACL replaces, rather than
/// narrows, its parent's), else the tree's default. Every change that alters the tree bumps
/// [`AclTree::version`], which feeds [`PermissionSnapshot`](crate::PermissionSnapshot) ids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AclTree {
    version: u64,
    default: ScopeSet,
    folders: BTreeMap<AclPath, ScopeSet>,
    documents: BTreeMap<AclPath, ScopeSet>,
}

impl AclTree {
    /// An empty tree whose documents fall back to `default`.
    pub fn new(default: ScopeSet) -> Self {
        Self {
            version: 0,
            default,
            folders: BTreeMap::new(),
            documents: BTreeMap::new(),
        }
    }

    /// An empty tree whose documents default to private to `owner`.
    pub fn owner_default(owner: &UserId) -> Self {
        Self::new([Scope::User(owner.clone())].into_iter().collect())
    }

    /// Monotonic version, bumped on every effective change.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The fallback scopes.
    pub fn default_scopes(&self) -> &ScopeSet {
        &self.default
    }

    /// Replaces the fallback scopes.
    pub fn set_default(&mut self, scopes: ScopeSet) {
        if self.default != scopes {
            self.default = scopes;
            self.version += 1;
        }
    }

    /// Sets the explicit ACL of a folder (`""` is the source root); returns the normalised path.
    pub fn set_folder_acl(
        &mut self,
        folder: &str,
        scopes: ScopeSet,
    ) -> Result<AclPath, AuthzError> {
        let path = AclPath::parse(folder)?;
        if self.folders.get(&path) != Some(&scopes) {
            self.folders.insert(path.clone(), scopes);
            self.version += 1;
        }
        Ok(path)
    }

    /// Removes a folder's explicit ACL (it inherits again); returns whether one was set.
    pub fn clear_folder_acl(&mut self, folder: &str) -> Result<bool, AuthzError> {
        let path = AclPath::parse(folder)?;
        let removed = self.folders.remove(&path).is_some();
        if removed {
            self.version += 1;
        }
        Ok(removed)
    }

    /// Sets a document's override; returns the normalised path.
    pub fn set_document_acl(
        &mut self,
        document: &str,
        scopes: ScopeSet,
    ) -> Result<AclPath, AuthzError> {
        let path = document_path(document)?;
        if self.documents.get(&path) != Some(&scopes) {
            self.documents.insert(path.clone(), scopes);
            self.version += 1;
        }
        Ok(path)
    }

    /// Removes a document's override; returns whether one was set.
    pub fn clear_document_acl(&mut self, document: &str) -> Result<bool, AuthzError> {
        let path = document_path(document)?;
        let removed = self.documents.remove(&path).is_some();
        if removed {
            self.version += 1;
        }
        Ok(removed)
    }

    /// The effective ACL of a document and where it came from.
    pub fn effective(&self, document: &str) -> Result<EffectiveAcl<'_>, AuthzError> {
        let path = document_path(document)?;
        if let Some(scopes) = self.documents.get(&path) {
            return Ok(EffectiveAcl {
                scopes,
                source: AclSource::Document,
            });
        }
        let mut folder = path.parent();
        while let Some(dir) = folder {
            if let Some((key, scopes)) = self.folders.get_key_value(&dir) {
                return Ok(EffectiveAcl {
                    scopes,
                    source: AclSource::Folder(key),
                });
            }
            folder = dir.parent();
        }
        Ok(EffectiveAcl {
            scopes: &self.default,
            source: AclSource::Default,
        })
    }

    /// The effective scopes of a document (see [`AclTree::effective`]).
    pub fn effective_scopes(&self, document: &str) -> Result<ScopeSet, AuthzError> {
        self.effective(document).map(|e| e.scopes.clone())
    }
}

fn document_path(document: &str) -> Result<AclPath, AuthzError> {
    let path = AclPath::parse(document)?;
    if path.is_root() {
        return Err(AuthzError::InvalidPath {
            path: document.to_owned(),
            reason: "a document path must name a file, not the root",
        });
    }
    Ok(path)
}
