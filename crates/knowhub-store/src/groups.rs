//! Group spaces of one account (seed 003 §13): the groups, their members and each member's
//! role. Membership feeds [`Store::memberships`] (a member's visible scopes gain
//! `group:<id>`); what a role may do is `knowhub_authz::GroupRole`'s policy, applied by the
//! engine. Removing a user removes their group memberships in the same transaction.

use knowhub_authz::{AgentId, GroupId, GroupRole, UserId};
use rusqlite::{OptionalExtension, params};

use crate::{Result, Store, StoreError, now_ms};

/// A stored group space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSpaceRecord {
    pub id: GroupId,
    /// The space name used in `ctx://group/{space}/…` URIs (seed 003 §13.3.1:
    /// `md5("{account}:{group_id}")[:12]`), unique in the account.
    pub space: String,
    pub name: String,
    /// `channel`, `chat` or `project`.
    pub kind: String,
    pub created_by: UserId,
    /// Time since the Unix epoch, in milliseconds.
    pub created_at: i64,
}

/// What [`Store::create_group_space`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupSpaceCreation {
    Created,
    /// A group with that id or space name exists; nothing was stored.
    Taken,
    /// This member is not an active user; nothing was stored.
    InactiveUser(UserId),
}

/// One member of a group space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMemberRecord {
    pub user: UserId,
    /// The agent acting for the user in this group (seed 003's `agent_id`), when given.
    pub agent: Option<AgentId>,
    pub role: GroupRole,
    /// Time since the Unix epoch, in milliseconds.
    pub joined_at: i64,
}

fn corrupt(row: impl std::fmt::Display, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("{row}: {e}"))
}

type RawSpace = (String, String, String, String, String, i64);

fn space_record(raw: RawSpace) -> Result<GroupSpaceRecord> {
    let (id, space, name, kind, created_by, created_at) = raw;
    let row = format!("group_spaces row {id:?}");
    Ok(GroupSpaceRecord {
        id: GroupId::new(&id).map_err(|e| corrupt(&row, e))?,
        created_by: UserId::new(&created_by).map_err(|e| corrupt(&row, e))?,
        space,
        name,
        kind,
        created_at,
    })
}

const SPACE_COLUMNS: &str = "id, space, name, kind, created_by, created_at";

fn raw_space(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawSpace> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
    ))
}

impl Store {
    /// Creates a group space with its first members, in one transaction (all or nothing).
    pub fn create_group_space(
        &mut self,
        group: &GroupSpaceRecord,
        members: &[GroupMemberRecord],
    ) -> Result<GroupSpaceCreation> {
        let tx = self.conn.transaction()?;
        let n = tx.execute(
            "INSERT INTO group_spaces (id, space, name, kind, created_by, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
            params![
                group.id.as_str(),
                group.space,
                group.name,
                group.kind,
                group.created_by.as_str(),
                group.created_at
            ],
        )?;
        if n == 0 {
            return Ok(GroupSpaceCreation::Taken);
        }
        for member in members {
            if !upsert_member(&tx, &group.id, member)? {
                return Ok(GroupSpaceCreation::InactiveUser(member.user.clone()));
            }
        }
        tx.commit()?;
        Ok(GroupSpaceCreation::Created)
    }

    /// One group space by id.
    pub fn group_space(&self, id: &GroupId) -> Result<Option<GroupSpaceRecord>> {
        self.conn
            .query_row(
                &format!("SELECT {SPACE_COLUMNS} FROM group_spaces WHERE id = ?1"),
                params![id.as_str()],
                raw_space,
            )
            .optional()?
            .map(space_record)
            .transpose()
    }

    /// One group space by its space name (the `{space}` of `ctx://group/{space}/…`).
    pub fn group_space_by_name(&self, space: &str) -> Result<Option<GroupSpaceRecord>> {
        self.conn
            .query_row(
                &format!("SELECT {SPACE_COLUMNS} FROM group_spaces WHERE space = ?1"),
                params![space],
                raw_space,
            )
            .optional()?
            .map(space_record)
            .transpose()
    }

    /// Group spaces, sorted by id: all of the account's (`member = None`) or those `member`
    /// belongs to.
    pub fn group_spaces(&self, member: Option<&UserId>) -> Result<Vec<GroupSpaceRecord>> {
        let rows = match member {
            None => {
                let mut stmt = self.conn.prepare(&format!(
                    "SELECT {SPACE_COLUMNS} FROM group_spaces ORDER BY id"
                ))?;
                stmt.query_map([], raw_space)?
                    .collect::<rusqlite::Result<Vec<_>>>()?
            }
            Some(user) => {
                let mut stmt = self.conn.prepare(
                    "SELECT g.id, g.space, g.name, g.kind, g.created_by, g.created_at
                     FROM group_spaces g JOIN group_members m ON m.group_id = g.id
                     WHERE m.user_id = ?1 ORDER BY g.id",
                )?;
                stmt.query_map(params![user.as_str()], raw_space)?
                    .collect::<rusqlite::Result<Vec<_>>>()?
            }
        };
        rows.into_iter().map(space_record).collect()
    }

