//! LoadAuthzNode: records who is asking and the permission snapshot every evidence item is
//! tagged with. The permissions themselves were resolved once for the question, when its
//! [`crate::KnowledgeBase`] was opened; every tool call goes through that same view.

use serde_json::json;

use super::{Deps, StepReport};
use crate::Result;
use crate::state::AgentState;

/// Memories given to the agent at most (the most confident ones).
const PROFILE_LINES: usize = 8;

pub(crate) fn run(state: &mut AgentState, deps: &mut Deps<'_>) -> Result<StepReport> {
    let caller = deps.kb.caller();
    state.authz.user_id = caller.user.clone();
    state.authz.roles = vec![caller.role];
    state.authz.org_units = caller.scopes;
    state.authz.perm_snapshot_id = caller.snapshot;
    state.input.user_id = caller.user;
    // Seed 001 "user_profile special handling": the user's profile is loaded when a
    // conversation starts. A failure to read it must not stop the answer.
    state.input.user_profile = deps
        .kb
        .user_profile(state.input.project.as_deref(), PROFILE_LINES)
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
