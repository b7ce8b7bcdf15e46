//! Copilot evaluations: `eval sql` (execution accuracy on text-to-SQL questions), `eval qa`
//! (answers and citations on a reading-comprehension set), `eval routing` (the router on a
//! bilingual question table). Each prints a table and the command's settings.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use knowhub_agent::{Agent, AgentOptions, AskRequest, Route, StopReason};
use knowhub_engine::{Engine, IngestOptions, dev_context};
use serde::Serialize;

use crate::ask::LlmArgs;
use crate::eval_retrieval::{field, id_of, read_jsonl, write_corpus};

#[derive(Debug, clap::Args)]
pub(crate) struct SqlEvalArgs {
    /// The SQLite database.
    #[arg(
        long,
        default_value = "../shared/corpora/sql/chinook/Chinook_Sqlite.sqlite"
    )]
    db: PathBuf,
    /// Questions with gold SQL (JSON list of {id, question, gold_sql}).
    #[arg(
        long,
        default_value = "../shared/corpora/sql/chinook/deepagents_chinook_text2sql.gold_results__latest_db.json"
    )]
    questions: PathBuf,
    /// Evaluate only N questions.
    #[arg(long)]
    limit: Option<usize>,
    /// Skip the first N questions (with `--limit`, evaluate a slice).
    #[arg(long, default_value_t = 0)]
    offset: usize,
    /// Rows compared per result. The copilot caps what it shows at 50 rows, but two correct
    /// statements without an ORDER BY may return different first 50 of the same rows, so the
    /// evaluation compares whole results (both sides run under the same cap).
    #[arg(long, default_value_t = 100_000)]
    max_rows: usize,
}