    /// The members of a group, owners first, then by user id.
    pub fn group_members(&self, id: &GroupId) -> Result<Vec<GroupMemberRecord>> {
        let mut stmt = self.conn.prepare(
            "SELECT user_id, agent_id, role, joined_at FROM group_members WHERE group_id = ?1
             ORDER BY CASE role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 WHEN 'member' THEN 2
             ELSE 3 END, user_id",
        )?;
        let rows = stmt
            .query_map(params![id.as_str()], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i64>(3)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        rows.into_iter()
            .map(|(user, agent, role, joined_at)| {
                let row = format!("group_members row ({id}, {user})");
                Ok(GroupMemberRecord {
                    user: UserId::new(&user).map_err(|e| corrupt(&row, e))?,
                    agent: agent
                        .map(|a| AgentId::new(&a))
                        .transpose()
                        .map_err(|e| corrupt(&row, e))?,
                    role: role.parse().map_err(|e| corrupt(&row, e))?,
                    joined_at,
                })
            })
            .collect()
    }

    /// The role of `user` in group `id`, `None` for a non-member.
    pub fn group_role(&self, id: &GroupId, user: &UserId) -> Result<Option<GroupRole>> {
        let role: Option<String> = self
            .conn
            .query_row(
                "SELECT role FROM group_members WHERE group_id = ?1 AND user_id = ?2",
                params![id.as_str(), user.as_str()],
                |r| r.get(0),
            )
            .optional()?;
        role.map(|r| {
            r.parse()
                .map_err(|e| corrupt(format!("group_members row ({id}, {user})"), e))
        })
        .transpose()
    }

    /// Adds a member or changes their role/agent (keeping when they joined). Returns `false`
    /// when the group or an active user of that id does not exist.
    pub fn upsert_group_member(
        &mut self,
        id: &GroupId,
        member: &GroupMemberRecord,
    ) -> Result<bool> {
        let tx = self.conn.transaction()?;
        let exists: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM group_spaces WHERE id = ?1)",
            params![id.as_str()],
            |r| r.get(0),
        )?;
        if !exists {
            return Ok(false);
        }
        let done = upsert_member(&tx, id, member)?;
        tx.commit()?;
        Ok(done)
    }

    /// Removes a member; returns whether they were one.
    pub fn remove_group_member(&mut self, id: &GroupId, user: &UserId) -> Result<bool> {
        let n = self.conn.execute(
            "DELETE FROM group_members WHERE group_id = ?1 AND user_id = ?2",
            params![id.as_str(), user.as_str()],
        )?;
        Ok(n == 1)
    }

    /// Deletes a group and its memberships; returns whether it existed.
    pub fn delete_group_space(&mut self, id: &GroupId) -> Result<bool> {
        let n = self.conn.execute(
            "DELETE FROM group_spaces WHERE id = ?1",
            params![id.as_str()],
        )?;
        Ok(n == 1)
    }

    /// Whether any stored data is shared with `scope` (a folder/document ACL, a knowledge item
    /// or a resource): a group created under that id would grant its members access to it.
    pub fn scope_in_use(&self, scope: &str) -> Result<bool> {
        Ok(self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM acl_entries WHERE ',' || scopes || ',' LIKE '%,' || ?1 || ',%')
                 OR EXISTS (SELECT 1 FROM knowledge_items k, json_each(k.scopes) s WHERE s.value = ?1)
                 OR EXISTS (SELECT 1 FROM resources r, json_each(r.scopes) s WHERE s.value = ?1)",
            params![scope],
            |r| r.get(0),
        )?)
    }

    /// The ids of the groups `user` belongs to, sorted (for [`Store::memberships`]).
    pub(crate) fn group_ids_of(&self, user: &UserId) -> Result<Vec<GroupId>> {
        let mut stmt = self
            .conn
            .prepare("SELECT group_id FROM group_members WHERE user_id = ?1 ORDER BY group_id")?;
        let rows = stmt
            .query_map(params![user.as_str()], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        rows.into_iter()
            .map(|g| {
                GroupId::new(&g).map_err(|e| corrupt(format!("group_members row ({g}, {user})"), e))
            })
            .collect()
    }
}

