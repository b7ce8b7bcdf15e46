//! LoadAuthzNode: resolves the caller's permissions once (the engine re-checks them on every
//! tool call anyway) and records the snapshot id every evidence item is tagged with.

use serde_json::json;

use super::{Deps, StepReport};
use crate::state::AgentState;
use crate::{AgentError, Result};

/// Memories given to the agent at most (the most confident ones).
const PROFILE_LINES: usize = 8;

pub(crate) fn run(state: &mut AgentState, deps: &mut Deps<'_>) -> Result<StepReport> {
    let access = deps
        .engine
        .authorize(deps.ctx)
        .map_err(AgentError::Engine)?;
    let user = access.ctx.user.as_str().to_string();
    let own = format!("user:{user}");
    state.authz.user_id = user.clone();
    state.authz.roles = vec![access.ctx.role.as_str().to_string()];
    state.authz.org_units = access
        .visible
        .scopes()
        .iter()
        .map(|s| s.to_string())
        .filter(|s| *s != own)
        .collect();
    state.authz.perm_snapshot_id = access.snapshot.to_string();
    state.input.user_id = user;
    // Seed 001 "user_profile special handling": the user's profile is loaded when a
    // conversation starts. A failure to read it must not stop the answer.
    state.input.user_profile = deps
        .engine
        .user_profile(deps.ctx, state.input.project.as_deref(), PROFILE_LINES)
        .unwrap_or_else(|e| {
            tracing::warn!("user profile not loaded: {e}");
            Vec::new()
        });
    Ok(StepReport::ok(
        "load_permissions",
        json!({ "user": state.authz.user_id }),
        json!({
            "role": state.authz.roles,
            "scopes": state.authz.org_units.len(),
            "perm_snapshot_id": state.authz.perm_snapshot_id,
            "profile_lines": state.input.user_profile.len(),
        }),
    ))
}