#[derive(Debug, clap::Args)]
pub(crate) struct QaEvalArgs {
    /// A folder with corpus.jsonl, queries.jsonl and answers.jsonl (CMRC 2018 in BEIR form).
    #[arg(long, default_value = "../shared/corpora/cmrc2018_zh")]
    dataset: PathBuf,
    /// Evaluate N questions (the first N, or the N after `--offset`).
    #[arg(long, default_value_t = 100)]
    limit: usize,
    /// Skip the first N questions (with `--limit`, evaluate a slice: a held-out set).
    #[arg(long, default_value_t = 0)]
    offset: usize,
    /// Keep the ingested corpus here between runs.
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Ask for brief answers (the words of the evidence that answer, as `knowhub ask
    /// --brief`), the form of CMRC's gold answers.
    #[arg(long)]
    brief: bool,
    /// Also write one JSON line per question here (question, gold spans, answer, the model's
    /// own words, the lines shown, F1, whether the citation hit the gold passage), so a run's
    /// answers can be studied, or a change to what is done with them measured, without asking
    /// the model again.
    #[arg(long)]
    details: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct SqlRow {
    id: i64,
    question: String,
    ok: bool,
    /// The same rows with the columns in another order (Spider's test-suite rule).
    any_order: bool,
    /// Same rows, but columns chosen differently: every column we returned is one of the gold
    /// result's columns (as a multiset of values) and the row counts agree.
    relaxed: bool,
    by: Option<String>,
    sql: Option<String>,
    error: Option<String>,
    /// Every statement tried and why it was turned down, when none answered (what to fix next).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tried: Vec<String>,
    ms: u64,
}

pub(crate) fn sql(args: &SqlEvalArgs, llm: &LlmArgs, json: bool) -> Result<ExitCode> {
    if !args.db.is_file() || !args.questions.is_file() {
        eprintln!(
            "skipped: {} or {} not found",
            args.db.display(),
            args.questions.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let model = llm.load()?;
    let items: Vec<serde_json::Value> = serde_json::from_slice(
        &std::fs::read(&args.questions)
            .with_context(|| format!("cannot read {}", args.questions.display()))?,
    )?;
    let schema = knowhub_sql::introspect(&args.db, 3)?;
    let policy = knowhub_sql::Policy {
        limit: args.max_rows.max(1),
        timeout: std::time::Duration::from_secs(10),
        max_result_bytes: 256 * 1024 * 1024,
        ..knowhub_sql::Policy::default()
    };
    // The copilot's own retry budget and schema size, so the evaluation measures what users get.
    let options = knowhub_agent::AgentOptions::default();
    let mut rows = Vec::new();
    let started = Instant::now();
    for item in items
        .iter()
        .skip(args.offset)
        .take(args.limit.unwrap_or(usize::MAX))
    {
        let question = field(item, "question").to_string();
        let gold_sql = field(item, "gold_sql");
        // The gold statement runs under the same policy, so both sides see the same row cap.
        let gold = knowhub_sql::validate(gold_sql, &schema, &policy)
            .and_then(|q| knowhub_sql::execute(&args.db, &q, &policy));
        let Ok(gold) = gold else {
            eprintln!(
                "note: gold SQL of #{} does not run here; skipped",
                item["id"]
            );
            continue;
        };
        let t = Instant::now();
        let out = knowhub_sqlgen::nl2sql(
            model.as_deref(),
            &schema,
            &args.db,
            &policy,
            &question,
            options.retry_budget,
            options.schema_chars,
        );
        let ms = t.elapsed().as_millis() as u64;
        let (ok, by, sql, error) = match &out.answer {
            Some(a) => (
                knowhub_sql::results_match(&gold, &a.result),
                Some(a.by.clone()),
                Some(a.sql.clone()),
                None,
            ),
            None => (
                false,
                None,
                None,
                out.attempts.last().and_then(|a| a.error.clone()),
            ),
        };
        let any_order = ok
            || out
                .answer
                .as_ref()
                .is_some_and(|a| knowhub_sql::results_match_any_column_order(&gold, &a.result));
        let relaxed = any_order
            || out
                .answer
                .as_ref()
                .is_some_and(|a| columns_within(&a.result, &gold));
        if !json {
            eprintln!(
                "{:>3} {} {:>6} ms  {}",
                item["id"],
                match (ok, any_order) {
                    (true, _) => "✓",
                    (false, true) => "≈",
                    _ => "✗",
                },
                ms,
                question
            );
            if !any_order {
                eprintln!(
                    "      gold: {gold_sql}\n      ours: {}",
                    sql.as_deref()
                        .or(error.as_deref())
                        .unwrap_or("(no statement)")
                );
            }
        }
        rows.push(SqlRow {
            id: item["id"].as_i64().unwrap_or(-1),
            question,
            ok,
            any_order,
            relaxed,
            by,
            sql,
            error,
            tried: if out.answer.is_some() {
                Vec::new()
            } else {
                out.attempts
                    .iter()
                    .map(|a| {
                        format!(
                            "[{}] {} — {}",
                            a.by,
                            a.sql,
                            a.error.as_deref().unwrap_or("no error")
                        )
                    })
                    .collect()
            },
            ms,
        });
    }
    let n = rows.len().max(1);
    let correct = rows.iter().filter(|r| r.ok).count();
    let any_order = rows.iter().filter(|r| r.any_order).count();
    let relaxed = rows.iter().filter(|r| r.relaxed).count();
    let answered = rows.iter().filter(|r| r.sql.is_some()).count();
    let model_id = model
        .as_deref()
        .map(|m| m.model_id().to_string())
        .unwrap_or_else(|| "templates only".into());
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "model": model_id, "questions": rows.len(), "correct": correct,
                "correct_any_column_order": any_order, "answered": answered, "rows": rows,
            }))?
        );
    } else {
        let mut ms: Vec<u64> = rows.iter().map(|r| r.ms).collect();
        ms.sort_unstable();
        println!(
            "\n| text-to-SQL ({}) | value |",
            args.db
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default()
        );
        println!("|---|---|");
        println!("| generator | {model_id} |");
        println!("| rows compared per result, at most | {} |", policy.limit);
        println!("| questions | {} |", rows.len());
        println!(
            "| execution accuracy, columns in any order (Spider test-suite rule; ≈ marks) | \
             {:.1}% ({any_order}/{}) |",
            100.0 * any_order as f64 / n as f64,
            rows.len()
        );
        println!(
            "| execution accuracy, columns in the gold's order (✓ marks) | {:.1}% ({correct}/{}) |",
            100.0 * correct as f64 / n as f64,
            rows.len()
        );
        println!(
            "| relaxed (our columns ⊆ gold columns, same rows) | {:.1}% ({relaxed}/{}) |",
            100.0 * relaxed as f64 / n as f64,
            rows.len()
        );
        println!("| a statement ran (valid, safe) | {answered} |");
        println!(
            "| median / p95 time per question | {} / {} ms |",
            ms.get(ms.len() / 2).copied().unwrap_or(0),
            ms.get(ms.len() * 95 / 100).copied().unwrap_or(0)
        );
        println!("| total | {:.0} s |", started.elapsed().as_secs_f64());
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Serialize, Default)]
struct QaTotals {
    questions: usize,
    exact: usize,
    f1_sum: f64,
    /// CMRC 2018's own F1 (`cmrc_f1`), stricter than the character F1 of `f1_sum`.
    f1_cmrc_sum: f64,
    contains: usize,
    answered: usize,
    cited_gold: usize,
    /// Brief answers: a gold span stood in the sentences the model was shown (so a miss was
    /// the reader's, not the choice of sentences).
    gold_shown: usize,
    /// Brief answers: character F1 of the model's own words before they were widened to their
    /// clause (the same answers, so the two F1s compare the widening alone).
    f1_unwidened_sum: f64,
    /// Answers the model wrote that passed the citation check (the rest are the extractive
    /// sentences, or an abstention).
    written_by_model: usize,
}

