//! `knowhub eval docs`: the copilot end to end on a documentation set it was not tuned on
//! (`eval/debian-faq`: the Debian FAQ in English and Chinese, with 136 questions). Every
//! answer is scored strictly: every gold string in the answer and the gold document cited; an
//! unanswerable question must end in `no_evidence` with nothing cited. Times are measured as
//! a user waits: to the first word shown and to the whole answer.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use knowhub_agent::{Agent, AgentEvent, AgentOptions, AskOutcome, AskRequest, Route, StopReason};
use knowhub_engine::{Engine, IngestOptions, dev_context};
use serde::{Deserialize, Serialize};

use crate::ask::LlmArgs;

#[derive(Debug, clap::Args)]
pub(crate) struct DocsEvalArgs {
    /// The set's folder: `questions.jsonl` and `docs/` (fetched by
    /// `scripts/fetch_eval_docs.sh`).
    #[arg(long, default_value = "eval/debian-faq")]
    set: PathBuf,
    /// The documents, when not the set's `docs/` folder (`assets/demo` for `eval/demo`).
    #[arg(long)]
    docs: Option<PathBuf>,
    /// Only the questions in this language (`en`, `zh-cn`).
    #[arg(long)]
    lang: Option<String>,
    /// Only questions whose id starts with this (`en-fact`, `zh-followup`).
    #[arg(long)]
    only: Option<String>,
    /// Evaluate N questions (after `--offset`).
    #[arg(long)]
    limit: Option<usize>,
    /// Skip the first N questions.
    #[arg(long, default_value_t = 0)]
    offset: usize,
    /// Keep the ingested knowledge base here between runs.
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Also write one JSON line per question here (answer, citations, verdict, times).
    #[arg(long)]
    details: Option<PathBuf>,
}

/// One question of the set (see `eval/debian-faq/README.md`).
#[derive(Debug, Deserialize)]
struct Question {
    id: String,
    lang: String,
    kind: String,
    #[serde(default)]
    history: Vec<String>,
    question: String,
    gold: Vec<Gold>,
    doc: Option<String>,
    #[serde(default)]
    also: Vec<String>,
    page: Option<u32>,
}

/// A gold string, or acceptable alternatives of one.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Gold {
    One(String),
    Any(Vec<String>),
}

impl Gold {
    fn found_in(&self, answer: &str) -> bool {
        let hit = |g: &str| {
            let g = normalize(g);
            !g.is_empty() && answer.contains(&g)
        };
        match self {
            Gold::One(g) => hit(g),
            Gold::Any(gs) => gs.iter().any(|g| hit(g)),
        }
    }
}

/// How one question went.
#[derive(Debug, Serialize)]
struct Verdict {
    id: String,
    lang: String,
    kind: String,
    question: String,
    answer: String,
    stop_reason: String,
    route: String,
    written_by: String,
    cited: Vec<String>,
    golds_found: bool,
    gold_doc_cited: bool,
    strict: bool,
    first_word_ms: u64,
    total_ms: u64,
}

#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    questions: usize,
    strict: usize,
}

