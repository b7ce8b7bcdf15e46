//! `knowhub serve`: the HTTP API (`knowhub-server`) over this data directory. Thin: opens the
//! hub and the answer model, starts the watcher and ingestion queue (unless another process
//! runs them), then hands over to the server.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use knowhub_engine::{Credentials, EngineError, Hub, Mode, WatchOptions, WatchService};
use knowhub_server::{DEFAULT_BIND, OPENAPI_PATH, ServerState};

use crate::{IdentityArgs, ModelArgs, ask::LlmArgs};

/// `knowhub serve` arguments.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on. Loopback by default; any other address answers the network.
    #[arg(long, default_value = DEFAULT_BIND)]
    bind: SocketAddr,
    /// Do not watch folders or process the ingestion queue in this process (e.g. when
    /// `knowhub daemon` does it beside the server).
    #[arg(long)]
    no_watch: bool,
}

pub(crate) fn serve(
    args: &ServeArgs,
    place: crate::Place,
    models: &ModelArgs,
    identity: &IdentityArgs,
    llm: &LlmArgs,
) -> Result<ExitCode> {
    let mut config = place.config()?;
    config.models = models.config()?;
    let hub = Arc::new(Hub::open(config).context("cannot open the knowledge base")?);
    if hub.mode()? == Mode::Dev {
        eprintln!(
            "note: no root key yet (dev mode); requests still need a user's API key \
             (`knowhub user add`, or `knowhub auth init` for a root key)"
        );
    }
    if !args.bind.ip().is_loopback() {
        eprintln!(
            "warning: listening on {}: the API is reachable from other machines (use TLS in \
             front of it and keep keys secret)",
            args.bind
        );
    }
    let watching = if args.no_watch {
        None
    } else {
        start_watching(&hub, identity)
    };
    let model = llm.load()?;
    let state = ServerState::new(Arc::clone(&hub), model);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    eprintln!(
        "KnowHub API on http://{} (OpenAPI document: {OPENAPI_PATH}); Ctrl-C stops it",
        args.bind
    );
    let served = runtime.block_on(knowhub_server::serve(args.bind, state));
    if let Some(service) = watching {
        eprintln!("stopping the ingestion queue after the file in progress…");
        service.stop();
    }
    served?;
    Ok(ExitCode::SUCCESS)
}

/// Starts the watcher and the ingestion queue of the account the command line names (the
/// team's account in team mode), as the principal its key signs in as: watched folders
/// registered over the API are then read by the server itself. A reason to go without
/// (another process holds the queue, no administrator's key) is said, not fatal: the API
/// still serves.
fn start_watching(hub: &Hub, identity: &IdentityArgs) -> Option<WatchService> {
    let started = hub
        .authenticate(&Credentials {
            api_key: identity.api_key.clone(),
            account: identity.account.clone(),
            act_as: None,
            agent: None,
            session: None,
        })
        .and_then(|ctx| {
            let engine = hub.engine(&ctx)?;
            WatchService::start(engine, &ctx, WatchOptions::default())
        });
    match started {
        Ok(service) => {
            eprintln!("watching folders and processing the ingestion queue (--no-watch: not)");
            Some(service)
        }
        Err(EngineError::Busy) => {
            eprintln!(
                "note: another KnowHub process (the app or `knowhub daemon`) processes this \
                 knowledge base's watched folders and ingestion queue"
            );
            None
        }
        Err(e) => {
            eprintln!(
                "note: this server does not process watched folders or the ingestion queue \
                 ({e}); give it an administrator's key (--api-key or KNOWHUB_API_KEY) or run \
                 `knowhub daemon` beside it"
            );
            None
        }
    }
}