pub(crate) fn qa(
    args: &QaEvalArgs,
    models: &crate::ModelArgs,
    llm: &LlmArgs,
    json: bool,
) -> Result<ExitCode> {
    let ds = &args.dataset;
    if !ds.join("corpus.jsonl").is_file() {
        eprintln!("skipped: {} has no corpus.jsonl", ds.display());
        return Ok(ExitCode::SUCCESS);
    }
    let temp = tempfile::tempdir()?;
    let work = args
        .work_dir
        .clone()
        .unwrap_or_else(|| temp.path().to_path_buf());
    std::fs::create_dir_all(&work)?;
    let ids = write_corpus(ds, &work)?;
    let mut config = crate::engine_config(work.join("data"))?;
    config.models = models.config()?;
    let engine = Arc::new(Engine::open(config)?);
    let ctx = dev_context();
    engine.ingest(
        &ctx,
        &[work.join("corpus")],
        &IngestOptions::default(),
        &mut |_| {},
    )?;
    let queries: HashMap<String, String> = read_jsonl(&ds.join("queries.jsonl"))?
        .iter()
        .filter_map(|q| Some((id_of(q)?, field(q, "text").to_string())))
        .collect();
    let answers = read_jsonl(&ds.join("answers.jsonl"))?;
    let model = llm.load()?;
    let options = AgentOptions {
        brief_answers: args.brief,
        ..AgentOptions::default()
    };
    let agent = Agent::new(Arc::clone(&engine), model, options);
    let mut t = QaTotals::default();
    let mut details = args
        .details
        .as_ref()
        .map(|p| {
            std::fs::File::create(p)
                .map(std::io::BufWriter::new)
                .with_context(|| format!("cannot write {}", p.display()))
        })
        .transpose()?;
    let started = Instant::now();
    for a in answers.iter().skip(args.offset).take(args.limit) {
        let Some(qid) = id_of(a) else { continue };
        let Some(question) = queries.get(&qid) else {
            continue;
        };
        let golds: Vec<String> = a["answers"]
            .as_array()
            .map(|v| {
                v.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let gold_doc = field(a, "doc_id");
        let outcome = agent.ask(
            &ctx,
            &AskRequest {
                question: question.clone(),
                session: None,
                ephemeral: true,
                project: None,
                cancel: Default::default(),
            },
            &mut |_| {},
        )?;
        let out = &outcome.state.output;
        t.questions += 1;
        let shown = shown_lines(&outcome.state);
        let gold_shown = golds
            .iter()
            .map(String::as_str)
            .map(normalize)
            .any(|g| !g.is_empty() && shown.iter().any(|l| normalize(l).contains(&g)));
        t.gold_shown += usize::from(gold_shown);
        // What every question's details line says; an answered one adds its answer below.
        let mut line = serde_json::json!({
            "id": qid, "question": question, "golds": golds, "gold_doc": gold_doc,
            "stop_reason": out.stop_reason, "shown": shown, "gold_shown": gold_shown,
            "f1": 0.0,
        });
        if out.stop_reason != StopReason::Ok {
            write_details(details.as_mut(), &line)?;
            continue;
        }
        t.answered += 1;
        t.written_by_model += usize::from(outcome.state.draft.written_by == "llm");
        let answer = strip_citations(&out.final_answer);
        let best_f1 = golds
            .iter()
            .map(|g| char_f1(&answer, g))
            .fold(0.0, f64::max);
        t.f1_sum += best_f1;
        let best_cmrc_f1 = golds
            .iter()
            .map(|g| cmrc_f1(&answer, g))
            .fold(0.0, f64::max);
        t.f1_cmrc_sum += best_cmrc_f1;
        let own = model_words(&outcome.state).unwrap_or_else(|| answer.clone());
        t.f1_unwidened_sum += golds.iter().map(|g| char_f1(&own, g)).fold(0.0, f64::max);
        if golds.iter().any(|g| normalize(&answer) == normalize(g)) {
            t.exact += 1;
        }
        if golds
            .iter()
            .any(|g| normalize(&answer).contains(&normalize(g)))
        {
            t.contains += 1;
        }
        // Did a citation point at the gold passage? (Document ids map to corpus ids by the
        // file stem the corpus was written under.)
        let cited_gold = out.rendered_sources.iter().any(|s| {
            outcome
                .state
                .evidence_items
                .iter()
                .find(|e| e.evidence_id == s.evidence_id)
                .and_then(|e| e.source.doc_id)
                .and_then(|d| engine.document(&ctx, knowhub_engine::DocumentId(d)).ok())
                .and_then(|doc| {
                    Path::new(&doc.path)
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                })
                .and_then(|stem| stem.parse::<usize>().ok())
                .and_then(|n| ids.get(n))
                .is_some_and(|id| id == gold_doc)
        });
        t.cited_gold += usize::from(cited_gold);
        line["answer"] = answer.clone().into();
        line["model_words"] = model_words(&outcome.state).into();
        line["written_by"] = outcome.state.draft.written_by.clone().into();
        line["f1"] = best_f1.into();
        line["f1_cmrc"] = best_cmrc_f1.into();
        line["cited_gold"] = cited_gold.into();
        write_details(details.as_mut(), &line)?;
        if !json {
            eprintln!(
                "{qid}\tF1 {best_f1:.2}\t{}\t{}\t| model: {}\t| gold: {}",
                match (args.brief, gold_shown) {
                    (false, _) => "",
                    (true, true) => "shown",
                    (true, false) => "-",
                },
                answer.replace('\n', " "),
                own.replace('\n', " "),
                golds.first().map_or("", String::as_str)
            );
        }
    }
    let n = t.questions.max(1) as f64;
    let writer = agent.llm_id().unwrap_or("extractive (no LLM)").to_string();
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"writer": writer, "totals": t}))?
        );
    } else {
        println!("\n| QA on {} | value |", ds.display());
        println!("|---|---|");
        println!("| answers written by | {writer} |");
        println!(
            "| answer style | {} |",
            if args.brief {
                "brief (--brief)"
            } else {
                "cited sentences"
            }
        );
        println!("| questions | {} |", t.questions);
        println!(
            "| answered (not abstained) | {:.1}% |",
            100.0 * t.answered as f64 / n
        );
        println!("| exact match | {:.1}% |", 100.0 * t.exact as f64 / n);
        println!(
            "| character F1 (answer vs gold span) | {:.1}% |",
            100.0 * t.f1_sum / n
        );
        println!(
            "| CMRC 2018 F1 (its evaluation script's: longest common run of words) | {:.1}% |",
            100.0 * t.f1_cmrc_sum / n
        );
        println!(
            "| answer contains a gold span | {:.1}% |",
            100.0 * t.contains as f64 / n
        );
        println!(
            "| a citation points at the gold passage | {:.1}% |",
            100.0 * t.cited_gold as f64 / n
        );
        println!(
            "| answers the model wrote that passed the citation check | {:.1}% |",
            100.0 * t.written_by_model as f64 / n
        );
        if args.brief {
            println!(
                "| character F1 of the model's own words (before widening to their clause) | {:.1}% |",
                100.0 * t.f1_unwidened_sum / n
            );
            println!(
                "| a gold span stands in the sentences the model was shown | {:.1}% |",
                100.0 * t.gold_shown as f64 / n
            );
        }
        println!(
            "| time | {:.0} s ({:.2} s/question) |",
            started.elapsed().as_secs_f64(),
            started.elapsed().as_secs_f64() / n
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The router on a fixed bilingual table: rules alone, and the LLM when one is configured.
#[derive(Debug, clap::Args)]
pub(crate) struct RoutingEvalArgs {
    /// Text-to-SQL questions (every one wants SQL); skipped when absent.
    #[arg(
        long,
        default_value = "../shared/corpora/sql/chinook/deepagents_chinook_text2sql.gold_results__latest_db.json"
    )]
    sql_questions: PathBuf,
    /// Reading-comprehension questions, BEIR `queries.jsonl` (every one wants documents);
    /// skipped when absent.
    #[arg(long, default_value = "../shared/corpora/cmrc2018_zh/queries.jsonl")]
    doc_questions: PathBuf,
    /// Take at most N questions from each of the two files.
    #[arg(long, default_value_t = 78)]
    limit: usize,
    /// The database the text-to-SQL questions are about (its table names are shown to the
    /// model, as for a registered source).
    #[arg(
        long,
        default_value = "../shared/corpora/sql/chinook/Chinook_Sqlite.sqlite"
    )]
    db: PathBuf,
}

