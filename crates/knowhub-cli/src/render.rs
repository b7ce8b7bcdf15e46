//! Text rendering of engine results for the terminal.

use knowhub_engine::{DocumentRecord, IngestReport, RetrievalTrace, SearchHit, Status};

pub(crate) fn ingest_report(r: &IngestReport) {
    println!(
        "{} file(s) in {:.1} s: {} added, {} updated, {} unchanged, {} without text, {} failed, {} skipped, {} removed; {} chunks",
        r.files,
        r.elapsed_ms as f64 / 1000.0,
        r.added,
        r.updated,
        r.unchanged,
        r.no_text,
        r.failed,
        r.skipped,
        r.removed,
        r.chunks
    );
    if r.moved > 0 || r.busy > 0 {
        println!(
            "{} moved (kept their identity), {} still being written (try again)",
            r.moved, r.busy
        );
    }
    if r.embedded > 0 {
        println!("{} chunk(s) embedded for semantic search", r.embedded);
    }
    for (path, reason) in &r.failures {
        println!("  failed: {path}: {reason}");
    }
}

pub(crate) fn search_hits(hits: &[SearchHit], color: bool) {
    if hits.is_empty() {
        println!("no passages match");
        return;
    }
    for h in hits {
        let mut place = Vec::new();
        match (h.page_start, h.page_end) {
            (Some(a), Some(b)) if a != b => place.push(format!("pp. {a}–{b}")),
            (Some(a), _) => place.push(format!("p. {a}")),
            _ => {}
        }
        // Documents often repeat their title as the first heading; don't print it twice.
        let headings: Vec<&str> = h
            .heading_path
            .iter()
            .map(String::as_str)
            .skip_while(|s| *s == h.title)
            .collect();
        if !headings.is_empty() {
            place.push(headings.join(" › "));
        }
        let place = if place.is_empty() {
            String::new()
        } else {
            format!(" — {}", place.join(" · "))
        };
        let title = if color {
            format!("\x1b[1m{}\x1b[0m", h.title)
        } else {
            h.title.clone()
        };
        println!("{}. {title}{place}", h.rank);
        println!("   {}", h.path);
        if let Some(by) = byline(&h.meta) {
            println!("   {by}");
        }
        println!(
            "   {}",
            highlight(&h.snippet, &h.highlights, color).replace('\n', " ")
        );
        println!();
    }
}

/// `From Dana Lee <dana@example.com> · 2026-03-02T09:30:00+08:00`: a document's sender and
/// date, when its format records them.
pub(crate) fn byline(meta: &knowhub_engine::DocumentMeta) -> Option<String> {
    let mut parts = Vec::new();
    if !meta.authors.is_empty() {
        parts.push(format!("From {}", meta.authors.join(", ")));
    }
    if let Some(date) = &meta.date {
        parts.push(date.clone());
    }
    (!parts.is_empty()).then(|| parts.join(" · "))
}

