//! Roles inside a group space (seed 003 §13.3.1) and what each may do.
//!
//! Reading a group space's memories and documents needs membership in any role (the scope
//! `group:<id>` is in every member's visible set). Writing into the space, and managing its
//! members, depend on the role below. An account ADMIN (and ROOT) may do everything in any
//! group of the account without being a member, as with every other scope.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::AuthzError;

/// A member's role in one group space.
///
/// Displays and parses as `owner` / `admin` / `member` / `readonly` (parsing is
/// case-insensitive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum GroupRole {
    /// Created the group (or was made owner): manages members and roles, deletes the group.
    Owner,
    /// Manages members (not owners), writes memories.
    Admin,
    /// Reads and writes the group's memories.
    Member,
    /// Reads only.
    Readonly,
}

impl GroupRole {
    /// The canonical lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupRole::Owner => "owner",
            GroupRole::Admin => "admin",
            GroupRole::Member => "member",
            GroupRole::Readonly => "readonly",
        }
    }

    /// Whether this member may write memories into the group space.
    pub fn can_write(self) -> bool {
        !matches!(self, GroupRole::Readonly)
    }

    /// Whether this member may add, change or remove a member holding `target` (now, and
    /// after the change when a role is being granted): owners manage everyone, admins
    /// everyone but owners, others nobody.
    pub fn can_manage(self, target: GroupRole) -> bool {
        match self {
            GroupRole::Owner => true,
            GroupRole::Admin => target != GroupRole::Owner,
            GroupRole::Member | GroupRole::Readonly => false,
        }
    }

    /// Whether this member may delete the whole group.
    pub fn can_delete_group(self) -> bool {
        matches!(self, GroupRole::Owner)
    }
}

impl fmt::Display for GroupRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for GroupRole {
    type Err = AuthzError;
    fn from_str(s: &str) -> Result<Self, AuthzError> {
        [
            GroupRole::Owner,
            GroupRole::Admin,
            GroupRole::Member,
            GroupRole::Readonly,
        ]
        .into_iter()
        .find(|r| r.as_str().eq_ignore_ascii_case(s))
        .ok_or_else(|| AuthzError::InvalidGroupRole(s.to_owned()))
    }
}

impl TryFrom<String> for GroupRole {
    type Error = AuthzError;
    fn try_from(s: String) -> Result<Self, AuthzError> {
        s.parse()
    }
}

impl From<GroupRole> for String {
    fn from(role: GroupRole) -> String {
        role.as_str().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::GroupRole::{self, *};

    #[test]
    fn roles_round_trip_and_reject_unknown_names() {
        for role in [Owner, Admin, Member, Readonly] {
            assert_eq!(role.as_str().parse::<GroupRole>().ok(), Some(role));
        }
        assert_eq!("READONLY".parse::<GroupRole>().ok(), Some(Readonly));
        assert!("guest".parse::<GroupRole>().is_err());
    }

    #[test]
    fn what_each_role_may_do() {
        // (actor, target, may manage target)
        let table = [
            (Owner, Owner, true),
            (Owner, Readonly, true),
            (Admin, Owner, false),
            (Admin, Admin, true),
            (Admin, Member, true),
            (Member, Member, false),
            (Member, Readonly, false),
            (Readonly, Readonly, false),
        ];
        for (actor, target, expected) in table {
            assert_eq!(
                actor.can_manage(target),
                expected,
                "{actor} managing {target}"
            );
        }
        assert!(Member.can_write() && Admin.can_write() && Owner.can_write());
        assert!(!Readonly.can_write());
        assert!(Owner.can_delete_group() && !Admin.can_delete_group());
    }
}
