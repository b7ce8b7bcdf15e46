//! `knowhub resource …`: resources (seed 002: code, credentials, cookies…) from the terminal —
//! save, get, list, update, delete, on this machine's knowledge base or (`--server`) a team
//! server's. Thin: visibility, owner-only writes, encryption and expiry
//! are the engine's. Secrets are read from a file or stdin (`--secure-body-file -`), never
//! from an argument (arguments are visible to other users in `ps`).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use knowhub_client::{Client, ItemFilter};
use knowhub_engine::{
    Engine, NewResource, RequestContext, Resource, ResourceListOptions, ResourceUpdate, SecureBody,
};
use serde_json::Value;

use crate::{IdentityArgs, ModelArgs, open_session};

#[derive(Debug, Subcommand)]
pub(crate) enum ResourceCommand {
    /// Save a resource you own (default scope: user:<you>).
    Save(SaveArgs),
    /// Show one resource (its secure body only if you own it or administer the account).
    Get { id: String },
    /// Live resources you may see, newest first (never with secure bodies).
    List {
        #[arg(long, short = 'n', default_value_t = 20)]
        limit: usize,
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// Only this content type (repeatable).
        #[arg(long = "type")]
        types: Vec<String>,
        /// Only resources carrying one of these scopes (repeatable).
        #[arg(long = "scope")]
        scopes: Vec<String>,
        /// key=value (repeatable).
        #[arg(long = "tag")]
        tags: Vec<String>,
        #[arg(long)]
        owner: Option<String>,
    },
    /// Change a resource you own.
    Update(UpdateArgs),
    /// Delete a resource you own.
    Delete { id: String },
}

#[derive(Debug, Args)]
pub(crate) struct SaveArgs {
    /// Name it yourself (`credentials/website_a`); default: a generated id.
    #[arg(long)]
    id: Option<String>,
    /// code, credential, cookie, token, config, text, other.
    #[arg(long = "type", default_value = "text")]
    content_type: String,
    #[arg(long, default_value = "")]
    title: String,
    #[arg(long, default_value = "")]
    description: String,
    /// The public body (`-` reads stdin).
    #[arg(long, default_value = "")]
    body: String,
    /// Read the secure body from this file (`-`: stdin).
    #[arg(long)]
    secure_body_file: Option<PathBuf>,
    /// Share with these scopes (repeatable): team:hr, project:x, public, …
    #[arg(long = "scope")]
    scopes: Vec<String>,
    /// key=value (repeatable).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// A JSON object.
    #[arg(long)]
    metadata: Option<String>,
    /// RFC 3339, e.g. 2026-03-07T10:00:00Z.
    #[arg(long)]
    expires_at: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct UpdateArgs {
    id: String,
    #[arg(long = "type")]
    content_type: Option<String>,
    #[arg(long)]
    title: Option<String>,
    #[arg(long)]
    description: Option<String>,
    /// The public body (`-` reads stdin).
    #[arg(long)]
    body: Option<String>,
    /// Replace the secure body with this file's content (`-`: stdin).
    #[arg(long, conflicts_with = "clear_secure_body")]
    secure_body_file: Option<PathBuf>,
    #[arg(long)]
    clear_secure_body: bool,
    /// Replace the scopes (repeatable).
    #[arg(long = "scope")]
    scopes: Vec<String>,
    /// Replace the tags (repeatable key=value).
    #[arg(long = "tag")]
    tags: Vec<String>,
    #[arg(long)]
    metadata: Option<String>,
    #[arg(long, conflicts_with = "never_expires")]
    expires_at: Option<String>,
    #[arg(long)]
    never_expires: bool,
}

/// Where the resources are: this machine's knowledge base (as the signed-in caller) or a team
/// server (under the key's permissions). Both answer with the resource's JSON.
enum Resources<'a> {
    Here {
        engine: &'a Engine,
        ctx: &'a RequestContext,
    },
    Server(&'a Client),
}

fn value(r: impl serde::Serialize) -> Result<Value> {
    Ok(serde_json::to_value(r)?)
}

impl Resources<'_> {
    fn save(&self, new: NewResource) -> Result<Value> {
        match self {
            Resources::Here { engine, ctx } => value(engine.resource_save(ctx, new)?),
            Resources::Server(c) => Ok(c.resource_save(&new)?),
        }
    }

    fn get(&self, id: &str) -> Result<Value> {
        match self {
            Resources::Here { engine, ctx } => value(engine.resource_get(ctx, id)?),
            Resources::Server(c) => Ok(c.resource(id)?),
        }
    }

    fn list(&self, options: &ResourceListOptions) -> Result<Vec<Value>> {
        match self {
            Resources::Here { engine, ctx } => engine
                .resource_list(ctx, options)?
                .into_iter()
                .map(value)
                .collect(),
            Resources::Server(c) => {
                let filter = ItemFilter {
                    types: options.content_types.clone(),
                    scopes: options.scopes.clone(),
                    tags: options.tags.clone(),
                    owner: options.owner.clone(),
                };
                Ok(c.resources(&filter, options.limit.unwrap_or(20), options.offset)?)
            }
        }
    }

    fn update(&self, id: &str, change: ResourceUpdate) -> Result<Value> {
        match self {
            Resources::Here { engine, ctx } => value(engine.resource_update(ctx, id, change)?),
            Resources::Server(c) => Ok(c.resource_update(id, &change)?),
        }
    }

    fn delete(&self, id: &str) -> Result<()> {
        match self {
            Resources::Here { engine, ctx } => Ok(engine.resource_delete(ctx, id)?),
            Resources::Server(c) => Ok(c.resource_delete(id)?),
        }
    }
}

