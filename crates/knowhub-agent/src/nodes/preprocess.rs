//! PreprocessNode: normalises the (standalone) question and detects its language.

use serde_json::json;

use super::{Deps, StepReport, clip};
use crate::Result;
use crate::lang::Lang;
use crate::state::AgentState;
use crate::text::normalize;

pub(crate) fn run(state: &mut AgentState, _deps: &mut Deps<'_>) -> Result<StepReport> {
    let source = if state.input.standalone_query.is_empty() {
        state.input.query.clone()
    } else {
        state.input.standalone_query.clone()
    };
    state.input.normalized_query = normalize(&source);
    // Answers follow the language the user wrote in, not the rewritten question's.
    state.input.language = Lang::detect(&state.input.query).code().into();
    Ok(StepReport::ok(
        "normalize",
        json!({ "q": clip(&state.input.query, 200) }),
        json!({
            "normalized": clip(&state.input.normalized_query, 200),
            "language": state.input.language,
            "rewritten": state.input.standalone_query != state.input.query,
        }),
    ))
}