pub(crate) fn docs(
    args: &DocsEvalArgs,
    models: &crate::ModelArgs,
    llm: &LlmArgs,
    json: bool,
) -> Result<ExitCode> {
    let docs_dir = args.docs.clone().unwrap_or_else(|| args.set.join("docs"));
    let questions_file = args.set.join("questions.jsonl");
    if !questions_file.is_file() {
        bail!("{} not found", questions_file.display());
    }
    if !docs_dir.is_dir() {
        bail!(
            "{} not found: run scripts/fetch_eval_docs.sh first",
            docs_dir.display()
        );
    }
    let docs_dir = docs_dir.canonicalize()?;
    let questions = read_questions(&questions_file)?;
    let questions: Vec<&Question> = questions
        .iter()
        .filter(|q| args.lang.as_ref().is_none_or(|l| &q.lang == l))
        .filter(|q| {
            args.only
                .as_ref()
                .is_none_or(|p| q.id.starts_with(p.as_str()))
        })
        .skip(args.offset)
        .take(args.limit.unwrap_or(usize::MAX))
        .collect();

    let temp = tempfile::tempdir()?;
    let work = args
        .work_dir
        .clone()
        .unwrap_or_else(|| temp.path().to_path_buf());
    std::fs::create_dir_all(&work)?;
    let mut config = crate::engine_config(work.join("data"))?;
    config.models = models.config()?;
    let engine = Arc::new(Engine::open(config)?);
    let ctx = dev_context();
    let report = engine.ingest(
        &ctx,
        std::slice::from_ref(&docs_dir),
        &IngestOptions::default(),
        &mut |_| {},
    )?;
    if !json {
        eprintln!(
            "ingested {}: {} files ({} failed)",
            docs_dir.display(),
            report.files,
            report.failed
        );
    }
    let model = llm.load()?;
    let agent = Agent::new(Arc::clone(&engine), model, AgentOptions::default());
    let writer = agent
        .llm_id()
        .unwrap_or("extractive (no model)")
        .to_string();

    let mut details = args
        .details
        .as_ref()
        .map(|p| {
            std::fs::File::create(p)
                .map(std::io::BufWriter::new)
                .with_context(|| format!("cannot write {}", p.display()))
        })
        .transpose()?;
    let mut verdicts = Vec::new();
    let started = Instant::now();
    for q in questions {
        // A follow-up is asked in a conversation whose earlier questions were asked first.
        let mut session = None;
        for earlier in &q.history {
            let outcome = agent.ask(&ctx, &request(earlier, session.clone()), &mut |_| {})?;
            session = outcome.session_id;
        }
        let asked = Instant::now();
        let mut first_word: Option<u64> = None;
        let outcome = agent.ask(&ctx, &request(&q.question, session), &mut |e| {
            if let AgentEvent::Token(t) = e
                && first_word.is_none()
                && !t.trim().is_empty()
            {
                first_word = Some(asked.elapsed().as_millis() as u64);
            }
        })?;
        let total_ms = asked.elapsed().as_millis() as u64;
        let v = verdict(
            &engine,
            &ctx,
            q,
            &outcome,
            &docs_dir,
            first_word.unwrap_or(total_ms),
            total_ms,
        );
        if let Some(out) = details.as_mut() {
            serde_json::to_writer(&mut *out, &v)?;
            out.write_all(b"\n")?;
        }
        if !json {
            eprintln!(
                "{}\t{}\tfirst words {:>6} ms\twhole {:>6} ms\t{}",
                v.id,
                if v.strict { "ok  " } else { "MISS" },
                v.first_word_ms,
                v.total_ms,
                v.answer
                    .replace('\n', " ")
                    .chars()
                    .take(140)
                    .collect::<String>()
            );
        }
        verdicts.push(v);
    }
    if let Some(out) = details.as_mut() {
        out.flush()?;
    }
    print_report(&verdicts, &writer, started.elapsed().as_secs_f64(), json)?;
    Ok(ExitCode::SUCCESS)
}

fn read_questions(path: &Path) -> Result<Vec<Question>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).with_context(|| format!("{}: line {}", path.display(), i + 1))
        })
        .collect()
}

fn request(question: &str, session: Option<String>) -> AskRequest {
    AskRequest {
        question: question.to_string(),
        session,
        // Follow-ups need the earlier turns stored; the knowledge base is a throw-away one.
        ephemeral: false,
        project: None,
        cancel: Default::default(),
    }
}