/// Marks highlights with ANSI bold-yellow on a terminal, with [brackets] otherwise.
fn highlight(text: &str, ranges: &[(usize, usize)], color: bool) -> String {
    let (open, close) = if color {
        ("\x1b[1;33m", "\x1b[0m")
    } else {
        ("[", "]")
    };
    let mut out = String::with_capacity(text.len() + ranges.len() * 8);
    let mut at = 0;
    for &(start, end) in ranges {
        if start < at
            || end > text.len()
            || !text.is_char_boundary(start)
            || !text.is_char_boundary(end)
        {
            continue;
        }
        out.push_str(&text[at..start]);
        out.push_str(open);
        out.push_str(&text[start..end]);
        out.push_str(close);
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

pub(crate) fn trace(t: &RetrievalTrace) {
    println!(
        "trace: mode {:?}; {} keyword + {} semantic candidates → {} fused; {} reranked",
        t.mode, t.keyword_candidates, t.semantic_candidates, t.fused, t.reranked
    );
    println!(
        "       embedder {}; reranker {}",
        t.embedder.as_deref().unwrap_or("none"),
        t.reranker.as_deref().unwrap_or("none")
    );
    println!(
        "       keyword {:.1} ms, query embedding {:.1} ms, dense scan {:.1} ms, rerank {:.1} ms, total {:.1} ms",
        t.keyword_ms, t.embed_ms, t.dense_ms, t.rerank_ms, t.total_ms
    );
    for s in &t.skipped {
        println!("       skipped: {s}");
    }
    if !t.permission_snapshot.is_empty() {
        println!(
            "       permission snapshot {}",
            t.permission_snapshot
                .get(..16)
                .unwrap_or(&t.permission_snapshot)
        );
    }
}

pub(crate) fn status(s: &Status) {
    let st = &s.store;
    if let Some(dir) = &s.data_dir {
        println!("data directory: {dir}");
    }
    println!(
        "{} document(s), {} page(s), {:.1} MB, {} chunk(s) stored, {} indexed, {} table(s)",
        st.documents,
        st.pages,
        st.bytes as f64 / 1e6,
        st.chunks,
        s.indexed_chunks,
        st.tables
    );
    match &s.embedder {
        Some(model) => println!(
            "semantic search: {model}, {} of {} chunk(s) embedded{}",
            s.embedded_chunks,
            st.chunks,
            if s.embedded_chunks < st.chunks {
                " (the rest are embedded by the next ingest or `knowhub reindex`)"
            } else {
                ""
            }
        ),
        None => println!("semantic search: off"),
    }
    if let Some(r) = &s.reranker {
        println!("reranker: {r}");
    }
    for n in &s.model_notes {
        println!("note: {n}");
    }
    let by: Vec<String> = st
        .by_status
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    if !by.is_empty() {
        println!("by status: {}", by.join(", "));
    }
    if st.pending_index > 0 {
        println!(
            "{} document(s) waiting for the index (repaired on next start)",
            st.pending_index
        );
    }
    for src in &s.sources {
        println!(
            "source #{} {} ({}{}): {} document(s)",
            src.id,
            src.root_path.as_deref().unwrap_or("individual files"),
            src.kind,
            if src.watched { ", watched" } else { "" },
            src.documents
        );
    }
    if let Some(q) = &s.queue
        && (q.queued + q.running + q.failed > 0 || q.paused)
    {
        println!(
            "ingestion queue: {} queued, {} running, {} failed{} (knowhub jobs)",
            q.queued,
            q.running,
            q.failed,
            if q.paused { ", PAUSED" } else { "" }
        );
    }
    if !s.failures.is_empty() {
        println!("problems:");
        for d in &s.failures {
            println!(
                "  {} [{}]: {}",
                d.path,
                d.error_code.as_deref().unwrap_or(&d.status),
                d.error.as_deref().unwrap_or("")
            );
        }
    }
}

pub(crate) fn documents(docs: &[DocumentRecord]) {
    for d in docs {
        println!(
            "{:>6}  {:<17} {:>5} chunks  {}{}",
            d.id,
            d.status,
            d.chunk_count,
            d.path,
            d.error
                .as_deref()
                .map(|e| format!("  ({e})"))
                .unwrap_or_default()
        );
    }
    println!("{} document(s)", docs.len());
}

pub(crate) fn document_view(v: &knowhub_engine::DocumentView, whole_text: bool) {
    let d = &v.document;
    document_header(
        d.title.as_deref().unwrap_or(&d.path),
        d.id.0,
        d.kind.as_deref(),
        v.passages.len(),
        d.page_count,
        &d.path,
    );
    if whole_text {
        println!("\n{}", v.text);
        return;
    }
    for p in &v.passages {
        passage_line(
            p.ordinal,
            p.page_start,
            p.page_end,
            &p.heading_path,
            &p.text,
        );
    }
}

/// The first lines of a shown document (`knowhub show`, here or on a server).
pub(crate) fn document_header(
    title: &str,
    id: i64,
    kind: Option<&str>,
    passages: usize,
    page_count: Option<u32>,
    path: &str,
) {
    let pages = page_count
        .map(|p| format!(", {p} page(s)"))
        .unwrap_or_default();
    println!(
        "{title}  (document {id}, {}, {passages} passage(s){pages})",
        kind.unwrap_or("?")
    );
    println!("{path}");
}

/// One passage of a shown document: where it is and its first 160 characters.
pub(crate) fn passage_line(
    ordinal: u32,
    page_start: Option<u32>,
    page_end: Option<u32>,
    heading_path: &[String],
    text: &str,
) {
    let pages = match (page_start, page_end) {
        (Some(a), Some(b)) if a != b => format!("p.{a}-{b} "),
        (Some(a), _) => format!("p.{a} "),
        _ => String::new(),
    };
    let shown: String = text.chars().take(160).collect();
    let more = if text.chars().count() > 160 {
        "…"
    } else {
        ""
    };
    println!(
        "\n[{ordinal}] {pages}{}\n    {}{more}",
        heading_path.join(" › "),
        shown.replace('\n', " ")
    );
}

/// The ingestion queue's counts in one line; `resume` is the command that resumes it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn queue_counts(
    queued: u64,
    waiting: u64,
    running: u64,
    done: u64,
    failed: u64,
    cancelled: u64,
    paused: bool,
    resume: &str,
) {
    let paused = if paused {
        format!(" — PAUSED ({resume})")
    } else {
        String::new()
    };
    println!(
        "{queued} queued ({waiting} waiting to retry), {running} running, {done} done, \
         {failed} failed, {cancelled} cancelled{paused}"
    );
}

/// One ingestion job: id, state, path and its error or outcome.
pub(crate) fn job_line(
    id: i64,
    state: &str,
    path: &str,
    error: Option<&str>,
    outcome: Option<&str>,
) {
    let what = error.or(outcome).unwrap_or("");
    let what = if what.is_empty() {
        String::new()
    } else {
        format!("  ({what})")
    };
    println!("{id:>7}  {state:<9} {path}{what}");
}

/// One record of the audit trail.
#[allow(clippy::too_many_arguments)]
pub(crate) fn audit_line(
    id: &str,
    user: &str,
    role: &str,
    action: &str,
    outcome: &str,
    allowed: &str,
    filtered: &str,
    snapshot: &str,
    target: &str,
) {
    println!(
        "#{id:<6} {user:<10} {role:<6} {action:<8} {outcome:<10} allowed {allowed:>3} filtered \
         {filtered:>3} snapshot {}  {target}",
        snapshot.get(..12).unwrap_or(snapshot)
    );
}

/// One answer in `knowhub trace` (here and on a server).
pub(crate) fn trace_line(id: &str, route: &str, stop_reason: &str, total_ms: u64, question: &str) {
    println!(
        "{id}  {route:<7} {stop_reason:<13} {total_ms:>6} ms  {}",
        question.chars().take(60).collect::<String>()
    );
}

/// Under a trace step: the sentences a model read for meaning and what it found (the
/// answering step's `read_for_meaning`), here and on a server.
pub(crate) fn read_for_meaning_lines(out: &serde_json::Value) {
    for line in read_for_meaning(out) {
        println!("{line}");
    }
}

fn read_for_meaning(out: &serde_json::Value) -> Vec<String> {
    out["read_for_meaning"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|read| {
            let verdict = match read["answers"].as_bool() {
                Some(true) => "answers",
                Some(false) => "no answer",
                None => "no verdict",
            };
            let sentence: String = read["sentence"]
                .as_str()
                .unwrap_or_default()
                .chars()
                .take(80)
                .collect();
            // How likely the model found "yes", where it gave its probabilities.
            let odds = read["yes"]
                .as_f64()
                .map(|p| format!(" (yes {p:.2})"))
                .unwrap_or_default();
            format!("      read: {sentence} → {verdict}{odds}")
        })
        .collect()
}

/// A registered SQL database in `knowhub sql list`.
pub(crate) fn sql_source_line(name: &str, path: &str, scopes: &[String], tenant: Option<&str>) {
    let tenant = tenant
        .map(|c| format!("  tenant column: {c}"))
        .unwrap_or_default();
    println!("{name}  {path}  scopes: {}{tenant}", scopes.join(","));
}

/// A spreadsheet table in `knowhub sql list`.
pub(crate) fn sheet_table_line(sql_name: &str, rows: u64, document_path: &str) {
    println!("spreadsheet  {sql_name}  ({rows} rows) from {document_path}");
}

#[cfg(test)]
mod tests {
    use super::{highlight, read_for_meaning};

    #[test]
    fn a_trace_shows_what_the_model_read_and_found() {
        let out = serde_json::json!({ "read_for_meaning": [
            { "sentence": "Version 0.9 added a file format.", "answers": false },
            { "sentence": "版本 1.0 于 2001 年发布。", "answers": true },
            { "sentence": "Version 1.0 came out in 2001.", "answers": true, "yes": 0.875 },
            { "sentence": "Anything", "answers": null },
        ]});
        assert_eq!(
            read_for_meaning(&out),
            [
                "      read: Version 0.9 added a file format. → no answer",
                "      read: 版本 1.0 于 2001 年发布。 → answers",
                "      read: Version 1.0 came out in 2001. → answers (yes 0.88)",
                "      read: Anything → no verdict",
            ]
        );
        assert!(read_for_meaning(&serde_json::json!({})).is_empty());
    }

    #[test]
    fn highlight_marks_ranges_and_ignores_bad_ones() {
        assert_eq!(
            highlight("annual leave days", &[(0, 6), (13, 17)], false),
            "[annual] leave [days]"
        );
        assert_eq!(
            highlight("年假天数", &[(0, 6), (1, 2)], false),
            "[年假]天数"
        );
    }
}
