//! ClarifyNode: asks the user what they mean.

use serde_json::json;

use super::{Deps, StepReport};
use crate::Result;
use crate::lang::Lang;
use crate::state::{AgentState, StopReason};

pub(crate) fn run(state: &mut AgentState, _deps: &mut Deps<'_>) -> Result<StepReport> {
    let lang = Lang::from_code(&state.input.language);
    if state.plan.clarifying_questions.is_empty() {
        state
            .plan
            .clarifying_questions
            .push(lang.clarify().to_string());
    }
    state.output.final_answer = state.plan.clarifying_questions.join("\n");
    state.output.stop_reason = StopReason::NeedClarify;
    Ok(StepReport::ok(
        "ask_back",
        json!({}),
        json!({ "questions": state.plan.clarifying_questions.len() }),
    ))
}
