//! Validated identifier newtypes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::AuthzError;

/// Longest id accepted, in bytes.
pub const MAX_ID_LEN: usize = 256;

/// Checks the id rules shared by every id type: non-empty, at most [`MAX_ID_LEN`] bytes, no
/// whitespace, no commas (scope lists are comma-separated) and no control characters.
pub(crate) fn validate_id(kind: &'static str, id: &str) -> Result<(), AuthzError> {
    let fail = |reason| {
        Err(AuthzError::InvalidId {
            kind,
            id: id.to_owned(),
            reason,
        })
    };
    if id.is_empty() {
        return fail("must not be empty");
    }
    if id.len() > MAX_ID_LEN {
        return fail("longer than 256 bytes");
    }
    if id.chars().any(char::is_whitespace) {
        return fail("must not contain whitespace");
    }
    if id.contains(',') {
        return fail("must not contain ','");
    }
    if id.chars().any(char::is_control) {
        return fail("must not contain control characters");
    }
    Ok(())
}

macro_rules! id_type {
    ($(#[$meta:meta])* $name:ident, $kind:literal) => {
        $(#[$meta])*
        ///
        /// Non-empty, at most 256 bytes, without whitespace, commas or control characters.
        /// Serialises as its plain string.
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Validates and wraps an id.
            pub fn new(id: impl Into<String>) -> Result<Self, AuthzError> {
                let id = id.into();
                validate_id($kind, &id)?;
                Ok(Self(id))
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $name {
            type Err = AuthzError;
            fn from_str(s: &str) -> Result<Self, AuthzError> {
                Self::new(s)
            }
        }

        impl TryFrom<String> for $name {
            type Error = AuthzError;
            fn try_from(s: String) -> Result<Self, AuthzError> {
                Self::new(s)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(
    /// A tenant account: the outermost isolation boundary. Only ROOT crosses accounts.
    AccountId,
    "account"
);
id_type!(
    /// A human user within an account.
    UserId,
    "user"
);
id_type!(
    /// An agent acting for a user.
    AgentId,
    "agent"
);
id_type!(
    /// A project a user can be a member of.
    ProjectId,
    "project"
);
id_type!(
    /// A team a user can be a member of.
    TeamId,
    "team"
);
id_type!(
    /// An organisation a user can be a member of.
    OrgId,
    "org"
);
id_type!(
    /// A group space (seed 003 §13): a channel, chat or project whose members share memories
    /// and documents, with roles of their own ([`GroupRole`](crate::GroupRole)).
    GroupId,
    "group"
);