/// Inserts or updates one membership inside `tx`; `false` when the user is not active.
fn upsert_member(
    tx: &rusqlite::Transaction<'_>,
    id: &GroupId,
    member: &GroupMemberRecord,
) -> Result<bool> {
    let n = tx.execute(
        "INSERT INTO group_members (group_id, user_id, agent_id, role, joined_at)
         SELECT ?1, ?2, ?3, ?4, ?5
         WHERE EXISTS (SELECT 1 FROM users WHERE id = ?2 AND removed_at IS NULL)
         ON CONFLICT (group_id, user_id) DO UPDATE SET agent_id = excluded.agent_id,
             role = excluded.role",
        params![
            id.as_str(),
            member.user.as_str(),
            member.agent.as_ref().map(AgentId::as_str),
            member.role.as_str(),
            if member.joined_at > 0 {
                member.joined_at
            } else {
                now_ms()
            }
        ],
    )?;
    Ok(n == 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use knowhub_authz::Role;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store =
            Store::open(&dir.path().join("s.sqlite"), &dir.path().join("t.sqlite")).expect("open");
        (dir, store)
    }

    fn user(s: &str) -> UserId {
        UserId::new(s).expect("user")
    }

    fn member(u: &str, role: GroupRole) -> GroupMemberRecord {
        GroupMemberRecord {
            user: user(u),
            agent: None,
            role,
            joined_at: 0,
        }
    }

    fn group(id: &str) -> GroupSpaceRecord {
        GroupSpaceRecord {
            id: GroupId::new(id).expect("group"),
            space: format!("space-{id}"),
            name: id.to_uppercase(),
            kind: "channel".into(),
            created_by: user("alice"),
            created_at: 1,
        }
    }

    #[test]
    fn members_see_the_group_in_their_memberships_until_removed() {
        let (_dir, mut s) = store();
        for u in ["alice", "bob", "carol"] {
            s.add_user(&user(u), u, Role::User).expect("user");
        }
        let g = group("alpha");
        assert_eq!(
            s.create_group_space(
                &g,
                &[
                    member("alice", GroupRole::Owner),
                    member("bob", GroupRole::Readonly)
                ]
            )
            .expect("create"),
            GroupSpaceCreation::Created
        );
        assert_eq!(
            s.create_group_space(&g, &[]).expect("again"),
            GroupSpaceCreation::Taken
        );
        assert_eq!(
            s.memberships(&user("bob")).expect("m").groups,
            vec![g.id.clone()]
        );
        assert!(s.memberships(&user("carol")).expect("m").groups.is_empty());
        assert_eq!(
            s.group_role(&g.id, &user("bob")).expect("role"),
            Some(GroupRole::Readonly)
        );
        assert_eq!(
            s.group_space_by_name("space-alpha").expect("by name"),
            Some(g.clone())
        );
        assert_eq!(s.group_spaces(Some(&user("carol"))).expect("list").len(), 0);

        // Role change keeps one row; members listed owners first.
        assert!(
            s.upsert_group_member(&g.id, &member("bob", GroupRole::Member))
                .expect("up")
        );
        assert!(
            s.upsert_group_member(&g.id, &member("carol", GroupRole::Admin))
                .expect("up")
        );
        let roles: Vec<_> = s
            .group_members(&g.id)
            .expect("members")
            .into_iter()
            .map(|m| (m.user.to_string(), m.role))
            .collect();
        assert_eq!(
            roles,
            vec![
                ("alice".into(), GroupRole::Owner),
                ("carol".into(), GroupRole::Admin),
                ("bob".into(), GroupRole::Member)
            ]
        );

        // A removed user leaves every group; an unknown one cannot join.
        assert!(s.remove_user(&user("carol")).expect("remove"));
        assert_eq!(s.group_role(&g.id, &user("carol")).expect("role"), None);
        assert!(
            !s.upsert_group_member(&g.id, &member("nobody", GroupRole::Member))
                .expect("up")
        );
        assert_eq!(
            s.create_group_space(&group("beta"), &[member("nobody", GroupRole::Owner)])
                .expect("create"),
            GroupSpaceCreation::InactiveUser(user("nobody"))
        );
        assert_eq!(
            s.group_space(&GroupId::new("beta").expect("id"))
                .expect("get"),
            None
        );

        assert!(!s.scope_in_use("group:alpha").expect("in use"));
        assert!(s.remove_group_member(&g.id, &user("bob")).expect("rm"));
        assert!(s.delete_group_space(&g.id).expect("delete"));
        assert!(s.memberships(&user("alice")).expect("m").groups.is_empty());
        assert!(!s.delete_group_space(&g.id).expect("again"));
    }
}
