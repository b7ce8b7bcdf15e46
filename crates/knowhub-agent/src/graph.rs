//! The workflow graph, defined here and nowhere else (seed 004 §4): which node runs after
//! which, depending on the state. Each node is a small module under `nodes/`; this file runs
//! them in order, times them and appends their trace steps.

use std::time::Instant;

use serde::Serialize;

use crate::nodes::{self, Deps, StepReport};
use crate::state::{AgentState, Route, StepError, TraceStep};
use crate::{AgentEvent, Result};

/// The nodes of the workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum NodeId {
    Preprocess,
    LoadAuthz,
    Route,
    DocTool,
    SqlTool,
    ValidateEvidence,
    Synthesize,
    Clarify,
    Refuse,
}

impl NodeId {
    pub fn name(self) -> &'static str {
        match self {
            NodeId::Preprocess => "Preprocess",
            NodeId::LoadAuthz => "LoadAuthz",
            NodeId::Route => "Route",
            NodeId::DocTool => "DocTool",
            NodeId::SqlTool => "SqlTool",
            NodeId::ValidateEvidence => "ValidateEvidence",
            NodeId::Synthesize => "Synthesize",
            NodeId::Clarify => "Clarify",
            NodeId::Refuse => "Refuse",
        }
    }
}

/// The edges: what runs after `node`, given the state it left (`None` = done).
pub fn next(node: NodeId, state: &AgentState) -> Option<NodeId> {
    match node {
        NodeId::Preprocess => Some(NodeId::LoadAuthz),
        NodeId::LoadAuthz => Some(NodeId::Route),
        NodeId::Route => Some(match state.plan.route {
            Route::Doc | Route::Hybrid => NodeId::DocTool,
            Route::Sql => NodeId::SqlTool,
            Route::Clarify => NodeId::Clarify,
            Route::Refuse => NodeId::Refuse,
        }),
        // HYBRID runs both tools. Each tool runs at most once (its summary in `tools` says it
        // ran), so the graph stays acyclic.
        NodeId::DocTool => Some(match state.plan.route {
            Route::Hybrid if state.tools.sql.is_none() => NodeId::SqlTool,
            _ => NodeId::ValidateEvidence,
        }),
        // A data question the SQL tool could not answer degrades to the documents.
        NodeId::SqlTool => Some(
            if state.tools.rag.is_none()
                && !state.evidence_items.iter().any(|e| e.kind == "sql_result")
            {
                NodeId::DocTool
            } else {
                NodeId::ValidateEvidence
            },
        ),
        NodeId::ValidateEvidence => Some(NodeId::Synthesize),
        NodeId::Synthesize | NodeId::Clarify | NodeId::Refuse => None,
    }
}

/// Runs the graph from `Preprocess` to the end.
pub(crate) fn run(state: &mut AgentState, deps: &mut Deps<'_>) -> Result<()> {
    let mut node = Some(NodeId::Preprocess);
    // The graph is acyclic; the bound only guards against a future edit making it cyclic.
    let mut steps = 0;
    while let Some(current) = node {
        steps += 1;
        if steps > 16 {
            break;
        }
        if state.cancel.is_cancelled() {
            return Err(crate::AgentError::Cancelled);
        }
        (deps.events)(&AgentEvent::Step {
            node: current.name().to_string(),
            status: "start".into(),
            timing_ms: 0,
        });
        let t = Instant::now();
        let started_ms = now_ms();
        let report = match current {
            NodeId::Preprocess => nodes::preprocess::run(state, deps),
            NodeId::LoadAuthz => nodes::load_authz::run(state, deps),
            NodeId::Route => nodes::route::run(state, deps),
            NodeId::DocTool => nodes::doc_tool::run(state, deps),
            NodeId::SqlTool => nodes::sql_tool::run(state, deps),
            NodeId::ValidateEvidence => nodes::validate::run(state, deps),
            NodeId::Synthesize => nodes::synthesize::run(state, deps),
            NodeId::Clarify => nodes::clarify::run(state, deps),
            NodeId::Refuse => nodes::refuse::run(state, deps),
        };
        let timing_ms = t.elapsed().as_millis() as u64;
        let report = match report {
            Ok(r) => r,
            // A node's own failure ends the request with the error recorded in the trace.
            Err(e) => {
                push_step(
                    state,
                    current,
                    started_ms,
                    timing_ms,
                    StepReport::error("failed", "AgentError", &e.to_string()),
                );
                return Err(e);
            }
        };
        let status = report.status.clone();
        push_step(state, current, started_ms, timing_ms, report);
        (deps.events)(&AgentEvent::Step {
            node: current.name().to_string(),
            status,
            timing_ms,
        });
        node = next(current, state);
    }
    Ok(())
}

fn push_step(state: &mut AgentState, node: NodeId, ts_ms: i64, timing_ms: u64, report: StepReport) {
    let step_id = format!("step_{:04}", state.trace_steps.len() + 1);
    state.trace_steps.push(TraceStep {
        step_id,
        ts_ms,
        node: node.name().to_string(),
        action: report.action,
        status: report.status,
        timing_ms,
        input: report.input,
        out: report.out,
        tool: report.tool,
        err: report.err.map(|(kind, msg)| StepError { kind, msg }),
    });
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every route reaches the end, through the nodes the seed prescribes.
    #[test]
    fn edges_per_route() {
        let table: &[(Route, &[NodeId])] = &[
            (
                Route::Doc,
                &[
                    NodeId::DocTool,
                    NodeId::ValidateEvidence,
                    NodeId::Synthesize,
                ],
            ),
            // (no SQL evidence in this empty state: the data question degrades to documents)
            (
                Route::Sql,
                &[
                    NodeId::SqlTool,
                    NodeId::DocTool,
                    NodeId::ValidateEvidence,
                    NodeId::Synthesize,
                ],
            ),
            (
                Route::Hybrid,
                &[
                    NodeId::DocTool,
                    NodeId::SqlTool,
                    NodeId::ValidateEvidence,
                    NodeId::Synthesize,
                ],
            ),
            (Route::Clarify, &[NodeId::Clarify]),
            (Route::Refuse, &[NodeId::Refuse]),
        ];
        for (route, want) in table {
            let mut state = AgentState::default();
            state.plan.route = *route;
            let mut path = Vec::new();
            let mut node = Some(NodeId::Preprocess);
            while let Some(n) = node {
                path.push(n);
                // What the tool nodes leave behind (here: no evidence).
                match n {
                    NodeId::DocTool => state.tools.rag = Some(Default::default()),
                    NodeId::SqlTool => state.tools.sql = Some(Default::default()),
                    _ => {}
                }
                node = next(n, &state);
            }
            let mut expected = vec![NodeId::Preprocess, NodeId::LoadAuthz, NodeId::Route];
            expected.extend_from_slice(want);
            assert_eq!(path, expected, "{route:?}");
        }
    }
}