fn verdict(
    engine: &Engine,
    ctx: &knowhub_engine::RequestContext,
    q: &Question,
    outcome: &AskOutcome,
    docs_dir: &Path,
    first_word_ms: u64,
    total_ms: u64,
) -> Verdict {
    let out = &outcome.state.output;
    let answer = strip_markers(&out.final_answer);
    let normalized = normalize(&answer);
    // Each citation's document, as a path under the set's docs folder (with its page).
    let cited: Vec<(String, Option<u32>)> = out
        .rendered_sources
        .iter()
        .filter_map(|s| {
            let evidence = outcome
                .state
                .evidence_items
                .iter()
                .find(|e| e.evidence_id == s.evidence_id)?;
            let doc = engine
                .document(ctx, knowhub_engine::DocumentId(evidence.source.doc_id?))
                .ok()?;
            let path = Path::new(&doc.path);
            let relative = path.strip_prefix(docs_dir).unwrap_or(path);
            Some((relative.to_string_lossy().replace('\\', "/"), s.page))
        })
        .collect();
    let gold_docs: Vec<&str> = q.doc.iter().chain(&q.also).map(String::as_str).collect();
    let gold_doc_cited = cited.iter().any(|(path, page)| {
        gold_docs.contains(&path.as_str()) && q.page.is_none_or(|p| *page == Some(p))
    });
    let cited: Vec<String> = cited
        .into_iter()
        .map(|(path, page)| match page {
            Some(p) => format!("{path}#page={p}"),
            None => path,
        })
        .collect();
    let golds_found = q.gold.iter().all(|g| g.found_in(&normalized));
    let strict = if q.doc.is_none() {
        out.stop_reason == StopReason::NoEvidence && out.rendered_sources.is_empty()
    } else {
        out.stop_reason == StopReason::Ok && golds_found && gold_doc_cited
    };
    Verdict {
        id: q.id.clone(),
        lang: q.lang.clone(),
        kind: q.kind.clone(),
        question: q.question.clone(),
        answer,
        stop_reason: out.stop_reason.as_str().to_string(),
        route: outcome.state.plan.route.as_str().to_string(),
        written_by: outcome.state.draft.written_by.clone(),
        cited,
        golds_found,
        gold_doc_cited,
        strict,
        first_word_ms,
        total_ms,
    }
}