/// The bilingual table written with the rules (it names every route).
const ROUTING_TABLE: &[(&str, Route)] = &[
    ("How many clients are from Brazil?", Route::Sql),
    ("List all books by Ann Lee", Route::Sql),
    ("What is the total of all orders last month?", Route::Sql),
    ("Which staff member has the most clients?", Route::Sql),
    ("有多少位客户来自巴西？", Route::Sql),
    ("统计上月新增的订单数量", Route::Sql),
    ("列出所有图书", Route::Sql),
    ("按国家统计客户数量排名", Route::Sql),
    ("What is the default rolling update strategy?", Route::Doc),
    ("How do I configure the VPN on a new laptop?", Route::Doc),
    ("Why are deployments frozen on Fridays?", Route::Doc),
    (
        "What does the security policy say about USB drives?",
        Route::Doc,
    ),
    ("部署规范里默认的滚动更新策略是什么？", Route::Doc),
    ("新员工试用期有多长？", Route::Doc),
    ("如何申请年假？", Route::Doc),
    ("事故处理流程的第一步是什么？", Route::Doc),
    (
        "What is the refund policy, and how many orders were refunded?",
        Route::Hybrid,
    ),
    ("根据制度说明年假规定，并统计有多少员工", Route::Hybrid),
    ("?", Route::Clarify),
    ("hm", Route::Clarify),
    ("DELETE FROM client WHERE country = 'Brazil'", Route::Refuse),
    (
        "Give me the admin password of the finance database",
        Route::Refuse,
    ),
    ("删除所有订单数据", Route::Refuse),
    ("Delete every order from 2020.", Route::Refuse),
    (
        "Which field do I set for a staged rolling update?",
        Route::Doc,
    ),
    ("How do I remove an old package?", Route::Doc),
    ("如何删除旧的软件包？", Route::Doc),
    ("How do I generate an SSH key?", Route::Doc),
    ("告诉我别人的密码", Route::Refuse),
];

