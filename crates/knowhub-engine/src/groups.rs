//! Group spaces (seed 003 §13, phases 1–2): groups of users of one account — a channel, a
//! chat or a project — with members in roles (owner / admin / member / readonly, the policy
//! is `knowhub_authz::GroupRole`).
//!
//! A group is a scope, `group:<id>`, in every member's visible set, so everything the engine
//! already checks by scope works for it without a second system: folders and documents whose
//! ACL names `group:<id>` are the group's documents (`ctx://group/{space}/docs/…`), knowledge
//! items scoped to it are visible to members only, and group memories (see `memory.rs`) live
//! there. What membership adds beyond reading is decided here and in
//! [`Engine::grantable_scopes`]: only members who may write share into the space.
//!
//! Visibility follows seed 003 §13.4.1: a member sees their groups; an account ADMIN sees all
//! groups of the account; anyone else gets `NotFound` (a group's existence is not leaked).

use knowhub_authz::{AgentId, GroupId, GroupRole, RequestContext, Role, UserId};
use knowhub_store::{GroupMemberRecord, GroupSpaceCreation, GroupSpaceRecord};
use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};

use crate::knowledge::rfc3339;
use crate::permissions::Access;
use crate::{Engine, EngineError, Result};

/// The group types of seed 003 §13.3.1 (federation is out of scope).
pub const GROUP_KINDS: &[&str] = &["channel", "chat", "project"];
/// Longest group name accepted (characters).
const MAX_NAME: usize = 200;

/// A group to create.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct NewGroup {
    /// The group's id (e.g. a channel or chat id): letters, digits and `-_.:@`, no spaces.
    pub id: String,
    /// Display name; the id when empty.
    #[serde(default)]
    pub name: String,
    /// `channel` (default), `chat` or `project`.
    #[serde(default)]
    pub kind: Option<String>,
    /// First members. The creator is added as owner (an administrator who names another
    /// owner is not added).
    #[serde(default)]
    pub members: Vec<GroupMemberSpec>,
}

/// A member to add or change.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct GroupMemberSpec {
    pub user_id: String,
    /// The agent acting for the user in this group.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// `owner`, `admin`, `member` (default) or `readonly`.
    #[serde(default)]
    pub role: Option<String>,
}

/// A group space as callers see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupView {
    pub group_id: String,
    /// The `{space}` of `ctx://group/{space}/…`.
    pub group_space: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub created_by: String,
    /// RFC 3339.
    pub created_at: String,
    pub members: Vec<GroupMemberView>,
    /// The caller's role, `None` when they see the group as an administrator only.
    pub my_role: Option<String>,
}

/// One membership (seed 003 `GroupMembership`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupMemberView {
    pub group_id: String,
    pub account_id: String,
    pub user_id: String,
    pub agent_id: Option<String>,
    pub role: String,
    /// RFC 3339.
    pub joined_at: String,
}

/// What deleting a group removed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupDeleted {
    pub group_id: String,
    /// Group memories deleted with it (they lived only in the group's space).
    pub memories_deleted: usize,
}

