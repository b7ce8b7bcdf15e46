//! RefuseNode: out of scope (writes, other people's credentials, bypassing permissions).

use serde_json::json;

use super::{Deps, StepReport};
use crate::Result;
use crate::lang::Lang;
use crate::state::{AgentState, StopReason};

pub(crate) fn run(state: &mut AgentState, _deps: &mut Deps<'_>) -> Result<StepReport> {
    let lang = Lang::from_code(&state.input.language);
    state.output.final_answer = lang.refuse().to_string();
    state.output.stop_reason = StopReason::PermissionDenied;
    Ok(StepReport::ok(
        "refuse",
        json!({ "intent": state.plan.intent }),
        json!({}),
    ))
}
