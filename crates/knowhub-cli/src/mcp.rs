//! `knowhub mcp`: the MCP server (`knowhub_server::mcp`) on stdin/stdout, signed in with the
//! global `--api-key`/`KNOWHUB_API_KEY` (like every other command), so MCP clients act with
//! that user's permissions. Thin: opens the session and the answer model, then hands over.
//! Nothing but protocol messages goes to stdout; notes and logs go to stderr.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;

use crate::{IdentityArgs, ModelArgs, ask::LlmArgs, open_session};

pub(crate) fn mcp(
    place: crate::Place,
    models: &ModelArgs,
    identity: &IdentityArgs,
    llm: &LlmArgs,
) -> Result<ExitCode> {
    let s = open_session(place, models, identity)?;
    let model = llm.load()?;
    eprintln!(
        "KnowHub MCP server on stdio (signed in as {}); end of input stops it",
        s.ctx.user
    );
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    knowhub_server::mcp::run_stdio(
        Arc::clone(&s.engine),
        s.ctx.clone(),
        model,
        stdin.lock(),
        stdout.lock(),
    )?;
    Ok(ExitCode::SUCCESS)
}
