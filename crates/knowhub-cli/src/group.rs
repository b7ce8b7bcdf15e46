//! `knowhub group …`: group spaces (seed 003 §13) — create, list, show, add or change a
//! member, remove one (or leave), delete. Their shared memories are `knowhub memory … --group`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use knowhub_engine::{GroupMemberSpec, GroupView, NewGroup};

use crate::{IdentityArgs, ModelArgs, open_session};

#[derive(Debug, Subcommand)]
pub(crate) enum GroupCommand {
    /// Create a group space; you become its owner.
    Create {
        /// The group's id (e.g. a channel or chat id).
        id: String,
        #[arg(long, default_value = "")]
        name: String,
        /// channel, chat or project.
        #[arg(long = "type", default_value = "channel")]
        kind: String,
        /// Members as USER or USER:ROLE (role: owner, admin, member, readonly).
        #[arg(long = "member", value_name = "USER[:ROLE]")]
        members: Vec<String>,
    },
    /// Your groups (administrators: all of the account's).
    List,
    /// One group with its members.
    Show { id: String },
    /// Add a member or change their role.
    Add {
        id: String,
        user: String,
        /// owner, admin, member or readonly.
        #[arg(long, default_value = "member")]
        role: String,
        /// The agent acting for the user in this group.
        #[arg(long)]
        agent: Option<String>,
    },
    /// Remove a member (your own id: leave the group).
    Remove { id: String, user: String },
    /// Delete the group and its shared memories.
    Delete { id: String },
}

fn member(spec: &str) -> GroupMemberSpec {
    let (user, role) = match spec.split_once(':') {
        Some((u, r)) => (u, Some(r.to_owned())),
        None => (spec, None),
    };
    GroupMemberSpec {
        user_id: user.to_owned(),
        agent_id: None,
        role,
    }
}

fn print_group(g: &GroupView) {
    print_header(
        &g.group_id,
        &g.name,
        &g.kind,
        &g.group_space,
        g.my_role.as_deref(),
    );
    for m in &g.members {
        print_member(&m.role, &m.user_id, m.agent_id.as_deref());
    }
}

fn print_header(id: &str, name: &str, kind: &str, space: &str, my_role: Option<&str>) {
    let mine = my_role.map(|r| format!(", you: {r}")).unwrap_or_default();
    println!("{id} — {name} ({kind}, space {space}){mine}");
}

fn print_member(role: &str, user: &str, agent: Option<&str>) {
    let agent = agent.map(|a| format!(" via {a}")).unwrap_or_default();
    println!("  {role:<9} {user}{agent}");
}

pub(crate) fn run(
    cmd: GroupCommand,
    place: crate::Place,
    identity: &IdentityArgs,
    as_json: bool,
) -> Result<ExitCode> {
    let s = open_session(place, &ModelArgs::keyword_only(), identity)?;
    let (engine, ctx) = (&s.engine, &s.ctx);
    let show = |g: &GroupView| -> Result<()> {
        if as_json {
            println!("{}", serde_json::to_string_pretty(g)?);
        } else {
            print_group(g);
        }
        Ok(())
    };
    match cmd {
        GroupCommand::Create {
            id,
            name,
            kind,
            members,
        } => {
            let g = engine.group_create(
                ctx,
                &NewGroup {
                    id,
                    name,
                    kind: Some(kind),
                    members: members.iter().map(|m| member(m)).collect(),
                },
            )?;
            show(&g)?;
        }
        GroupCommand::List => {
            let groups = engine.groups(ctx)?;
            if as_json {
                println!("{}", serde_json::to_string_pretty(&groups)?);
            } else if groups.is_empty() {
                println!("no groups");
            } else {
                for g in &groups {
                    print_group(g);
                }
            }
        }
        GroupCommand::Show { id } => show(&engine.group(ctx, &id)?)?,
        GroupCommand::Add {
            id,
            user,
            role,
            agent,
        } => {
            let m = engine.group_set_member(
                ctx,
                &id,
                &GroupMemberSpec {
                    user_id: user,
                    agent_id: agent,
                    role: Some(role),
                },
            )?;
            if as_json {
                println!("{}", serde_json::to_string_pretty(&m)?);
            } else {
                println!("{} is {} of {}", m.user_id, m.role, m.group_id);
            }
        }
        GroupCommand::Remove { id, user } => {
            engine.group_remove_member(ctx, &id, &user)?;
            println!("{user} left {id}");
        }
        GroupCommand::Delete { id } => {
            let d = engine.group_delete(ctx, &id)?;
            println!(
                "deleted group {} and {} shared memor{}",
                d.group_id,
                d.memories_deleted,
                if d.memories_deleted == 1 { "y" } else { "ies" }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `knowhub --server … group …`: the same commands on a team server's group spaces.
pub(crate) fn remote(
    client: &knowhub_client::Client,
    cmd: GroupCommand,
    as_json: bool,
) -> Result<ExitCode> {
    use knowhub_client::{GroupSpace, NewGroupSpace, NewMember};
    let new_member = |spec: &str| {
        let m = member(spec);
        NewMember {
            user_id: m.user_id,
            agent_id: m.agent_id,
            role: m.role,
        }
    };
    let show = |g: &GroupSpace| -> Result<()> {
        if as_json {
            println!("{}", serde_json::to_string_pretty(g)?);
        } else {
            print_space(g);
        }
        Ok(())
    };
    match cmd {
        GroupCommand::Create {
            id,
            name,
            kind,
            members,
        } => {
            let g = client.create_group_space(&NewGroupSpace {
                group_id: id,
                name,
                kind: Some(kind),
                members: members.iter().map(|m| new_member(m)).collect(),
            })?;
            show(&g)?;
        }
        GroupCommand::List => {
            let groups = client.group_spaces()?;
            if as_json {
                println!("{}", serde_json::to_string_pretty(&groups)?);
            } else if groups.is_empty() {
                println!("no groups");
            } else {
                groups.iter().for_each(print_space);
            }
        }
        GroupCommand::Show { id } => show(&client.group_space(&id)?)?,
        GroupCommand::Add {
            id,
            user,
            role,
            agent,
        } => {
            let m = client.set_group_member(
                &id,
                &NewMember {
                    user_id: user,
                    agent_id: agent,
                    role: Some(role),
                },
            )?;
            if as_json {
                println!("{}", serde_json::to_string_pretty(&m)?);
            } else {
                println!("{} is {} of {}", m.user_id, m.role, m.group_id);
            }
        }
        GroupCommand::Remove { id, user } => {
            client.remove_group_member(&id, &user)?;
            println!("{user} left {id}");
        }
        GroupCommand::Delete { id } => {
            let n = client.delete_group_space(&id)?;
            println!(
                "deleted group {id} and {n} shared memor{}",
                if n == 1 { "y" } else { "ies" }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_space(g: &knowhub_client::GroupSpace) {
    print_header(
        &g.group_id,
        &g.name,
        &g.kind,
        &g.group_space,
        g.my_role.as_deref(),
    );
    for m in &g.members {
        print_member(&m.role, &m.user_id, m.agent_id.as_deref());
    }
}
