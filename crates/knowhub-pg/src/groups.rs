//! Group spaces in the team database: the SQLite store's groups domain
//! (`knowhub_store::GroupStore`): the groups, their members and each member's role.
//!
//! Membership feeds [`PgIdentity::memberships`](crate::PgIdentity::memberships) (a member's
//! visible scopes gain `group:<id>`), so a trigger on `group_members` bumps
//! `permission_version` in the writing transaction, and removing a user removes their group
//! memberships. What a role may do is `knowhub_authz::GroupRole`'s policy, applied by the
//! engine. Text is sorted with `COLLATE "C"`, the byte order SQLite sorts by, whatever the
//! database's locale.

use knowhub_authz::{AgentId, GroupId, GroupRole, UserId};
use knowhub_store::backend::GroupStore;
use knowhub_store::{GroupMemberRecord, GroupSpaceCreation, GroupSpaceRecord, Result, StoreError};
use postgres::{Row, Transaction};

use crate::now_ms;
use crate::store::{PgStore, pg};

fn corrupt(row: impl std::fmt::Display, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("{row}: {e}"))
}

const SPACE_COLUMNS: &str = "g.id, g.space, g.name, g.kind, g.created_by, g.created_at";

fn space_record(r: &Row) -> Result<GroupSpaceRecord> {
    let id: &str = r.get(0);
    let created_by: &str = r.get(4);
    let row = format!("group_spaces row {id:?}");
    Ok(GroupSpaceRecord {
        id: GroupId::new(id).map_err(|e| corrupt(&row, e))?,
        created_by: UserId::new(created_by).map_err(|e| corrupt(&row, e))?,
        space: r.get(1),
        name: r.get(2),
        kind: r.get(3),
        created_at: r.get(5),
    })
}

/// Inserts or updates one membership inside `tx`; `false` when the user is not active.
fn upsert_member(
    tx: &mut Transaction<'_>,
    id: &GroupId,
    member: &GroupMemberRecord,
) -> Result<bool> {
    // Locks the user's row: a concurrent removal waits for this transaction (and then deletes
    // the new membership too), or wins and this finds the user removed.
    let active = tx
        .query_opt(
            "SELECT 1 FROM users WHERE id = $1 AND removed_at IS NULL FOR SHARE",
            &[&member.user.as_str()],
        )
        .map_err(pg)?
        .is_some();
    if !active {
        return Ok(false);
    }
    let joined_at = if member.joined_at > 0 {
        member.joined_at
    } else {
        now_ms()
    };
    let n = tx
        .execute(
            "INSERT INTO group_members (group_id, user_id, agent_id, role, joined_at)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (group_id, user_id) DO UPDATE SET agent_id = excluded.agent_id,
                 role = excluded.role",
            &[
                &id.as_str(),
                &member.user.as_str(),
                &member.agent.as_ref().map(AgentId::as_str),
                &member.role.as_str(),
                &joined_at,
            ],
        )
        .map_err(pg)?;
    Ok(n == 1)
}

impl GroupStore for PgStore {
    fn group_space(&self, id: &GroupId) -> Result<Option<GroupSpaceRecord>> {
        let mut client = self.db.client()?;
        client
            .query_opt(
                &format!("SELECT {SPACE_COLUMNS} FROM group_spaces g WHERE g.id = $1"),
                &[&id.as_str()],
            )
            .map_err(pg)?
            .as_ref()
            .map(space_record)
            .transpose()
    }

    fn group_space_by_name(&self, space: &str) -> Result<Option<GroupSpaceRecord>> {
        let mut client = self.db.client()?;
        client
            .query_opt(
                &format!("SELECT {SPACE_COLUMNS} FROM group_spaces g WHERE g.space = $1"),
                &[&space],
            )
            .map_err(pg)?
            .as_ref()
            .map(space_record)
            .transpose()
    }

    fn group_spaces(&self, member: Option<&UserId>) -> Result<Vec<GroupSpaceRecord>> {
        let mut client = self.db.client()?;
        let rows = match member {
            None => client.query(
                &format!("SELECT {SPACE_COLUMNS} FROM group_spaces g ORDER BY g.id COLLATE \"C\""),
                &[],
            ),
            Some(user) => client.query(
                &format!(
                    "SELECT {SPACE_COLUMNS} FROM group_spaces g
                     JOIN group_members m ON m.group_id = g.id
                     WHERE m.user_id = $1 ORDER BY g.id COLLATE \"C\""
                ),
                &[&user.as_str()],
            ),
        }
        .map_err(pg)?;
        rows.iter().map(space_record).collect()
    }

