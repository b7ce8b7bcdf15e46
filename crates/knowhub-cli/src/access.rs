//! `knowhub user …` and `knowhub acl …`: users, roles, memberships, API keys and folder ACLs.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Subcommand;
use knowhub_engine::Engine;
use knowhub_engine::authz::{Role, Scope, ScopeSet, UserId};

#[derive(Debug, Subcommand)]
pub(crate) enum UserCommand {
    /// Add a user and print their first API key (shown once; only its hash is stored).
    Add {
        id: String,
        /// USER, ADMIN or ROOT.
        #[arg(long, default_value = "USER")]
        role: String,
        #[arg(long)]
        name: Option<String>,
    },
    /// Active users.
    List,
    /// Remove a user: their API keys stop working at once.
    Remove { id: String },
    /// Change a user's role.
    SetRole { id: String, role: String },
    /// Replace a user's API keys with a new one (printed once).
    RotateKey { id: String },
    /// Add a user to a group: team:<id>, project:<id> or org:<id>.
    Join { id: String, group: String },
}

#[derive(Debug, Subcommand)]
pub(crate) enum AclCommand {
    /// Set who may read an ingested folder (and its subfolders without their own ACL), e.g.
    /// `knowhub acl set ./handbook public` or `knowhub acl set ./hr team:hr user:alice`.
    Set {
        folder: PathBuf,
        #[arg(required = true)]
        scopes: Vec<String>,
    },
    /// Remove a folder's own ACL (it inherits again).
    Clear { folder: PathBuf },
    /// Show what a folder's documents effectively get.
    Show { folder: PathBuf },
}

fn user_id(s: &str) -> Result<UserId> {
    Ok(UserId::new(s)?)
}

pub(crate) fn user(engine: &Engine, cmd: UserCommand, json: bool) -> Result<ExitCode> {
    match cmd {
        UserCommand::Add { id, role, name } => {
            let uid = user_id(&id)?;
            let role: Role = role.parse()?;
            if !engine.add_user(&uid, name.as_deref().unwrap_or(&id), role)? {
                bail!("user {id} exists (or existed: ids are never reused)");
            }
            let key = engine.rotate_api_key(&uid)?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({"user": id, "role": role.to_string(), "api_key": key.secret()})
                );
            } else {
                println!("added {id} ({role})");
                println!("API key (shown once): {}", key.secret());
            }
        }
        UserCommand::List => {
            let users = engine.users()?;
            if json {
                let rows: Vec<_> = users
                    .iter()
                    .map(|u| {
                        serde_json::json!({"id": u.id.to_string(), "name": u.display_name, "role": u.role.to_string()})
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                for u in &users {
                    println!("{:<20} {:<6} {}", u.id, u.role, u.display_name);
                }
                println!("{} user(s)", users.len());
            }
        }
        UserCommand::Remove { id } => {
            if !engine.remove_user(&user_id(&id)?)? {
                bail!("no active user {id}");
            }
            println!("removed {id}; their API keys no longer work");
        }
        UserCommand::SetRole { id, role } => {
            let role: Role = role.parse()?;
            if !engine.set_role(&user_id(&id)?, role)? {
                bail!("no active user {id}");
            }
            println!("{id} is now {role}");
        }
        UserCommand::RotateKey { id } => {
            let key = engine.rotate_api_key(&user_id(&id)?)?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({"user": id, "api_key": key.secret()})
                );
            } else {
                println!(
                    "new API key for {id} (shown once; the old ones stopped working): {}",
                    key.secret()
                );
            }
        }
        UserCommand::Join { id, group } => {
            let scope: Scope = group.parse()?;
            if !engine.add_membership(&user_id(&id)?, &scope)? {
                bail!("no active user {id} (or already a member of {group})");
            }
            println!("{id} joined {group}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn acl(engine: &Engine, cmd: AclCommand, json: bool) -> Result<ExitCode> {
    let shown = match cmd {
        AclCommand::Set { folder, scopes } => {
            let set: ScopeSet = scopes
                .iter()
                .map(|s| s.parse::<Scope>())
                .collect::<Result<_, _>>()?;
            engine.set_folder_acl(&folder, Some(&set))?
        }
        AclCommand::Clear { folder } => engine.set_folder_acl(&folder, None)?,
        AclCommand::Show { folder } => engine.folder_acl(&folder)?,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&shown)?);
    } else {
        println!("{}: {}", shown.folder, shown.effective);
    }
    Ok(ExitCode::SUCCESS)
}
