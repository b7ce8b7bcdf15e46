//! Group spaces on a team server (seed 003 §13.8): members with roles sharing memories and
//! documents (`group:<id>`). Who may do what is the server's decision; a group the caller may
//! not see is 404.

use serde::{Deserialize, Serialize};

use crate::{Client, Result, encode, to_json};

/// One membership of a group space.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupMember {
    pub group_id: String,
    pub user_id: String,
    /// The agent acting for the user in this group.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// `owner`, `admin`, `member` or `readonly`.
    pub role: String,
    /// RFC 3339.
    pub joined_at: String,
}

/// A group space with its members.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupSpace {
    pub group_id: String,
    /// The `{space}` of `ctx://group/{space}/…`.
    pub group_space: String,
    pub name: String,
    /// `channel`, `chat` or `project`.
    #[serde(rename = "type")]
    pub kind: String,
    pub created_by: String,
    pub created_at: String,
    pub members: Vec<GroupMember>,
    /// The caller's role (`None`: they see it as an administrator only).
    #[serde(default)]
    pub my_role: Option<String>,
}

/// A member to add (or whose role to change).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct NewMember {
    pub user_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// `owner`, `admin`, `member` (the server's default) or `readonly`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

/// A group space to create; the caller becomes its owner.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct NewGroupSpace {
    pub group_id: String,
    pub name: String,
    /// `channel` (the server's default), `chat` or `project`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub members: Vec<NewMember>,
}

#[derive(Deserialize)]
struct GroupList {
    groups: Vec<GroupSpace>,
}

#[derive(Deserialize)]
struct Membership {
    membership: GroupMember,
}

#[derive(Deserialize)]
struct Deleted {
    memories_deleted: usize,
}

impl Client {
    /// The caller's group spaces (administrators: every one of the account).
    pub fn group_spaces(&self) -> Result<Vec<GroupSpace>> {
        let response = self.send("GET", "/api/v1/groups", None)?;
        Ok(self.json::<GroupList>(response)?.groups)
    }

    /// One group space with its members.
    pub fn group_space(&self, id: &str) -> Result<GroupSpace> {
        let response = self.send("GET", &format!("/api/v1/groups/{}", encode(id)), None)?;
        self.json(response)
    }

    pub fn create_group_space(&self, group: &NewGroupSpace) -> Result<GroupSpace> {
        let response = self.send("POST", "/api/v1/groups", Some(to_json(group)?))?;
        self.json(response)
    }

    /// Adds a member to a group space, or changes their role.
    pub fn set_group_member(&self, id: &str, member: &NewMember) -> Result<GroupMember> {
        let path = format!("/api/v1/groups/{}/members", encode(id));
        let response = self.send("POST", &path, Some(to_json(member)?))?;
        Ok(self.json::<Membership>(response)?.membership)
    }

    /// Removes a member (the caller's own id: leaves the group).
    pub fn remove_group_member(&self, id: &str, user: &str) -> Result<()> {
        let path = format!("/api/v1/groups/{}/members/{}", encode(id), encode(user));
        let response = self.send("DELETE", &path, None)?;
        self.json::<serde_json::Value>(response).map(drop)
    }

    /// Deletes a group space and its shared memories; returns how many memories went with it.
    pub fn delete_group_space(&self, id: &str) -> Result<usize> {
        let response = self.send("DELETE", &format!("/api/v1/groups/{}", encode(id)), None)?;
        Ok(self.json::<Deleted>(response)?.memories_deleted)
    }
}