    fn group_members(&self, id: &GroupId) -> Result<Vec<GroupMemberRecord>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                "SELECT user_id, agent_id, role, joined_at FROM group_members WHERE group_id = $1
                 ORDER BY CASE role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 WHEN 'member' THEN 2
                 ELSE 3 END, user_id COLLATE \"C\"",
                &[&id.as_str()],
            )
            .map_err(pg)?;
        rows.iter()
            .map(|r| {
                let user: &str = r.get(0);
                let agent: Option<&str> = r.get(1);
                let role: &str = r.get(2);
                let row = format!("group_members row ({id}, {user})");
                Ok(GroupMemberRecord {
                    user: UserId::new(user).map_err(|e| corrupt(&row, e))?,
                    agent: agent
                        .map(AgentId::new)
                        .transpose()
                        .map_err(|e| corrupt(&row, e))?,
                    role: role.parse().map_err(|e| corrupt(&row, e))?,
                    joined_at: r.get(3),
                })
            })
            .collect()
    }

    fn group_role(&self, id: &GroupId, user: &UserId) -> Result<Option<GroupRole>> {
        let mut client = self.db.client()?;
        let row = client
            .query_opt(
                "SELECT role FROM group_members WHERE group_id = $1 AND user_id = $2",
                &[&id.as_str(), &user.as_str()],
            )
            .map_err(pg)?;
        row.map(|r| {
            r.get::<_, &str>(0)
                .parse()
                .map_err(|e| corrupt(format!("group_members row ({id}, {user})"), e))
        })
        .transpose()
    }

    fn scope_in_use(&self, scope: &str) -> Result<bool> {
        let mut client = self.db.client()?;
        // The ACL test is SQLite's `LIKE` exactly: `%` and `_` in `scope` are wildcards, there
        // is no escape character, and only ASCII letters match case-insensitively.
        let row = client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM acl_entries
                        WHERE translate(',' || scopes || ',', $2, $3)
                              LIKE '%,' || translate($1, $2, $3) || ',%' ESCAPE '')
                     OR EXISTS (SELECT 1 FROM knowledge_items WHERE scopes ? $1)
                     OR EXISTS (SELECT 1 FROM resources WHERE scopes ? $1)",
                &[
                    &scope,
                    &"ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                    &"abcdefghijklmnopqrstuvwxyz",
                ],
            )
            .map_err(pg)?;
        Ok(row.get(0))
    }

    fn create_group_space(
        &mut self,
        group: &GroupSpaceRecord,
        members: &[GroupMemberRecord],
    ) -> Result<GroupSpaceCreation> {
        let mut client = self.db.client()?;
        let mut tx = client.transaction().map_err(pg)?;
        let n = tx
            .execute(
                "INSERT INTO group_spaces (id, space, name, kind, created_by, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
                &[
                    &group.id.as_str(),
                    &group.space,
                    &group.name,
                    &group.kind,
                    &group.created_by.as_str(),
                    &group.created_at,
                ],
            )
            .map_err(pg)?;
        if n == 0 {
            return Ok(GroupSpaceCreation::Taken);
        }
        for member in members {
            if !upsert_member(&mut tx, &group.id, member)? {
                // Dropping the transaction rolls the group back.
                return Ok(GroupSpaceCreation::InactiveUser(member.user.clone()));
            }
        }
        tx.commit().map_err(pg)?;
        Ok(GroupSpaceCreation::Created)
    }

    fn upsert_group_member(&mut self, id: &GroupId, member: &GroupMemberRecord) -> Result<bool> {
        let mut client = self.db.client()?;
        let mut tx = client.transaction().map_err(pg)?;
        // The key-share lock keeps the group from being deleted until the member is stored.
        let exists = tx
            .query_opt(
                "SELECT 1 FROM group_spaces WHERE id = $1 FOR KEY SHARE",
                &[&id.as_str()],
            )
            .map_err(pg)?
            .is_some();
        if !exists {
            return Ok(false);
        }
        let done = upsert_member(&mut tx, id, member)?;
        tx.commit().map_err(pg)?;
        Ok(done)
    }

    fn remove_group_member(&mut self, id: &GroupId, user: &UserId) -> Result<bool> {
        let mut client = self.db.client()?;
        let n = client
            .execute(
                "DELETE FROM group_members WHERE group_id = $1 AND user_id = $2",
                &[&id.as_str(), &user.as_str()],
            )
            .map_err(pg)?;
        Ok(n == 1)
    }

    fn delete_group_space(&mut self, id: &GroupId) -> Result<bool> {
        let mut client = self.db.client()?;
        let n = client
            .execute("DELETE FROM group_spaces WHERE id = $1", &[&id.as_str()])
            .map_err(pg)?;
        Ok(n == 1)
    }
}
