//! Permission snapshot ids for audit records.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::VisibleScopes;

/// Domain-separation tag (and format version) of the snapshot hash input.
const SNAPSHOT_DOMAIN: &[u8] = b"knowhub-authz/permission-snapshot/v1";

/// Names the exact permission state a request was evaluated under, so an audit record can say
/// "answered with snapshot X".
///
/// The id is BLAKE3 over a canonical, length-prefixed encoding of (account, role, the sorted
/// visible scopes, ACL tree version): equal inputs always give equal ids (across processes and
/// platforms), and changing any input changes the id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PermissionSnapshot {
    id: [u8; 32],
}

impl PermissionSnapshot {
    /// The snapshot of `visible` evaluated against ACL tree version `acl_version`.
    pub fn new(visible: &VisibleScopes, acl_version: u64) -> Self {
        let mut h = blake3::Hasher::new();
        h.update(SNAPSHOT_DOMAIN);
        let mut field = |bytes: &[u8]| {
            h.update(&(bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field(visible.account().as_str().as_bytes());
        field(visible.role().as_str().as_bytes());
        field(&(visible.scopes().len() as u64).to_le_bytes());
        for scope in visible.scopes() {
            field(scope.to_string().as_bytes());
        }
        field(&acl_version.to_le_bytes());
        Self {
            id: *h.finalize().as_bytes(),
        }
    }

    /// The raw 256-bit id.
    pub fn id(&self) -> &[u8; 32] {
        &self.id
    }

    /// The id as 64 lower-case hex digits (also the `Display` form).
    pub fn id_hex(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for PermissionSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.id {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}