fn print_report(verdicts: &[Verdict], writer: &str, seconds: f64, json: bool) -> Result<()> {
    let mut by_group: BTreeMap<(String, String), Tally> = BTreeMap::new();
    let mut all = Tally::default();
    for v in verdicts {
        for key in [
            (v.lang.clone(), v.kind.clone()),
            (v.lang.clone(), "all".into()),
            ("all".into(), v.kind.clone()),
        ] {
            let t = by_group.entry(key).or_default();
            t.questions += 1;
            t.strict += usize::from(v.strict);
        }
        all.questions += 1;
        all.strict += usize::from(v.strict);
    }
    let unanswerable: Vec<&Verdict> = verdicts
        .iter()
        .filter(|v| v.kind == "unanswerable")
        .collect();
    let abstained = unanswerable.iter().filter(|v| v.strict).count();
    let answerable: Vec<&Verdict> = verdicts
        .iter()
        .filter(|v| v.kind != "unanswerable")
        .collect();
    let refused = answerable
        .iter()
        .filter(|v| v.route == Route::Refuse.as_str() || v.route == Route::Clarify.as_str())
        .count();
    let false_abstentions = answerable
        .iter()
        .filter(|v| v.stop_reason == StopReason::NoEvidence.as_str())
        .count();
    let by_model = answerable.iter().filter(|v| v.written_by == "llm").count();
    let mut first: Vec<u64> = verdicts.iter().map(|v| v.first_word_ms).collect();
    let mut total: Vec<u64> = verdicts.iter().map(|v| v.total_ms).collect();
    first.sort_unstable();
    total.sort_unstable();
    let pct = |a: usize, b: usize| 100.0 * a as f64 / b.max(1) as f64;
    if json {
        let groups: Vec<serde_json::Value> = by_group
            .iter()
            .map(|((lang, kind), t)| {
                serde_json::json!({"lang": lang, "kind": kind, "questions": t.questions,
                    "strict": t.strict})
            })
            .collect();
        {
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({
                    "writer": writer, "questions": all.questions, "strict": all.strict,
                    "abstained": abstained, "unanswerable": unanswerable.len(),
                    "refused_harmless": refused, "false_abstentions": false_abstentions,
                    "first_word_ms": {"median": quantile(&first, 0.5), "p90": quantile(&first, 0.9)},
                    "total_ms": {"median": quantile(&total, 0.5), "p90": quantile(&total, 0.9)},
                    "groups": groups,
                }))?
            );
        }
        return Ok(());
    }
    let mut out = String::new();
    out.push_str(&format!(
        "\n| docs QA, answers written by {writer} | value |\n|---|---|\n"
    ));
    out.push_str(&format!(
        "| strict (gold strings + gold document cited; unanswerable → no_evidence) | {:.1}% ({}/{}) |\n",
        pct(all.strict, all.questions),
        all.strict,
        all.questions
    ));
    out.push_str(&format!(
        "| correct abstentions (unanswerable) | {:.1}% ({abstained}/{}) |\n",
        pct(abstained, unanswerable.len()),
        unanswerable.len()
    ));
    out.push_str(&format!(
        "| refused or asked back (answerable) | {refused} |\n| no_evidence on answerable | {false_abstentions} |\n"
    ));
    out.push_str(&format!(
        "| answers the model wrote (answerable) | {by_model}/{} |\n",
        answerable.len()
    ));
    out.push_str(&format!(
        "| first words: median / p90 | {:.1} s / {:.1} s |\n| whole answer: median / p90 | {:.1} s / {:.1} s |\n",
        quantile(&first, 0.5) as f64 / 1000.0,
        quantile(&first, 0.9) as f64 / 1000.0,
        quantile(&total, 0.5) as f64 / 1000.0,
        quantile(&total, 0.9) as f64 / 1000.0,
    ));
    out.push_str(&format!("| run time | {seconds:.0} s |\n"));
    out.push_str("\n| lang | kind | questions | strict |\n|---|---|---|---|\n");
    for ((lang, kind), t) in &by_group {
        out.push_str(&format!(
            "| {lang} | {kind} | {} | {:.1}% |\n",
            t.questions,
            pct(t.strict, t.questions)
        ));
    }
    print!("{out}");
    Ok(())
}

fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The answer without its `[n]` markers.
fn strip_markers(answer: &str) -> String {
    let mut out = String::with_capacity(answer.len());
    let mut rest = answer;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        match after.find(']') {
            Some(close) if close > 0 && after[..close].chars().all(|c| c.is_ascii_digit()) => {
                out.push_str(&rest[..open]);
                rest = &after[close + 1..];
            }
            _ => {
                out.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Lower case, whitespace collapsed, and no space beside a CJK character ("7 个" = "7个"), as
/// `eval/debian-faq/check_questions.py` matches gold strings.
fn normalize(text: &str) -> String {
    let cjk = |c: char| matches!(c as u32, 0x3000..=0x303F | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xFF00..=0xFFEF);
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let mut out = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            let prev = words[i - 1].chars().next_back();
            let next = w.chars().next();
            if !(prev.is_some_and(cjk) || next.is_some_and(cjk)) {
                out.push(' ');
            }
        }
        out.push_str(w);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_matched_as_the_set_is_checked() {
        assert_eq!(
            strip_markers("Use apt [1][2]. See [x] and [12]"),
            "Use apt . See [x] and "
        );
        assert_eq!(normalize("共有 7 个  Releases"), "共有7个releases");
        let gold = Gold::Any(vec!["ten".into(), "10".into()]);
        assert!(gold.found_in(&normalize("By default, 10 minutes")));
        assert!(!Gold::One("dselect".into()).found_in("apt"));
        assert_eq!(quantile(&[1, 2, 3, 4], 0.5), 3);
    }
}
