//! ValidateEvidenceNode: is there evidence, and may it be used? Retrieval never returns what
//! the caller may not read (the filter runs inside the scans), so "all filtered" cannot be told
//! apart from "nothing found" here — and must not be: the user learns "no evidence", never
//! that something exists they may not see.

use serde_json::json;

use super::{Deps, StepReport};
use crate::Result;
use crate::state::{AgentState, StopReason};

pub(crate) fn run(state: &mut AgentState, _deps: &mut Deps<'_>) -> Result<StepReport> {
    let usable = state.usable_evidence().len();
    let denied = state.evidence_items.len() - usable;
    let tool_failed = usable == 0 && !state.tools.errors.is_empty();
    state.plan.validation.ok = usable > 0;
    state.plan.validation.reason = match (usable, tool_failed) {
        (0, true) => Some(StopReason::ToolError),
        (0, false) => Some(StopReason::NoEvidence),
        _ => None,
    };
    Ok(StepReport::ok(
        "check_evidence",
        json!({ "route": state.plan.route.as_str() }),
        json!({
            "usable": usable,
            "not_usable": denied,
            "ok": state.plan.validation.ok,
            "reason": state.plan.validation.reason.map(StopReason::as_str),
        }),
    ))
}