/// One question set of `eval routing` and how each router did on it.
#[derive(Debug, Default, Serialize)]
struct RoutingSet {
    name: String,
    questions: usize,
    rules_correct: usize,
    llm_alone_correct: usize,
    final_correct: usize,
    /// The final route runs the wanted tool (HYBRID covers DOC and SQL).
    final_covers: usize,
    rules_wrong: Vec<String>,
    final_wrong: Vec<String>,
    seconds: f64,
}

pub(crate) fn routing(args: &RoutingEvalArgs, llm: &LlmArgs, json: bool) -> Result<ExitCode> {
    let model = llm.load()?;
    let mut sets = Vec::new();
    // The built-in table: tables imported as spreadsheets, so their words are the data terms.
    let data: std::collections::HashSet<String> = [
        "client", "book", "order", "staff", "product", "客户", "图书", "订单", "员工", "country",
        "国家",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let tables: Vec<String> = ["Client", "Book", "Order", "Staff", "Product"]
        .map(String::from)
        .to_vec();
    let table: Vec<(String, Route)> = ROUTING_TABLE
        .iter()
        .map(|(q, r)| (q.to_string(), *r))
        .collect();
    sets.push(route_set(
        "built-in bilingual table",
        &table,
        &tables,
        Some(&data),
        None,
        model.as_deref(),
    ));
    // Third-party questions: the Chinook database registered as a data source (RouteNode
    // counts any question as possibly about it, as for every registered database). The model
    // is shown the database's table names here; RouteNode shows a registered database by its
    // registered name only (spreadsheet sheets by their table names).
    // Its schema with 3 samples per column, as the agent reads it, tells the rules whether the
    // template path understands a question.
    let chinook_schema = if args.db.is_file() {
        Some(knowhub_sql::introspect(&args.db, 3)?)
    } else {
        eprintln!(
            "note: {} not found; no table names shown",
            args.db.display()
        );
        None
    };
    let chinook: Vec<String> = chinook_schema
        .iter()
        .flat_map(|s| s.tables.iter().map(|t| t.name.clone()))
        .collect();
    let registered = std::collections::HashSet::new();
    if args.sql_questions.is_file() {
        let items: Vec<serde_json::Value> = serde_json::from_slice(
            &std::fs::read(&args.sql_questions)
                .with_context(|| format!("cannot read {}", args.sql_questions.display()))?,
        )?;
        let qs: Vec<(String, Route)> = items
            .iter()
            .map(|i| field(i, "question").to_string())
            .filter(|q| !q.is_empty())
            .take(args.limit)
            .map(|q| (q, Route::Sql))
            .collect();
        sets.push(route_set(
            "Chinook text-to-SQL questions (want SQL)",
            &qs,
            &chinook,
            Some(&registered),
            chinook_schema.as_ref(),
            model.as_deref(),
        ));
    } else {
        eprintln!("skipped: {} not found", args.sql_questions.display());
    }
    if args.doc_questions.is_file() {
        let qs: Vec<(String, Route)> = read_jsonl(&args.doc_questions)?
            .iter()
            .map(|q| field(q, "text").to_string())
            .filter(|q| !q.is_empty())
            .take(args.limit)
            .map(|q| (q, Route::Doc))
            .collect();
        sets.push(route_set(
            "CMRC 2018 reading questions (want DOC; Chinook registered too)",
            &qs,
            &chinook,
            Some(&registered),
            chinook_schema.as_ref(),
            model.as_deref(),
        ));
    } else {
        eprintln!("skipped: {} not found", args.doc_questions.display());
    }
    if json {
        println!(
            "{}",
            serde_json::json!({
                "llm": model.as_ref().map(|m| m.model_id().to_string()),
                "sets": sets,
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    let pct = |k: usize, n: usize| 100.0 * k as f64 / n.max(1) as f64;
    match &model {
        Some(m) => {
            println!(
                "| question set | n | rules | {0} alone | {0} + rules: exact | right tool run |",
                m.model_id()
            );
            println!("|---|---|---|---|---|---|");
        }
        None => {
            println!("| question set | n | rules |");
            println!("|---|---|---|");
        }
    }
    for s in &sets {
        let n = s.questions;
        let rules = format!("{}/{n} = {:.0}%", s.rules_correct, pct(s.rules_correct, n));
        if model.is_some() {
            println!(
                "| {} | {n} | {rules} | {}/{n} = {:.0}% | {}/{n} = {:.0}% | {}/{n} = {:.0}% |",
                s.name,
                s.llm_alone_correct,
                pct(s.llm_alone_correct, n),
                s.final_correct,
                pct(s.final_correct, n),
                s.final_covers,
                pct(s.final_covers, n)
            );
        } else {
            println!("| {} | {n} | {rules} |", s.name);
        }
    }
    for s in &sets {
        let wrong = if model.is_some() {
            &s.final_wrong
        } else {
            &s.rules_wrong
        };
        if wrong.is_empty() {
            continue;
        }
        println!("\n{} ({:.1} s):", s.name, s.seconds);
        for w in wrong {
            println!("  ✗ {w}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Routes every question of one set by the rules and, with a model, as RouteNode does.
fn route_set(
    name: &str,
    questions: &[(String, Route)],
    tables: &[String],
    data_terms: Option<&std::collections::HashSet<String>>,
    schema: Option<&knowhub_sql::Schema>,
    model: Option<&dyn knowhub_llm::Llm>,
) -> RoutingSet {
    let started = Instant::now();
    let mut set = RoutingSet {
        name: name.to_string(),
        questions: questions.len(),
        ..RoutingSet::default()
    };
    for (q, want) in questions {
        // As RouteNode: the template is consulted where the keywords say DOC.
        let (keywords, _) = knowhub_agent::route_by_rules(q, data_terms, false);
        let understood = keywords == Route::Doc
            && schema.is_some_and(|s| knowhub_sqlgen::template_for(q, s).is_some());
        let (got, _) = knowhub_agent::route_by_rules(q, data_terms, understood);
        if got == *want {
            set.rules_correct += 1;
        } else {
            set.rules_wrong.push(format!(
                "{q}: rules said {}, want {}",
                got.as_str(),
                want.as_str()
            ));
        }
        let Some(model) = model else { continue };
        let (chosen, final_route) =
            knowhub_agent::route_with_llm(model, q, tables, data_terms, understood);
        if chosen == Some(*want) {
            set.llm_alone_correct += 1;
        }
        if final_route == *want {
            set.final_correct += 1;
        }
        // A DOC/SQL disagreement runs both tools (HYBRID): the wanted tool ran.
        if final_route == *want
            || (final_route == Route::Hybrid && matches!(want, Route::Doc | Route::Sql))
        {
            set.final_covers += 1;
        } else {
            set.final_wrong.push(format!(
                "{q}: LLM said {}, routed {}, want {}",
                chosen.map_or("(unusable)", |r| r.as_str()),
                final_route.as_str(),
                want.as_str()
            ));
        }
    }
    set.seconds = started.elapsed().as_secs_f64();
    set
}

/// Relaxed execution match: same row count, and each of our columns equals (as a sorted list of
/// rendered values) some column of the gold result.
fn columns_within(ours: &knowhub_sql::QueryResult, gold: &knowhub_sql::QueryResult) -> bool {
    if ours.rows.len() != gold.rows.len() || ours.columns.is_empty() {
        return false;
    }
    let column = |r: &knowhub_sql::QueryResult, j: usize| {
        let mut v: Vec<String> = r
            .rows
            .iter()
            .map(|row| row.get(j).map(|x| x.to_string()).unwrap_or_default())
            .collect();
        v.sort();
        v
    };
    let gold_cols: Vec<Vec<String>> = (0..gold.columns.len()).map(|k| column(gold, k)).collect();
    (0..ours.columns.len()).all(|j| gold_cols.contains(&column(ours, j)))
}

/// One question's line of `eval qa --details`, flushed at once so a run cut short keeps what
/// it measured.
fn write_details(
    details: Option<&mut std::io::BufWriter<std::fs::File>>,
    line: &serde_json::Value,
) -> Result<()> {
    if let Some(w) = details {
        writeln!(w, "{line}")?;
        w.flush()?;
    }
    Ok(())
}

/// The sentences the brief path showed the model (from the synthesis step's trace).
fn shown_lines(state: &knowhub_agent::AgentState) -> Vec<String> {
    state
        .trace_steps
        .iter()
        .filter_map(|s| s.out.get("shown_lines")?.as_array())
        .flatten()
        .filter_map(|l| Some(l.get("text")?.as_str()?.to_string()))
        .collect()
}

/// The brief answer's words as the model wrote them, before widening (from the trace).
fn model_words(state: &knowhub_agent::AgentState) -> Option<String> {
    state
        .trace_steps
        .iter()
        .find_map(|s| s.out.get("model_words")?.as_str().map(str::to_owned))
}

fn strip_citations(s: &str) -> String {
    let mut out = String::new();
    let mut skip = false;
    for c in s.chars() {
        match c {
            '[' => skip = true,
            ']' => skip = false,
            _ if !skip => out.push(c),
            _ => {}
        }
    }
    out
}

fn normalize(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Character-level F1 (the CMRC 2018 metric works on characters for Chinese).
fn char_f1(pred: &str, gold: &str) -> f64 {
    let p: Vec<char> = normalize(pred).chars().collect();
    let g: Vec<char> = normalize(gold).chars().collect();
    if p.is_empty() || g.is_empty() {
        return 0.0;
    }
    let mut counts: HashMap<char, i64> = HashMap::new();
    for c in &g {
        *counts.entry(*c).or_default() += 1;
    }
    let mut common = 0;
    for c in &p {
        if let Some(n) = counts.get_mut(c)
            && *n > 0
        {
            *n -= 1;
            common += 1;
        }
    }
    if common == 0 {
        return 0.0;
    }
    let precision = common as f64 / p.len() as f64;
    let recall = common as f64 / g.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// F1 as CMRC 2018's evaluation script (`cmrc2018_evaluate.py`, `calc_f1_score`) computes it:
/// both texts split into words (`cmrc_words`), and the overlap is the longest run of words the
/// two share in order. Stricter than `char_f1`, which counts shared characters wherever they
/// stand: an answer that holds the gold's characters out of order earns nothing extra here.
fn cmrc_f1(pred: &str, gold: &str) -> f64 {
    let p = cmrc_words(pred);
    let g = cmrc_words(gold);
    let common = longest_common_run(&p, &g);
    if common == 0 {
        return 0.0;
    }
    let precision = common as f64 / p.len() as f64;
    let recall = common as f64 / g.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// The script's punctuation (`sp_char`): dropped before splitting. Its "……" is a two-character
/// string that no single character equals, so a "…" is kept, as there.
const CMRC_PUNCTUATION: &str = "-:_*^/\\~`+=，。：？！“”；’《》·、「」（）－～『』";

/// The script's "mixed segmentation" with punctuation removed: lower-cased and trimmed; each
/// ideograph of U+4E00–U+9FA5 is a word; the text between them goes through NLTK's word
/// tokenizer, here its common cases: runs of letters and digits, a number with its decimal
/// point or thousands separator ("7.07", "1,000"), and each other symbol ("%", "(") on its own.
fn cmrc_words(s: &str) -> Vec<String> {
    let is_ideograph = |c: char| ('\u{4e00}'..='\u{9fa5}').contains(&c);
    let text: Vec<char> = s
        .trim()
        .chars()
        .flat_map(char::to_lowercase)
        .filter(|c| !CMRC_PUNCTUATION.contains(*c))
        .collect();
    let mut words = Vec::new();
    let mut word = String::new();
    for (i, &c) in text.iter().enumerate() {
        let joins_a_number = matches!(c, '.' | ',')
            && word.chars().last().is_some_and(|p| p.is_ascii_digit())
            && text.get(i + 1).is_some_and(char::is_ascii_digit);
        if (c.is_alphanumeric() && !is_ideograph(c)) || joins_a_number {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if !c.is_whitespace() {
            words.push(c.to_string());
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Length of the longest run of words `a` and `b` share (a longest common substring).
fn longest_common_run(a: &[String], b: &[String]) -> usize {
    let mut best = 0;
    let mut previous = vec![0usize; b.len() + 1];
    for x in a {
        let mut row = vec![0usize; b.len() + 1];
        for (j, y) in b.iter().enumerate() {
            if x == y {
                row[j + 1] = previous[j] + 1;
                best = best.max(row[j + 1]);
            }
        }
        previous = row;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmrc_f1_is_the_evaluation_scripts() {
        // (prediction, gold, F1): values worked out by hand from the script's definition.
        let table = [
            ("4分钟", "4分钟", 1.0),
            ("约4分钟内", "4分钟", 2.0 * 0.6 * 1.0 / 1.6),
            // Shared characters out of order: char F1 is 1.0, the longest shared run is 2.
            ("分钟4", "4分钟", 2.0 / 3.0),
            // "1628" and "7.07" are one word each; the script's punctuation is dropped.
            (
                "于1628年。",
                "1628年",
                2.0 * (2.0 / 3.0) / (2.0 / 3.0 + 1.0),
            ),
            ("为7.07", "7.07", 2.0 * 0.5 / 1.5),
            // ASCII punctuation is a word of its own, as NLTK splits it.
            (
                "The Beatles",
                "the beatles!",
                2.0 * (2.0 / 3.0) / (1.0 + 2.0 / 3.0),
            ),
            ("Wi-Fi", "wifi", 1.0),
            ("", "x", 0.0),
            ("abc", "", 0.0),
            ("甲乙", "丙丁", 0.0),
        ];
        for (pred, gold, want) in table {
            let got = cmrc_f1(pred, gold);
            assert!(
                (got - want).abs() < 1e-9,
                "{pred} vs {gold}: {got} != {want}"
            );
        }
        assert_eq!(
            cmrc_words(" 50%的Wi-Fi，约1,000.5 (primary) "),
            [
                "50", "%", "的", "wifi", "约", "1,000.5", "(", "primary", ")"
            ]
        );
    }

    #[test]
    fn char_f1_and_normalisation() {
        assert!((char_f1("4分钟", "4分钟") - 1.0).abs() < 1e-9);
        assert_eq!(char_f1("", "x"), 0.0);
        assert!(char_f1("约4分钟内", "4分钟") > 0.7);
        assert_eq!(strip_citations("a [1] b [2]"), "a  b ");
    }
}
