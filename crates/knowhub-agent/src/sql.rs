//! Question → SQL → result, shared by the SQL tool node and `knowhub eval sql`: the LLM writes
//! a statement from the schema; a validation or execution error is fed back once (ReAct); the
//! template path answers simple count/list/sum/filter questions without a model. Every
//! statement goes through `knowhub_sql::validate` and runs through `knowhub_sql::execute`:
//! safety never depends on the prompt.

use std::path::Path;

use knowhub_llm::{ChatRequest, Llm, Message};
use knowhub_sql::{Policy, QueryResult, Schema};
use serde::Serialize;

/// One statement tried.
#[derive(Debug, Clone, Serialize)]
pub struct Attempt {
    /// `llm` or `template`.
    pub by: String,
    pub sql: String,
    pub error: Option<String>,
}

/// The statement that ran, as executed (limit and tenant filter applied), and its result.
#[derive(Debug, Clone)]
pub struct Answer {
    pub by: String,
    pub sql: String,
    pub result: QueryResult,
}

#[derive(Debug, Clone, Default)]
pub struct Nl2Sql {
    pub attempts: Vec<Attempt>,
    pub answer: Option<Answer>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// Answers `question` from the database at `db` (described by `schema`) under `policy`.
pub fn nl2sql(
    llm: Option<&dyn Llm>,
    schema: &Schema,
    db: &Path,
    policy: &Policy,
    question: &str,
    retry_budget: usize,
    schema_chars: usize,
) -> Nl2Sql {
    let mut out = Nl2Sql::default();
    let mut feedback: Option<(String, String)> = None;
    let mut template_tried = false;
    for _ in 0..=retry_budget + 1 {
        let generated = match llm {
            Some(llm) if out.attempts.iter().filter(|a| a.by == "llm").count() <= retry_budget => {
                generate(
                    llm,
                    schema,
                    question,
                    feedback.as_ref(),
                    schema_chars,
                    &mut out,
                )
                .map(|s| ("llm", s))
            }
            _ => None,
        };
        let generated = generated.or_else(|| {
            if template_tried {
                return None;
            }
            template_tried = true;
            knowhub_sql::template_sql(question, schema).map(|s| ("template", s))
        });
        let Some((by, sql)) = generated else { break };
        if out.attempts.iter().any(|a| a.sql == sql) {
            // The same statement again brings no new information: try the template next.
            if template_tried {
                break;
            }
            continue;
        }
        let run = knowhub_sql::validate(&sql, schema, policy)
            .and_then(|safe| knowhub_sql::execute(db, &safe, policy).map(|r| (safe, r)));
        match run {
            Ok((safe, result)) => {
                out.attempts.push(Attempt {
                    by: by.into(),
                    sql: sql.clone(),
                    error: None,
                });
                out.answer = Some(Answer {
                    by: by.into(),
                    sql: safe.sql().to_string(),
                    result,
                });
                break;
            }
            Err(e) => {
                feedback = Some((sql.clone(), e.to_string()));
                out.attempts.push(Attempt {
                    by: by.into(),
                    sql,
                    error: Some(e.to_string()),
                });
            }
        }
    }
    out
}

fn generate(
    llm: &dyn Llm,
    schema: &Schema,
    question: &str,
    feedback: Option<&(String, String)>,
    schema_chars: usize,
    out: &mut Nl2Sql,
) -> Option<String> {
    let system = "You write one SQLite SELECT statement that answers the question from the \
                  schema. Use only the tables and columns shown; quote identifiers that contain \
                  spaces with double quotes. Reply with the SQL only, no explanation.";
    let focused = focus(schema, question, 4);
    let mut user = format!(
        "Schema:\n{}\n\nQuestion: {question}\n",
        focused.prompt_text(schema_chars)
    );
    if let Some((prev, err)) = feedback {
        user.push_str(&format!(
            "\nYour previous SQL:\n{prev}\nfailed with: {err}\nWrite a corrected statement.\n"
        ));
    }
    user.push_str("SQL:");
    let req = ChatRequest {
        messages: vec![Message::system(system), Message::user(user)],
        max_tokens: 256,
        ..ChatRequest::default()
    };
    let response = llm.complete(&req).ok()?;
    out.prompt_tokens += response.prompt_tokens as u64;
    out.completion_tokens += response.completion_tokens as u64;
    extract_sql(&response.text)
}

/// The part of a large schema the question is about: the tables whose names, columns or
/// sample values share words with it (best `max_tables`), plus the tables their `…Id` columns
/// point at. A small model given fewer, relevant tables writes fewer invented joins, and the
/// prompt is shorter. Validation still uses the whole schema.
fn focus(schema: &Schema, question: &str, max_tables: usize) -> Schema {
    if schema.tables.len() <= max_tables {
        return schema.clone();
    }
    let q = crate::text::terms(question);
    let words = |s: &str| crate::text::terms(&split_ident(s));
    let mut scored: Vec<(usize, usize)> = schema
        .tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let name = words(&t.name).iter().filter(|w| q.contains(*w)).count() * 3;
            let cols: usize = t
                .columns
                .iter()
                .map(|c| {
                    let mut n = words(&c.name).iter().filter(|w| q.contains(*w)).count();
                    n += c
                        .samples
                        .iter()
                        .filter(|v| q.iter().any(|w| v.to_string().to_lowercase() == *w))
                        .count();
                    n
                })
                .sum();
            (name + cols, i)
        })
        .filter(|(score, _)| *score > 0)
        .collect();
    if scored.is_empty() {
        return schema.clone();
    }
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut keep: Vec<usize> = scored.iter().take(max_tables).map(|(_, i)| *i).collect();
    // Foreign keys by naming convention: ArtistId → Artist, customer_id → customer.
    let linked: Vec<usize> = keep
        .iter()
        .flat_map(|&i| schema.tables[i].columns.iter())
        .filter_map(|c| {
            let lower = c.name.to_lowercase();
            let base = lower
                .strip_suffix("_id")
                .or_else(|| lower.strip_suffix("id"))?;
            schema
                .tables
                .iter()
                .position(|t| t.name.to_lowercase() == base && !base.is_empty())
        })
        .collect();
    for i in linked {
        if !keep.contains(&i) && keep.len() < max_tables + 2 {
            keep.push(i);
        }
    }
    keep.sort_unstable();
    let mut out = schema.clone();
    out.tables = keep.iter().map(|&i| schema.tables[i].clone()).collect();
    out
}