/// `knowhub resource …` on this machine's knowledge base.
pub(crate) fn run(
    cmd: ResourceCommand,
    place: crate::Place,
    identity: &IdentityArgs,
    as_json: bool,
) -> Result<ExitCode> {
    let s = open_session(place, &ModelArgs::keyword_only(), identity)?;
    execute(
        cmd,
        &Resources::Here {
            engine: &s.engine,
            ctx: &s.ctx,
        },
        as_json,
    )
}

/// `knowhub --server … resource …`: the same commands on a team server.
pub(crate) fn remote(client: &Client, cmd: ResourceCommand, as_json: bool) -> Result<ExitCode> {
    execute(cmd, &Resources::Server(client), as_json)
}

/// The resource in `v` as the engine shapes it (for printing).
fn resource(v: Value) -> Result<Resource> {
    serde_json::from_value(v).context("the resource is not in the shape this version knows")
}

fn execute(cmd: ResourceCommand, resources: &Resources<'_>, as_json: bool) -> Result<ExitCode> {
    match cmd {
        ResourceCommand::Save(a) => {
            let saved = resources.save(NewResource {
                id: a.id,
                content_type: a.content_type,
                title: a.title,
                description: a.description,
                body: read_text(&a.body)?,
                secure_body: a.secure_body_file.as_deref().map(read_secret).transpose()?,
                scopes: a.scopes,
                tags: tags(&a.tags)?,
                metadata: metadata(a.metadata.as_deref())?.unwrap_or_default(),
                expires_at: a.expires_at,
            })?;
            if as_json {
                println!("{}", serde_json::to_string_pretty(&saved)?);
            } else {
                println!("saved {}", saved["id"].as_str().unwrap_or_default());
            }
        }
        ResourceCommand::Get { id } => {
            let r = resources.get(&id)?;
            if as_json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                print_resource(&resource(r)?, true);
            }
        }
        ResourceCommand::List {
            limit,
            offset,
            types,
            scopes,
            tags: tag_args,
            owner,
        } => {
            let list = resources.list(&ResourceListOptions {
                content_types: types,
                scopes,
                tags: tags(&tag_args)?,
                owner,
                limit: Some(limit),
                offset,
            })?;
            if as_json {
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else {
                let count = list.len();
                for r in list {
                    print_resource(&resource(r)?, false);
                }
                eprintln!("{count} resource(s)");
            }
        }
        ResourceCommand::Update(a) => {
            let update = ResourceUpdate {
                content_type: a.content_type,
                title: a.title,
                description: a.description,
                body: a.body.as_deref().map(read_text).transpose()?,
                secure_body: a.secure_body_file.as_deref().map(read_secret).transpose()?,
                clear_secure_body: a.clear_secure_body,
                scopes: (!a.scopes.is_empty()).then_some(a.scopes),
                tags: if a.tags.is_empty() {
                    None
                } else {
                    Some(tags(&a.tags)?)
                },
                metadata: metadata(a.metadata.as_deref())?,
                expires_at: a.expires_at,
                clear_expires_at: a.never_expires,
            };
            let r = resources.update(&a.id, update)?;
            if as_json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                println!("updated {}", r["id"].as_str().unwrap_or_default());
            }
        }
        ResourceCommand::Delete { id } => {
            resources.delete(&id)?;
            if as_json {
                println!("{}", serde_json::json!({ "deleted": id }));
            } else {
                println!("deleted {id}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_resource(r: &Resource, full: bool) {
    println!("{}  [{}] {}", r.id, r.content_type, r.title);
    println!(
        "  owner: {}  scopes: {}{}",
        r.owner,
        r.scopes.join(" "),
        r.expires_at
            .as_deref()
            .map(|e| format!("  expires: {e}"))
            .unwrap_or_default()
    );
    if !full {
        return;
    }
    if !r.description.is_empty() {
        println!("  {}", r.description);
    }
    for line in r.body.lines() {
        println!("  | {line}");
    }
    match (&r.secure_body, r.has_secure_body) {
        (Some(secret), _) => {
            println!("  secure body:");
            for line in secret.expose().lines() {
                println!("  # {line}");
            }
        }
        (None, true) => println!("  secure body: (withheld: only its owner or an admin sees it)"),
        (None, false) => {}
    }
}

fn tags(pairs: &[String]) -> Result<BTreeMap<String, String>> {
    pairs
        .iter()
        .map(|p| match p.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
            _ => bail!("a tag is key=value, not {p:?}"),
        })
        .collect()
}

fn metadata(text: Option<&str>) -> Result<Option<serde_json::Value>> {
    text.map(|t| serde_json::from_str(t).context("--metadata is not JSON"))
        .transpose()
}

fn read_text(arg: &str) -> Result<String> {
    if arg == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("cannot read stdin")?;
        Ok(s)
    } else {
        Ok(arg.to_owned())
    }
}

/// The secret from a file or stdin, without a trailing newline.
fn read_secret(path: &Path) -> Result<SecureBody> {
    let mut text = String::new();
    if path == Path::new("-") {
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the secure body from stdin")?;
    } else {
        std::fs::File::open(path)
            .and_then(|mut f| f.read_to_string(&mut text))
            .with_context(|| format!("cannot read {}", path.display()))?;
    }
    let trimmed = text.trim_end_matches(['\r', '\n']).len();
    text.truncate(trimmed);
    let secret = SecureBody::new(std::mem::take(&mut text));
    if secret.is_empty() {
        bail!("the secure body is empty");
    }
    Ok(secret)
}