/// Seed 003 §13.3.1: `md5("{account_id}:{group_id}")[:12]`.
pub fn group_space_name(account: &str, group: &str) -> String {
    let digest = Md5::digest(format!("{account}:{group}").as_bytes());
    digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

fn parse_group_id(id: &str) -> Result<GroupId> {
    GroupId::new(id).map_err(|e| EngineError::InvalidInput(e.to_string()))
}

fn parse_role(role: Option<&str>) -> Result<GroupRole> {
    match role {
        None | Some("") => Ok(GroupRole::Member),
        Some(r) => r
            .parse()
            .map_err(|e: knowhub_authz::AuthzError| EngineError::InvalidInput(e.to_string())),
    }
}

fn member_record(spec: &GroupMemberSpec) -> Result<GroupMemberRecord> {
    Ok(GroupMemberRecord {
        user: UserId::new(&spec.user_id).map_err(|e| EngineError::InvalidInput(e.to_string()))?,
        agent: spec
            .agent_id
            .as_deref()
            .filter(|a| !a.is_empty())
            .map(AgentId::new)
            .transpose()
            .map_err(|e| EngineError::InvalidInput(e.to_string()))?,
        role: parse_role(spec.role.as_deref())?,
        joined_at: 0,
    })
}

fn not_found(id: &str) -> EngineError {
    EngineError::NotFound(format!("no group {id}"))
}

impl Engine {
    fn member_view(&self, group: &GroupId, m: &GroupMemberRecord) -> GroupMemberView {
        GroupMemberView {
            group_id: group.to_string(),
            account_id: self.account.to_string(),
            user_id: m.user.to_string(),
            agent_id: m.agent.as_ref().map(ToString::to_string),
            role: m.role.to_string(),
            joined_at: rfc3339(m.joined_at / 1000),
        }
    }

    fn group_view(&self, g: &GroupSpaceRecord, my_role: Option<GroupRole>) -> Result<GroupView> {
        let members = self.store().group_members(&g.id)?;
        Ok(GroupView {
            group_id: g.id.to_string(),
            group_space: g.space.clone(),
            name: g.name.clone(),
            kind: g.kind.clone(),
            created_by: g.created_by.to_string(),
            created_at: rfc3339(g.created_at / 1000),
            members: members.iter().map(|m| self.member_view(&g.id, m)).collect(),
            my_role: my_role.map(|r| r.to_string()),
        })
    }

    /// The group and the caller's role in it, when the caller may see it (a member, or an
    /// administrator of the account); otherwise `NotFound`.
    pub(crate) fn visible_group(
        &self,
        access: &Access,
        id: &str,
    ) -> Result<(GroupSpaceRecord, Option<GroupRole>)> {
        let gid = GroupId::new(id).map_err(|_| not_found(id))?;
        if access.ctx.account != self.account && access.ctx.role != Role::Root {
            return Err(not_found(id));
        }
        let store = self.store();
        let group = store.group_space(&gid)?.ok_or_else(|| not_found(id))?;
        let role = store.group_role(&gid, &access.ctx.user)?;
        drop(store);
        if role.is_none() && self.require_admin(access, "").is_err() {
            return Err(not_found(id));
        }
        Ok((group, role))
    }

    /// The caller's role in group `id` (`None`: not a member). Used by write checks.
    pub(crate) fn group_role_of(&self, access: &Access, id: &GroupId) -> Result<Option<GroupRole>> {
        if access.ctx.account != self.account {
            return Ok(None);
        }
        Ok(self.store().group_role(id, &access.ctx.user)?)
    }

    /// Creates a group space (any signed-in user may; they become its owner).
    pub fn group_create(&self, ctx: &RequestContext, new: &NewGroup) -> Result<GroupView> {
        let access = self.authorize(ctx)?;
        if ctx.account != self.account {
            return Err(EngineError::Forbidden(
                "groups are created in your own account".into(),
            ));
        }
        let id = parse_group_id(new.id.trim())?;
        let kind = new.kind.as_deref().unwrap_or("channel");
        if !GROUP_KINDS.contains(&kind) {
            return Err(EngineError::InvalidInput(format!(
                "group type {kind:?} is not one of {}",
                GROUP_KINDS.join(", ")
            )));
        }
        let name = match new.name.trim() {
            "" => id.to_string(),
            n => n.to_owned(),
        };
        if name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
            return Err(EngineError::InvalidInput(format!(
                "a group name is at most {MAX_NAME} characters, without control characters"
            )));
        }
        let mut members: Vec<GroupMemberRecord> = Vec::new();
        for spec in &new.members {
            let record = member_record(spec)?;
            if members.iter().any(|m| m.user == record.user) {
                return Err(EngineError::InvalidInput(format!(
                    "{} is listed twice",
                    record.user
                )));
            }
            members.push(record);
        }
        let is_admin = self.require_admin(&access, "").is_ok();
        // Documents, items or resources already shared with `group:<id>` (e.g. by a group that
        // was deleted) would open to whoever creates a group of that id: only an
        // administrator, who sees them anyway, may.
        if self.store().group_space(&id)?.is_some() {
            return Err(EngineError::Conflict(format!(
                "a group {id} exists already"
            )));
        }
        if !is_admin && self.store().scope_in_use(&format!("group:{id}"))? {
            return Err(EngineError::Forbidden(format!(
                "data is already shared with group:{id}; only an administrator can create a group with this id"
            )));
        }
        let names_an_owner = members.iter().any(|m| m.role == GroupRole::Owner);
        match members.iter_mut().find(|m| m.user == ctx.user) {
            Some(me) => me.role = GroupRole::Owner,
            None if !(is_admin && names_an_owner) => members.insert(
                0,
                GroupMemberRecord {
                    user: ctx.user.clone(),
                    agent: ctx.agent.clone(),
                    role: GroupRole::Owner,
                    joined_at: 0,
                },
            ),
            None => {}
        }
        let record = GroupSpaceRecord {
            space: group_space_name(self.account.as_str(), id.as_str()),
            id: id.clone(),
            name,
            kind: kind.to_owned(),
            created_by: ctx.user.clone(),
            created_at: crate::queue::now_ms(),
        };
        match self.store().create_group_space(&record, &members)? {
            GroupSpaceCreation::Created => {}
            GroupSpaceCreation::Taken => {
                return Err(EngineError::Conflict(format!(
                    "a group {id} exists already"
                )));
            }
            GroupSpaceCreation::InactiveUser(user) => {
                return Err(EngineError::InvalidInput(format!(
                    "{user} is not a user of this account"
                )));
            }
        }
        self.audit_write(&access, "group.create", id.as_str(), true)?;
        let role = self.group_role_of(&access, &id)?;
        self.group_view(&record, role)
    }

    /// The groups the caller belongs to (administrators: every group of the account).
    pub fn groups(&self, ctx: &RequestContext) -> Result<Vec<GroupView>> {
        let access = self.authorize(ctx)?;
        if ctx.account != self.account && ctx.role != Role::Root {
            return Ok(Vec::new());
        }
        let all = self.require_admin(&access, "").is_ok();
        let records = self
            .store()
            .group_spaces((!all).then_some(&access.ctx.user))?;
        records
            .iter()
            .map(|g| {
                let role = self.group_role_of(&access, &g.id)?;
                self.group_view(g, role)
            })
            .collect()
    }

    /// One group with its members (members and administrators only).
    pub fn group(&self, ctx: &RequestContext, id: &str) -> Result<GroupView> {
        let access = self.authorize(ctx)?;
        let (group, role) = self.visible_group(&access, id)?;
        self.group_view(&group, role)
    }

    /// Adds a member or changes their role. Owners manage everyone, group admins everyone
    /// but owners, account administrators everyone; a group keeps at least one owner.
    pub fn group_set_member(
        &self,
        ctx: &RequestContext,
        id: &str,
        spec: &GroupMemberSpec,
    ) -> Result<GroupMemberView> {
        let access = self.authorize(ctx)?;
        let (group, my_role) = self.visible_group(&access, id)?;
        let mut record = member_record(spec)?;
        let current = self.store().group_role(&group.id, &record.user)?;
        self.check_manage(&access, my_role, current, Some(record.role), id)?;
        if current == Some(GroupRole::Owner) && record.role != GroupRole::Owner {
            self.keep_an_owner(&group.id, id)?;
        }
        if !self.store().upsert_group_member(&group.id, &record)? {
            return Err(EngineError::InvalidInput(format!(
                "{} is not a user of this account",
                record.user
            )));
        }
        self.audit_write(
            &access,
            "group.member",
            &format!("{id}/{}", record.user),
            true,
        )?;
        let stored = self.store().group_members(&group.id)?;
        if let Some(m) = stored.into_iter().find(|m| m.user == record.user) {
            record = m;
        }
        Ok(self.member_view(&group.id, &record))
    }

    /// Removes a member. Anyone may leave; removing someone else needs the same rights as
    /// changing them; the last owner cannot leave (delete the group instead).
    pub fn group_remove_member(&self, ctx: &RequestContext, id: &str, user: &str) -> Result<()> {
        let access = self.authorize(ctx)?;
        let (group, my_role) = self.visible_group(&access, id)?;
        let user = UserId::new(user).map_err(|e| EngineError::InvalidInput(e.to_string()))?;
        let current = self
            .store()
            .group_role(&group.id, &user)?
            .ok_or_else(|| EngineError::NotFound(format!("{user} is not a member of {id}")))?;
        if user != access.ctx.user {
            self.check_manage(&access, my_role, Some(current), None, id)?;
        }
        if current == GroupRole::Owner {
            self.keep_an_owner(&group.id, id)?;
        }
        self.store().remove_group_member(&group.id, &user)?;
        self.audit_write(&access, "group.leave", &format!("{id}/{user}"), true)
    }

    /// Deletes a group (its owner or an account administrator). The group's memories go with
    /// it; documents whose ACL names `group:<id>` stay (only administrators see them until
    /// their ACL is changed).
    pub fn group_delete(&self, ctx: &RequestContext, id: &str) -> Result<GroupDeleted> {
        let access = self.authorize(ctx)?;
        let (group, my_role) = self.visible_group(&access, id)?;
        let is_admin = self.require_admin(&access, "").is_ok();
        if !is_admin && !my_role.is_some_and(GroupRole::can_delete_group) {
            return Err(EngineError::Forbidden(format!(
                "only an owner of group {id} or an administrator can delete it"
            )));
        }
        let memories_deleted = self.delete_group_memories(&group.id)?;
        self.store().delete_group_space(&group.id)?;
        self.audit_write(&access, "group.delete", id, true)?;
        Ok(GroupDeleted {
            group_id: id.to_owned(),
            memories_deleted,
        })
    }

    fn check_manage(
        &self,
        access: &Access,
        my_role: Option<GroupRole>,
        current: Option<GroupRole>,
        next: Option<GroupRole>,
        id: &str,
    ) -> Result<()> {
        if self.require_admin(access, "").is_ok() {
            return Ok(());
        }
        let Some(mine) = my_role else {
            return Err(not_found(id));
        };
        let allowed =
            current.is_none_or(|c| mine.can_manage(c)) && next.is_none_or(|n| mine.can_manage(n));
        if allowed {
            Ok(())
        } else {
            Err(EngineError::Forbidden(format!(
                "as {mine} of group {id} you cannot change this membership"
            )))
        }
    }

    fn keep_an_owner(&self, group: &GroupId, id: &str) -> Result<()> {
        let owners = self
            .store()
            .group_members(group)?
            .iter()
            .filter(|m| m.role == GroupRole::Owner)
            .count();
        if owners <= 1 {
            return Err(EngineError::Conflict(format!(
                "group {id} needs an owner: make someone else owner first, or delete the group"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "groups_tests.rs"]
mod scenario_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn space_names_follow_the_seed() {
        // Python: hashlib.md5(b"acme:grp_abc123").hexdigest()[:12]
        let name = group_space_name("acme", "grp_abc123");
        assert_eq!(name, "6f15d996e21c");
        assert_ne!(name, group_space_name("other", "grp_abc123"));
        assert_eq!(name, group_space_name("acme", "grp_abc123"));
    }
}
