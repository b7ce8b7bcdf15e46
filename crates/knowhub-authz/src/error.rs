//! The crate's single error type.

/// Everything that can go wrong in the permission policy core.
///
/// All variants are about malformed *input* (ids, scopes, roles, paths, stored hashes) except
/// [`AuthzError::Random`], which reports a failure of the operating system's random source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthzError {
    /// An account/user/agent/team/project/org id was empty, too long or contained a
    /// forbidden character.
    #[error("invalid {kind} id {id:?}: {reason}")]
    InvalidId {
        /// Which kind of id (`"user"`, `"team"`, ...).
        kind: &'static str,
        /// The rejected input.
        id: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A scope string was not one of `user:<id>`, `agent:<id>`, `project:<id>`, `team:<id>`,
    /// `org:<id>` or `public`.
    #[error("invalid scope {input:?}: {reason}")]
    InvalidScope {
        /// The rejected input.
        input: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A role string was not `ROOT`, `ADMIN` or `USER` (in any case).
    #[error("invalid role {0:?}: expected ROOT, ADMIN or USER")]
    InvalidRole(String),
    /// A group role other than owner/admin/member/readonly.
    #[error("invalid group role {0:?} (expected owner, admin, member or readonly)")]
    InvalidGroupRole(String),
    /// A folder or document path was absolute, escaped its root or was otherwise unsafe.
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The rejected input.
        path: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A stored API-key hash was not 64 hexadecimal digits.
    #[error("invalid API key hash: {0}")]
    InvalidKeyHash(&'static str),
    /// The operating system's random number generator failed.
    #[error("system random number generator failed: {0}")]
    Random(String),
}
