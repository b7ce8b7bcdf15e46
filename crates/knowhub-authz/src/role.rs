//! Roles.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::AuthzError;

/// What a request's principal may do beyond its own scopes.
///
/// Displays as `ROOT`/`ADMIN`/`USER`; parses case-insensitively. Serialises as the
/// upper-case string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Role {
    /// Sees and writes everything, in every account.
    Root,
    /// Sees and writes everything within their own account.
    Admin,
    /// Sees what their scopes allow; writes only what they own.
    User,
}

impl Role {
    /// The canonical upper-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Root => "ROOT",
            Role::Admin => "ADMIN",
            Role::User => "USER",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = AuthzError;
    fn from_str(s: &str) -> Result<Self, AuthzError> {
        if s.eq_ignore_ascii_case("root") {
            Ok(Role::Root)
        } else if s.eq_ignore_ascii_case("admin") {
            Ok(Role::Admin)
        } else if s.eq_ignore_ascii_case("user") {
            Ok(Role::User)
        } else {
            Err(AuthzError::InvalidRole(s.to_owned()))
        }
    }
}

impl TryFrom<String> for Role {
    type Error = AuthzError;
    fn try_from(s: String) -> Result<Self, AuthzError> {
        s.parse()
    }
}

impl From<Role> for String {
    fn from(role: Role) -> String {
        role.as_str().to_owned()
    }
}