/// `InvoiceLine` → `Invoice Line`, `order_items` → `order items`.
fn split_ident(name: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if c == '_' {
            out.push(' ');
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower {
            out.push(' ');
        }
        prev_lower = c.is_lowercase();
        out.push(c);
    }
    out
}

/// The SQL in a model's reply: a fenced block if there is one, else the text from the first
/// SELECT/WITH.
pub fn extract_sql(reply: &str) -> Option<String> {
    let body = if let Some(start) = reply.find("```") {
        let after = &reply[start + 3..];
        let after = after
            .strip_prefix("sqlite")
            .or_else(|| after.strip_prefix("sql"))
            .or_else(|| after.strip_prefix("SQL"))
            .unwrap_or(after);
        match after.find("```") {
            Some(end) => &after[..end],
            None => after,
        }
    } else {
        let upper = reply.to_uppercase();
        let start = ["SELECT", "WITH"]
            .iter()
            .filter_map(|k| upper.find(k))
            .min()?;
        &reply[start..]
    };
    let sql = body.trim().trim_end_matches(';').trim();
    (!sql.is_empty()).then(|| sql.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(split_ident("InvoiceLine"), "Invoice Line");
        assert_eq!(split_ident("order_items"), "order items");
        assert_eq!(split_ident("CustomerId"), "Customer Id");
    }

    #[test]
    fn sql_is_found_in_model_replies() {
        for (reply, want) in [
            ("```sql\nSELECT 1;\n```", Some("SELECT 1")),
            (
                "Here you go: SELECT name FROM t WHERE x = 1;",
                Some("SELECT name FROM t WHERE x = 1"),
            ),
            (
                "with a as (select 1) select * from a",
                Some("with a as (select 1) select * from a"),
            ),
            ("I cannot answer that.", None),
        ] {
            assert_eq!(extract_sql(reply).as_deref(), want, "{reply}");
        }
    }
}
