//! SQLToolNode: question → SQL → read-only execution → evidence. Safety is the SQL crate's
//! code, not this prompt: one SELECT, forced LIMIT, allowlisted functions, read-only
//! connection, time and size bounds, the tenant filter by construction. The tables offered are
//! only those the caller may read (spreadsheets of readable documents; registered sources
//! sharing a scope with them).
//!
//! ReAct inside: generate (LLM, else template) → validate/execute → on an error, feed the
//! error back once and try again → else degrade to the template, else record the tool error.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use knowhub_sql::{Policy, Schema, TenantFilter};
use serde_json::json;

use super::{Deps, StepReport, clip};
use crate::state::{
    AgentState, EvidenceAuthz, EvidenceItem, EvidenceSource, SqlSummary, ToolError,
};
use crate::text::terms;
use crate::{AgentError, Result};

/// One database the caller may query, with the tables they may see in it.
struct Target {
    name: String,
    path: PathBuf,
    schema: Schema,
    policy: Policy,
    /// Spreadsheet tables by SQL name: the document and sheet each was imported from.
    sheets: HashMap<String, (i64, String, String)>,
}

pub(crate) fn run(state: &mut AgentState, deps: &mut Deps<'_>) -> Result<StepReport> {
    let targets = match targets(deps) {
        Ok(t) => t,
        Err(e) => {
            state.tools.sql = Some(SqlSummary::default());
            return Ok(tool_error(state, "SchemaError", &e));
        }
    };
    // Without a model, the database the template understands the question over (the one the
    // route relied on), else the one sharing most words with it.
    let question = &state.input.normalized_query;
    let understood = deps.llm.is_none().then(|| {
        targets
            .iter()
            .find(|t| knowhub_sqlgen::template_for(question, &t.schema).is_some())
    });
    let Some(target) = understood.flatten().or_else(|| pick(&targets, question)) else {
        state.tools.sql = Some(SqlSummary::default());
        return Ok(StepReport::ok(
            "nl2sql",
            json!({ "q": clip(&state.input.normalized_query, 200) }),
            json!({ "note": "no data the caller may query" }),
        )
        .with_tool("sql_tool"));
    };
    let question = state.input.normalized_query.clone();
    let outcome = knowhub_sqlgen::nl2sql(
        deps.llm,
        &target.schema,
        &target.path,
        &target.policy,
        &question,
        deps.options.retry_budget,
        deps.options.schema_chars,
    );
    state.prompt_tokens += outcome.prompt_tokens;
    state.completion_tokens += outcome.completion_tokens;
    if let Some(llm) = deps.llm
        && outcome.prompt_tokens > 0
    {
        state.llm = Some(llm.model_id().to_string());
    }
    let tries: Vec<(String, String, Option<String>)> = outcome
        .attempts
        .iter()
        .map(|a| (a.by.clone(), a.sql.clone(), a.error.clone()))
        .collect();
    let done = outcome.answer;
    let attempts: Vec<serde_json::Value> = tries
        .iter()
        .map(|(by, sql, err)| json!({ "by": by, "sql": clip(sql, 400), "error": err }))
        .collect();
    let Some(knowhub_sqlgen::Answer {
        by,
        sql,
        result,
        tables,
    }) = done
    else {
        let msg = tries
            .last()
            .and_then(|t| t.2.clone())
            .unwrap_or_else(|| "no SQL could be written for this question".into());
        state.tools.sql = Some(SqlSummary {
            source: target.name.clone(),
            generated_sql: tries.last().map(|t| t.1.clone()).unwrap_or_default(),
            generated_by: tries.last().map(|t| t.0.clone()).unwrap_or_default(),
            result_preview: String::new(),
            returned_evidence_ids: Vec::new(),
        });
        let mut report = tool_error(state, "SqlError", &msg);
        report.out = json!({ "attempts": attempts });
        return Ok(report);
    };
    // Every row the policy let through: the user sees the whole result in the answer and the
    // citation (the writer is shown at most `synthesize::WRITER_ROWS` of them).
    let preview = result.preview(target.policy.limit);
    let hash = short_hash(&format!("{sql}\n{preview}"));
    let evidence_id = format!("sql:{}:{}:{hash}", target.name, state.trace_id);
    state.evidence_items.push(EvidenceItem {
        evidence_id: evidence_id.clone(),
        kind: "sql_result".into(),
        text: format!(
            "{}{}",
            preview,
            if result.truncated { " (truncated)" } else { "" }
        ),
        score: None,
        source: EvidenceSource {
            db: Some(target.name.clone()),
            sql: Some(sql.clone()),
            ..spreadsheet_source(target, &tables).unwrap_or_else(|| EvidenceSource {
                title: Some(format!("SQL: {}", target.name)),
                ..EvidenceSource::default()
            })
        },
        authz: EvidenceAuthz {
            result: "allow".into(),
            perm_snapshot_id: state.authz.perm_snapshot_id.clone(),
        },
        by: "sql".into(),
        hash,
    });
    state.tools.sql = Some(SqlSummary {
        source: target.name.clone(),
        generated_sql: sql.clone(),
        generated_by: by.clone(),
        result_preview: clip(&preview, 300),
        returned_evidence_ids: vec![evidence_id],
    });
    Ok(StepReport::ok(
        "nl2sql_execute",
        json!({ "q": clip(&question, 200), "source": target.name }),
        json!({
            "sql": clip(&sql, 400),
            "rows": result.rows.len(),
            "truncated": result.truncated,
            "attempts": attempts,
            "evidence_added": 1,
        }),
    )
    .with_tool("sql_tool"))
}

