//! `knowhub serve`: the HTTP API (`knowhub-server`) over this data directory. Thin: opens the
//! hub and the answer model, then hands over to the server.

use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use knowhub_engine::{Hub, Mode};
use knowhub_server::{DEFAULT_BIND, OPENAPI_PATH, ServerState};

use crate::{ModelArgs, ask::LlmArgs};

/// `knowhub serve` arguments.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on. Loopback by default; any other address answers the network.
    #[arg(long, default_value = DEFAULT_BIND)]
    bind: SocketAddr,
}

pub(crate) fn serve(
    args: &ServeArgs,
    place: crate::Place,
    models: &ModelArgs,
    llm: &LlmArgs,
) -> Result<ExitCode> {
    let mut config = place.config()?;
    config.models = models.config()?;
    let hub = Hub::open(config).context("cannot open the knowledge base")?;
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
    let model = llm.load()?;
    let state = ServerState::new(hub, model);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    eprintln!(
        "KnowHub API on http://{} (OpenAPI document: {OPENAPI_PATH}); Ctrl-C stops it",
        args.bind
    );
    runtime.block_on(knowhub_server::serve(args.bind, state))?;
    Ok(ExitCode::SUCCESS)
}
