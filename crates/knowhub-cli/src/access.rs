//! `knowhub user …`, `knowhub acl …`, `knowhub account …`, `knowhub auth …` and
//! `knowhub audit`: users, roles, memberships, API keys, folder ACLs, accounts, the mode and the
//! audit trail. Every call passes the caller's context; the engine decides.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Subcommand;
use knowhub_engine::authz::{Role, Scope, ScopeSet, UserId};
use knowhub_engine::{Engine, Hub, Mode, RequestContext};

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
    /// Remove a user from a group.
    Leave { id: String, group: String },
}

#[derive(Debug, Subcommand)]
pub(crate) enum AccountCommand {
    /// Accounts with their user and document counts (ROOT).
    List,
    /// Create an isolated account with its first administrator; prints their API key once.
    Create {
        id: String,
        #[arg(long, default_value = "admin")]
        admin: String,
    },
    /// Delete an account and all of its data and index entries (ROOT).
    Delete {
        id: String,
        /// Required: deleting is permanent.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum AuthCommand {
    /// Create the root key (printed once) and require API keys from now on (production mode).
    Init,
    /// Show the mode and who the current credentials resolve to.
    Whoami,
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
    /// Give one document its own readers, overriding its folder's ACL.
    SetDocument {
        file: PathBuf,
        #[arg(required = true)]
        scopes: Vec<String>,
    },
    /// Remove a document's own ACL (it follows its folder again).
    ClearDocument { file: PathBuf },
    /// Show what a folder's documents effectively get.
    Show { folder: PathBuf },
}

fn user_id(s: &str) -> Result<UserId> {
    Ok(UserId::new(s)?)
}

pub(crate) fn user(
    engine: &Engine,
    ctx: &RequestContext,
    cmd: UserCommand,
    json: bool,
) -> Result<ExitCode> {
    match cmd {
        UserCommand::Add { id, role, name } => {
            let uid = user_id(&id)?;
            let role: Role = role.parse()?;
            if !engine.add_user(ctx, &uid, name.as_deref().unwrap_or(&id), role)? {
                bail!("user {id} exists (or existed: ids are never reused)");
            }
            let key = engine.rotate_api_key(ctx, &uid)?;
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
            let users = engine.users(ctx)?;
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
            if !engine.remove_user(ctx, &user_id(&id)?)? {
                bail!("no active user {id}");
            }
            println!("removed {id}; their API keys no longer work");
        }
        UserCommand::SetRole { id, role } => {
            let role: Role = role.parse()?;
            if !engine.set_role(ctx, &user_id(&id)?, role)? {
                bail!("no active user {id}");
            }
            println!("{id} is now {role}");
        }
        UserCommand::RotateKey { id } => {
            let key = engine.rotate_api_key(ctx, &user_id(&id)?)?;
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
            if !engine.add_membership(ctx, &user_id(&id)?, &scope)? {
                bail!("no active user {id} (or already a member of {group})");
            }
            println!("{id} joined {group}");
        }
        UserCommand::Leave { id, group } => {
            let scope: Scope = group.parse()?;
            if !engine.remove_membership(ctx, &user_id(&id)?, &scope)? {
                bail!("{id} is not a member of {group}");
            }
            println!("{id} left {group}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn acl(
    engine: &Engine,
    ctx: &RequestContext,
    cmd: AclCommand,
    json: bool,
) -> Result<ExitCode> {
    let shown = match cmd {
        AclCommand::SetDocument { file, scopes } => {
            let set: ScopeSet = scopes
                .iter()
                .map(|s| s.parse::<Scope>())
                .collect::<Result<_, _>>()?;
            let effective = engine.set_document_acl(ctx, &file, Some(&set))?;
            println!("{}: {effective}", file.display());
            return Ok(ExitCode::SUCCESS);
        }
        AclCommand::ClearDocument { file } => {
            let effective = engine.set_document_acl(ctx, &file, None)?;
            println!("{}: {effective} (from its folder)", file.display());
            return Ok(ExitCode::SUCCESS);
        }
        AclCommand::Set { folder, scopes } => {
            let set: ScopeSet = scopes
                .iter()
                .map(|s| s.parse::<Scope>())
                .collect::<Result<_, _>>()?;
            engine.set_folder_acl(ctx, &folder, Some(&set))?
        }
        AclCommand::Clear { folder } => engine.set_folder_acl(ctx, &folder, None)?,
        AclCommand::Show { folder } => engine.folder_acl(ctx, &folder)?,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&shown)?);
    } else {
        let origin = match (&shown.explicit, &shown.inherited_from) {
            (Some(_), _) => "set on this folder".to_owned(),
            (None, Some(from)) if from.is_empty() => "inherited from the source root".to_owned(),
            (None, Some(from)) => format!("inherited from {from}/"),
            (None, None) => "no ACL set here or above".to_owned(),
        };
        println!("{}: {} ({origin})", shown.folder, shown.effective);
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn account(
    hub: &Hub,
    ctx: &RequestContext,
    cmd: AccountCommand,
    json: bool,
) -> Result<ExitCode> {
    match cmd {
        AccountCommand::List => {
            let accounts = hub.accounts(ctx)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&accounts)?);
            } else {
                for a in &accounts {
                    println!(
                        "{:<24} {:>5} user(s) {:>7} document(s)",
                        a.id, a.users, a.documents
                    );
                }
            }
        }
        AccountCommand::Create { id, admin } => {
            let key = hub.create_account(ctx, &id, &admin)?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({"account": id, "admin": admin, "api_key": key.secret()})
                );
            } else {
                println!("created account {id} with administrator {admin}");
                println!("API key (shown once): {}", key.secret());
            }
        }
        AccountCommand::Delete { id, yes } => {
            if !yes {
                bail!("deleting account {id} removes all of its data: re-run with --yes");
            }
            hub.delete_account(ctx, &id)?;
            println!("deleted account {id} and all of its data");
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn auth(
    hub: &Hub,
    ctx: &RequestContext,
    cmd: AuthCommand,
    json: bool,
) -> Result<ExitCode> {
    match cmd {
        AuthCommand::Init => {
            let key = hub.init_root_key(ctx)?;
            if json {
                println!("{}", serde_json::json!({"root_key": key.secret()}));
            } else {
                println!("production mode: every command now needs an API key");
                println!("root key (shown once; keep it safe): {}", key.secret());
            }
        }
        AuthCommand::Whoami => {
            let mode = hub.mode()?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({
                        "mode": mode, "account": ctx.account.as_str(), "user": ctx.user.as_str(),
                        "role": ctx.role.to_string(),
                    })
                );
            } else {
                let mode = match mode {
                    Mode::Dev => "dev (no keys required)",
                    Mode::Production => "production (API keys required)",
                };
                println!("mode:    {mode}");
                println!("account: {}", ctx.account);
                println!("user:    {} ({})", ctx.user, ctx.role);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn audit(
    engine: &Engine,
    ctx: &RequestContext,
    limit: usize,
    json: bool,
) -> Result<ExitCode> {
    let records = engine.audit_trail(ctx, limit)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&records)?);
    } else {
        for r in records.iter().rev() {
            crate::render::audit_line(
                &r.id.to_string(),
                r.user.as_str(),
                r.role.as_str(),
                r.action.as_str(),
                r.outcome.as_str(),
                &r.allowed.to_string(),
                &r.filtered.to_string(),
                &r.snapshot,
                &r.target,
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