fn tool_error(state: &mut AgentState, kind: &str, msg: &str) -> StepReport {
    state.tools.errors.push(ToolError {
        tool: "sql_tool".into(),
        kind: kind.into(),
        msg: msg.into(),
    });
    StepReport::ok("nl2sql_execute", json!({}), json!({}))
        .with_tool("sql_tool")
        .with_error(kind, msg)
}

/// Whether the no-LLM template path can write SQL for `question`, or for one of the questions
/// it asks, over some database the caller may query (see `route_by_rules`). A database that
/// cannot be read counts as no.
pub(crate) fn template_understands(deps: &Deps<'_>, question: &str) -> bool {
    match targets(deps) {
        Ok(targets) => targets
            .iter()
            .any(|t| knowhub_sqlgen::template_for(question, &t.schema).is_some()),
        Err(e) => {
            tracing::warn!("routing without the data's schema: {e}");
            false
        }
    }
}

/// The databases and tables the caller may query.
fn targets(deps: &Deps<'_>) -> std::result::Result<Vec<Target>, String> {
    let data = deps
        .kb
        .queryable_data()
        .map_err(|e| AgentError::Engine(e).to_string())?;
    let mut out = Vec::new();
    if !data.tables.is_empty() {
        let mut schema = deps
            .schemas
            .get(&data.tables_db, 3)
            .map_err(|e| e.to_string())?;
        let allowed: std::collections::HashSet<&str> =
            data.tables.iter().map(|t| t.sql_name.as_str()).collect();
        // Only tables of documents the caller may read are even described to the model, and
        // validation refuses any other table.
        schema.tables.retain(|t| allowed.contains(t.name.as_str()));
        out.push(Target {
            name: "spreadsheets".into(),
            path: data.tables_db.clone(),
            schema,
            policy: Policy::default(),
            sheets: data
                .tables
                .iter()
                .map(|t| {
                    let doc = (
                        t.document_id.0,
                        t.document_path.clone(),
                        t.sheet_name.clone(),
                    );
                    (t.sql_name.clone(), doc)
                })
                .collect(),
        });
    }
    let orgs = deps.kb.org_ids().map_err(|e| e.to_string())?;
    for source in data.sources {
        let schema = match deps.schemas.get(Path::new(&source.path), 3) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("SQL source {}: {e}", source.name);
                continue;
            }
        };
        let policy = match &source.tenant_column {
            // A tenant-filtered source needs the caller's organisation; without one, it is
            // not offered at all.
            Some(column) => match orgs.first() {
                Some(org) => Policy::for_tenant(TenantFilter::new(column.clone(), org.as_str())),
                None => continue,
            },
            None => Policy::default(),
        };
        out.push(Target {
            name: source.name.clone(),
            path: PathBuf::from(&source.path),
            schema,
            policy,
            sheets: HashMap::new(),
        });
    }
    Ok(out)
}

/// The database whose table and column names (and sample values) share most with the question.
fn pick<'a>(targets: &'a [Target], question: &str) -> Option<&'a Target> {
    let q = terms(question);
    targets
        .iter()
        .filter(|t| !t.schema.tables.is_empty())
        .max_by_key(|t| {
            let text = knowhub_sqlgen::SchemaPrompt::prompt_text(&t.schema, 4_000);
            let words = terms(&text);
            q.iter().filter(|w| words.contains(*w)).count()
        })
}

/// Where a result over spreadsheet tables comes from, when they are sheets of one document:
/// that document (so the window opens it) and its sheets, "SQL: projects.xlsx › Staff".
fn spreadsheet_source(target: &Target, tables: &[String]) -> Option<EvidenceSource> {
    let sheets: Vec<&(i64, String, String)> =
        tables.iter().filter_map(|t| target.sheets.get(t)).collect();
    let (doc, path, _) = sheets.first()?;
    if sheets.len() != tables.len() || sheets.iter().any(|s| s.0 != *doc) {
        return None;
    }
    let file = Path::new(path)
        .file_name()
        .map_or_else(|| path.clone(), |f| f.to_string_lossy().into_owned());
    let mut names: Vec<&str> = sheets.iter().map(|s| s.2.as_str()).collect();
    names.dedup();
    Some(EvidenceSource {
        doc_id: Some(*doc),
        title: Some(format!("SQL: {file} › {}", names.join(", "))),
        uri: Some(path.clone()),
        ..EvidenceSource::default()
    })
}

fn short_hash(s: &str) -> String {
    // FNV-1a: stable across runs and platforms; only an id, not a security property.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")[..8].to_string()
}
