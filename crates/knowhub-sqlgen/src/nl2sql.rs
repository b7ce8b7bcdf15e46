//! Question → SQL → result, shared by the SQL tool node and `knowhub eval sql`.
//!
//! 1. The template path ([`crate::template_sql`]) goes first: a question it understands whole
//!    gets its statement, with or without a model.
//! 2. Otherwise the model writes a statement from a prompt that follows Qwen2.5-Coder's own
//!    text-to-SQL layout: the tables the question is about ([`focus`]) as `CREATE TABLE` DDL
//!    with keys, foreign keys and sample values ([`SchemaPrompt::ddl_text`]), then
//!    `-- Using valid SQLite, answer the following questions…` and the question as a SQL
//!    comment, after worked examples on a made-up schema spelled in the schema's own naming
//!    style ([`Naming`]); the answer is pre-filled with `SELECT` and stops at `;`.
//! 3. The statement is parsed once. It runs as written when it can; only when validation or
//!    execution fails are the named [`crate::repair::REPAIRS`] applied, and the attempt
//!    records which fired. Two checks refuse a statement that runs but cannot be an answer
//!    (it reads no data; it sums a parent's measure once per child row).
//! 4. A failure is fed back to the model with a hint from the schema ([`hint::for_error`]),
//!    up to the retry budget.
//!
//! Every statement goes through `knowhub_sql::validate` and runs through
//! `knowhub_sql::execute`: safety never depends on the prompt.

use std::path::Path;

use knowhub_llm::{ChatRequest, Llm, Message};
use knowhub_sql::{Policy, QueryResult, Schema};
use serde::Serialize;

use crate::hint;
use crate::prompt::SchemaPrompt;

/// One statement tried.
#[derive(Debug, Clone, Serialize)]
pub struct Attempt {
    /// `llm` or `template`.
    pub by: String,
    pub sql: String,
    pub error: Option<String>,
    /// The repairs applied to the statement as written (after it failed), in order.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub repairs: Vec<String>,
}

/// The statement that ran, as executed (limit and tenant filter applied), and its result.
#[derive(Debug, Clone)]
pub struct Answer {
    pub by: String,
    pub sql: String,
    pub result: QueryResult,
    /// The tables the statement read.
    pub tables: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Nl2Sql {
    pub attempts: Vec<Attempt>,
    pub answer: Option<Answer>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// Why a statement that reads no column of the data is not an answer.
const READS_NO_DATA: &str = "the statement reads no column of the tables: it computes constants instead of answering \
     from the data";

/// The template path's statement for `question`, else for the first of the questions it asks
/// that the template understands: in a message asking two questions the data may answer the
/// second, the documents the first.
pub fn template_for(question: &str, schema: &Schema) -> Option<String> {
    crate::template_sql(question, schema).or_else(|| {
        let parts = crate::text::questions(question);
        parts
            .iter()
            .filter(|_| parts.len() > 1)
            .find_map(|part| crate::template_sql(part, schema))
    })
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
    // A question the template fully understands (every word a table, a column, a value or a
    // question word) gets its statement first, with or without a model: it is exact and
    // immediate. The model writes what the template cannot, and is not told about the
    // template's failure: that was not its draft.
    if let Some(sql) = template_for(question, schema) {
        let ran = run_statement(&sql, schema, db, policy);
        let error = ran.as_ref().err().cloned();
        out.attempts.push(Attempt {
            by: "template".into(),
            sql,
            error,
            repairs: Vec::new(),
        });
        if let Ok(ran) = ran {
            out.answer = Some(ran.into_answer("template"));
            return out;
        }
    }
    let Some(llm) = llm else {
        return out;
    };
    // The schema the model is shown: with the values the question names among the samples.
    let found = crate::values_named(db, schema, policy, &value_phrases(question));
    let shown = with_named_values(schema, &found);
    let mut feedback: Option<Feedback> = None;
    for _ in 0..=retry_budget {
        let Some(written) = generate(
            llm,
            &shown,
            question,
            feedback.as_ref(),
            schema_chars,
            &mut out,
        ) else {
            break;
        };
        if out
            .attempts
            .iter()
            .any(|a| a.by == "llm" && a.sql == written)
        {
            // The same statement again brings no new information, and asking again would give
            // it again (greedy decoding).
            break;
        }
        let (sql, repairs, result) = run_or_repair(&written, schema, db, policy);
        match result {
            Ok(ran) => {
                out.attempts.push(Attempt {
                    by: "llm".into(),
                    sql,
                    error: None,
                    repairs,
                });
                out.answer = Some(ran.into_answer("llm"));
                break;
            }
            Err(e) => {
                feedback = Some(Feedback {
                    hint: hint::for_error(schema, &written, &e),
                    sql: written.clone(),
                    error: e.clone(),
                });
                out.attempts.push(Attempt {
                    by: "llm".into(),
                    sql: written,
                    error: Some(e),
                    repairs: Vec::new(),
                });
            }
        }
    }
    out
}

/// Runs the statement as written; when it fails, runs it once more with the repairs that
/// apply. Returns the statement that ran (or the one written), the repairs that fired, and the
/// outcome. A repaired statement that fails too is reported with the first error: that is
/// what the model wrote, and what its retry can act on.
fn run_or_repair(
    written: &str,
    schema: &Schema,
    db: &Path,
    policy: &Policy,
) -> (String, Vec<String>, std::result::Result<Ran, String>) {
    let first = match run_statement(written, schema, db, policy) {
        Ok(ran) => return (written.to_string(), Vec::new(), Ok(ran)),
        Err(e) => e,
    };
    let Some(mut statement) = crate::repair::parse(written) else {
        return (written.to_string(), Vec::new(), Err(first));
    };
    let fired = crate::repair::repair(&mut statement, schema);
    if fired.is_empty() {
        return (written.to_string(), Vec::new(), Err(first));
    }
    let repaired = statement.to_string();
    match run_statement(&repaired, schema, db, policy) {
        Ok(ran) => (
            repaired,
            fired.iter().map(|r| (*r).to_string()).collect(),
            Ok(ran),
        ),
        Err(_) => (written.to_string(), Vec::new(), Err(first)),
    }
}

/// A statement that passed validation and ran.
struct Ran {
    safe: knowhub_sql::SafeQuery,
    result: QueryResult,
}

impl Ran {
    fn into_answer(self, by: &str) -> Answer {
        Answer {
            by: by.into(),
            sql: self.safe.sql().to_string(),
            tables: self.safe.tables().to_vec(),
            result: self.result,
        }
    }
}

/// Validates and runs `sql` under `policy`, refusing what would answer wrongly.
fn run_statement(
    sql: &str,
    schema: &Schema,
    db: &Path,
    policy: &Policy,
) -> std::result::Result<Ran, String> {
    let safe = knowhub_sql::validate(sql, schema, policy).map_err(|e| e.to_string())?;
    // Safe, but an answer from nowhere: constants computed beside a table say nothing of it.
    if !safe.reads_data() {
        return Err(READS_NO_DATA.to_string());
    }
    // Runs, but counts a parent's measure once per child row: a wrong number is worse than
    // none, and the reason tells the retry what to sum instead.
    if let Some(repeated) =
        crate::repair::parse(sql).and_then(|s| crate::fanout::repeated_sum(&s, schema))
    {
        return Err(repeated.to_string());
    }
    let result = knowhub_sql::execute(db, &safe, policy).map_err(|e| e.to_string())?;
    Ok(Ran { safe, result })
}

/// The phrases of a question that may be stored values, for [`knowhub_sql::values_named`]:
/// quoted text, runs of capitalised words ("Kim Park", "Ann Lee") and each of their words
/// ("Andrew", "Adams": a name is often split over two columns), and the Chinese spans of two to
/// six characters ("张三负责的项目" holds "张三"). A lone capitalised word that opens the question
/// ("Show …") is an instruction, not a value. Lower-case words are left out: "all", "rock" or
/// "music" name rows of some table in most databases, and would point the model at them.
fn value_phrases(question: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    // Quoted text.
    for (open, close) in [('"', '"'), ('“', '”'), ('「', '」'), ('\'', '\'')] {
        let mut rest = question;
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            // An apostrophe inside a word ("member's") opens nothing.
            let opens_word = rest[..start]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric());
            let Some(end) = after.find(close) else { break };
            if opens_word || open != '\'' {
                let inner = after[..end].trim();
                if !inner.is_empty() && inner.chars().count() <= 80 {
                    out.push(inner.to_string());
                }
            }
            rest = &after[end + close.len_utf8()..];
        }
    }
    // Capitalised runs, sentence by sentence.
    for sentence in question.split(['.', '?', '!', ';', '。', '？', '！', '；']) {
        let tokens: Vec<&str> = sentence
            .split_whitespace()
            .map(|t| t.trim_matches(|c: char| !c.is_alphanumeric() && c != '/' && c != '&'))
            .collect();
        let capitalised = |t: &str| t.chars().next().is_some_and(char::is_uppercase);
        let mut i = 0;
        while i < tokens.len() {
            if !capitalised(tokens[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < tokens.len() && capitalised(tokens[i]) {
                i += 1;
            }
            // The sentence's first word is capitalised whatever it is.
            let first = usize::from(start == 0);
            let run = &tokens[start + first..i];
            if run.len() > 1 {
                out.push(run.join(" "));
            }
            out.extend(
                run.iter()
                    .filter(|t| t.chars().count() > 1)
                    .map(|t| (*t).to_string()),
            );
        }
    }
    // Chinese spans.
    let chars: Vec<char> = question.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if !crate::text::is_cjk(chars[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && crate::text::is_cjk(chars[i]) {
            i += 1;
        }
        for a in start..i {
            for b in a + 2..=(a + 6).min(i) {
                out.push(chars[a..b].iter().collect());
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(p.to_lowercase()));
    out.truncate(crate::MAX_PHRASES);
    out
}

/// `schema` with each found value first among its column's samples, so the prompt shows the
/// model which column holds what the question names.
fn with_named_values(schema: &Schema, found: &[crate::NamedValue]) -> Schema {
    let mut out = schema.clone();
    for v in found {
        let Some(column) = out
            .tables
            .iter_mut()
            .find(|t| t.name == v.table)
            .and_then(|t| t.columns.iter_mut().find(|c| c.name == v.column))
        else {
            continue;
        };
        column.samples.retain(
            |s| !matches!(s, knowhub_sql::Value::Text(t) if t.eq_ignore_ascii_case(&v.value)),
        );
        column
            .samples
            .insert(0, knowhub_sql::Value::Text(v.value.clone()));
    }
    out
}

/// Tables the prompt describes (the best matches for the question, before the tables they
/// reference and link tables are added).
const FOCUS_TABLES: usize = 3;
/// Sample values per column in the prompt.
const PROMPT_SAMPLES: usize = 2;

/// The line between the schema and the question (Qwen2.5-Coder's text-to-SQL prompt).
const ASK: &str =
    "-- Using valid SQLite, answer the following questions for the tables provided above.\n";

/// A made-up schema for the worked examples (no real database's names).
const EXAMPLE_SCHEMA: &str = "CREATE TABLE teacher (
  teacher_id INTEGER PRIMARY KEY,
  first_name TEXT, -- e.g. 'Maria', 'John'
  last_name TEXT, -- e.g. 'Lopez', 'Smith'
  hired DATE -- e.g. '2015-09-01'
);

CREATE TABLE course (
  course_id INTEGER PRIMARY KEY,
  title TEXT, -- e.g. 'Algebra', 'Poetry'
  credits INTEGER, -- e.g. 3
  teacher_id INTEGER,
  FOREIGN KEY (teacher_id) REFERENCES teacher (teacher_id)
);

CREATE TABLE enrollment (
  enrollment_id INTEGER PRIMARY KEY,
  course_id INTEGER,
  student TEXT, -- e.g. 'Ana Silva'
  fee NUMERIC, -- e.g. 120.5
  FOREIGN KEY (course_id) REFERENCES course (course_id)
);

";

/// Worked examples: whole rows when no columns are named, dates with `strftime`, a person's
/// name from its parts, joins on the declared keys, a measure that lives two joins away (and
/// shown beside the answer, so the reader sees why it is the most).
const EXAMPLES: &[(&str, &str)] = &[
    (
        "List all courses worth more than 3 credits.",
        "SELECT * FROM course WHERE credits > 3;",
    ),
    (
        "Show the teachers hired after 2018.",
        "SELECT * FROM teacher WHERE strftime('%Y', hired) > '2018';",
    ),
    (
        "List all courses with their teacher names.",
        "SELECT course.title, teacher.first_name || ' ' || teacher.last_name AS teacher_name \
         FROM course JOIN teacher ON course.teacher_id = teacher.teacher_id;",
    ),
    (
        "Show the courses nobody has enrolled in.",
        "SELECT * FROM course WHERE course_id NOT IN (SELECT course_id FROM enrollment);",
    ),
    (
        "Show each teacher's name with the number of courses they teach.",
        "SELECT teacher.first_name || ' ' || teacher.last_name AS teacher_name, \
         COUNT(course.course_id) AS course_count FROM teacher LEFT JOIN course ON \
         course.teacher_id = teacher.teacher_id GROUP BY teacher.teacher_id;",
    ),
    (
        "Which teacher earned the most in fees?",
        "SELECT teacher.first_name || ' ' || teacher.last_name AS teacher_name, \
         SUM(enrollment.fee) AS total_fees FROM teacher JOIN course ON course.teacher_id = \
         teacher.teacher_id JOIN enrollment ON enrollment.course_id = course.course_id GROUP BY \
         teacher.teacher_id ORDER BY total_fees DESC LIMIT 1;",
    ),
];

/// The identifiers of [`EXAMPLE_SCHEMA`] and [`EXAMPLES`] (tables, columns, aliases), written
/// in snake_case; [`Naming::restyle`] rewrites them in the real schema's style.
const EXAMPLE_IDENTIFIERS: &[&str] = &[
    "teacher",
    "teacher_id",
    "first_name",
    "last_name",
    "hired",
    "course",
    "course_id",
    "title",
    "credits",
    "enrollment",
    "enrollment_id",
    "student",
    "fee",
    "teacher_name",
    "course_count",
    "total_fees",
];

/// How a schema spells its names. A small model copies the worked examples' style: shown
/// `teacher_id`, it writes `Book.book_id` against a schema's `BookId`, so the examples are
/// written in the style of the schema the question is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Naming {
    /// `teacher_id`, `given_name`.
    Snake,
    /// `TeacherId`, `GivenName` (tables `Teacher`).
    Pascal,
}

impl Naming {
    /// The style most of `schema`'s multi-word names use (snake_case when undecided).
    fn of(schema: &Schema) -> Naming {
        let names = schema
            .tables
            .iter()
            .flat_map(|t| std::iter::once(&t.name).chain(t.columns.iter().map(|c| &c.name)));
        let (mut snake, mut pascal) = (0usize, 0usize);
        for name in names {
            let bytes = name.as_bytes();
            if name.contains('_') {
                snake += 1;
            } else if bytes.first().is_some_and(u8::is_ascii_uppercase)
                && bytes.iter().any(u8::is_ascii_lowercase)
            {
                pascal += 1;
            }
        }
        if pascal > snake {
            Naming::Pascal
        } else {
            Naming::Snake
        }
    }

    /// `text` (example DDL or SQL) with [`EXAMPLE_IDENTIFIERS`] in this style; quoted text
    /// (`'Maria'`) and other words are left as they are.
    fn restyle(self, text: &str) -> String {
        if self == Naming::Snake {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len());
        let mut word = String::new();
        let mut quoted = false;
        let flush = |word: &mut String, out: &mut String| {
            if EXAMPLE_IDENTIFIERS.contains(&word.as_str()) {
                for part in word.split('_') {
                    let mut chars = part.chars();
                    if let Some(first) = chars.next() {
                        out.extend(first.to_uppercase());
                        out.push_str(chars.as_str());
                    }
                }
            } else {
                out.push_str(word);
            }
            word.clear();
        };
        for c in text.chars() {
            if !quoted && (c.is_ascii_alphanumeric() || c == '_') {
                word.push(c);
                continue;
            }
            flush(&mut word, &mut out);
            if c == '\'' {
                quoted = !quoted;
            }
            out.push(c);
        }
        flush(&mut word, &mut out);
        out
    }
}

const SQL_SYSTEM: &str = "You are a SQLite expert. You write one SQLite SELECT statement that \
                          answers the question from the tables provided. Use only the tables \
                          and columns shown. When the question asks to list, show or find rows \
                          without naming the columns to show, select all columns (SELECT *). \
                          Reply with the SQL only.";

/// A failed statement, its error, and what the schema says about it.
#[derive(Debug, Clone)]
pub struct Feedback {
    pub sql: String,
    pub error: String,
    pub hint: hint::Hint,
}

fn generate(
    llm: &dyn Llm,
    schema: &Schema,
    question: &str,
    feedback: Option<&Feedback>,
    schema_chars: usize,
    out: &mut Nl2Sql,
) -> Option<String> {
    let mut focused = focus(schema, question, FOCUS_TABLES);
    // The tables a hint points at are described even when the question's words missed them.
    if let Some(f) = feedback
        && focused.tables.len() < schema.tables.len()
    {
        for name in &f.hint.tables {
            if focused.table(name).is_none()
                && let Some(t) = schema.table(name)
            {
                focused.tables.push(t.clone());
            }
        }
        focused.tables.sort_by_key(|t| t.name.to_lowercase());
    }
    for c in focused.tables.iter_mut().flat_map(|t| t.columns.iter_mut()) {
        c.samples.truncate(PROMPT_SAMPLES);
    }
    let user = sql_prompt(&focused, question, feedback, schema_chars);
    let prefix = "SELECT";
    let naming = Naming::of(schema);
    let mut messages = vec![Message::system(SQL_SYSTEM)];
    for (i, (q, a)) in EXAMPLES.iter().enumerate() {
        let mut u = String::new();
        if i == 0 {
            u.push_str(&naming.restyle(EXAMPLE_SCHEMA));
            u.push_str(ASK);
        }
        u.push_str(&format!("-- {q}\n"));
        messages.push(Message::user(u));
        messages.push(Message::assistant(naming.restyle(a)));
    }
    messages.push(Message::user(user));
    let req = ChatRequest {
        messages,
        max_tokens: 256,
        stop: vec![";".into(), "```".into()],
        assistant_prefix: Some(prefix.into()),
        ..ChatRequest::default()
    };
    tracing::debug!(
        prompt = req
            .messages
            .last()
            .map(|m| m.content.as_str())
            .unwrap_or(""),
        "text-to-SQL prompt"
    );
    let response = llm.complete(&req).ok()?;
    out.prompt_tokens += response.prompt_tokens as u64;
    out.completion_tokens += response.completion_tokens as u64;
    tracing::debug!(
        prompt_tokens = response.prompt_tokens,
        elapsed_ms = response.elapsed.as_millis() as u64,
        reply = %response.text,
        "text-to-SQL reply"
    );
    extract_sql(&continue_prefix(prefix, &response.text))
}

/// The user message of the text-to-SQL prompt: the schema as DDL, then the question as a SQL
/// comment (the layout code models saw in training), and a failed attempt with its error when
/// there is one.
pub fn sql_prompt(
    schema: &Schema,
    question: &str,
    feedback: Option<&Feedback>,
    schema_chars: usize,
) -> String {
    let one_line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut user = schema.ddl_text(schema_chars);
    user.push_str(ASK);
    user.push_str(&format!("-- {}\n", one_line(question)));
    if let Some(f) = feedback {
        user.push_str(&format!(
            "-- This attempt failed: {}\n-- Error: {}\n",
            one_line(&f.sql),
            one_line(short_error(&f.error))
        ));
        for line in &f.hint.lines {
            user.push_str(&format!("-- Hint: {}\n", one_line(line)));
        }
        user.push_str("-- Write a corrected statement.\n");
    }
    user
}

/// The gist of a validation or execution error: without the statement it quotes.
fn short_error(err: &str) -> &str {
    let err = err
        .strip_prefix("the database reported an error: ")
        .unwrap_or(err);
    match [" in SELECT", " in WITH", " in select", " in with"]
        .iter()
        .filter_map(|k| err.find(k))
        .min()
    {
        Some(i) => &err[..i],
        None => err,
    }
}

/// The reply of a model whose answer was pre-filled with `prefix`: the prefix and the reply,
/// unless the reply starts over on its own (a server that does not pre-fill answers).
fn continue_prefix(prefix: &str, reply: &str) -> String {
    let head = reply.trim_start();
    let starts_over = head.starts_with("```")
        || ["SELECT", "WITH"].iter().any(|k| {
            head.get(..k.len())
                .is_some_and(|h| h.eq_ignore_ascii_case(k))
        });
    if starts_over {
        reply.to_string()
    } else {
        format!("{prefix}{reply}")
    }
}

/// The part of a large schema the question is about: the tables whose names, columns or
/// sample values share words with it (best `max_tables`), plus the tables they reference
/// (declared foreign keys, else `…Id` naming) and the link tables that reference two kept
/// tables. A small model given fewer, relevant tables writes fewer invented joins, and the
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
    let extra = keep.len() + 3;
    let references = reference_lists(schema);
    let mut linked: Vec<usize> = keep
        .iter()
        .flat_map(|&i| references[i].iter().copied())
        .collect();
    // Link tables (many-to-many) between two kept tables.
    for (i, _) in schema.tables.iter().enumerate() {
        let refs = &references[i];
        if refs.iter().filter(|r| keep.contains(r)).count() >= 2 {
            linked.push(i);
        }
    }
    for i in linked {
        if !keep.contains(&i) && keep.len() < extra {
            keep.push(i);
        }
    }
    // Tables the question names outright, whatever else scored, and the tables holding a value
    // it names ("Kim Park" in the authors' names).
    let lower = question.to_lowercase();
    let mut named: Vec<usize> = (0..schema.tables.len())
        .filter(|&i| words(&schema.tables[i].name).iter().any(|w| q.contains(w)))
        .filter(|i| keep.contains(i))
        .collect();
    for (i, t) in schema.tables.iter().enumerate() {
        let holds_value = t.columns.iter().flat_map(|c| c.samples.iter()).any(
            |v| matches!(v, knowhub_sql::Value::Text(v) if mentions(&lower, &v.to_lowercase())),
        );
        if holds_value && !named.contains(&i) {
            named.push(i);
            if !keep.contains(&i) {
                keep.push(i);
            }
        }
    }
    connect(&named, &references, &mut keep);
    keep.sort_unstable();
    let mut out = schema.clone();
    out.tables = keep.iter().map(|&i| schema.tables[i].clone()).collect();
    out
}

/// Whether `text` (lower-cased) contains `value` (lower-cased, two characters or more) as a
/// phrase of its own: not inside a longer word.
fn mentions(text: &str, value: &str) -> bool {
    if value.chars().count() < 2 {
        return false;
    }
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() && !crate::text::is_cjk(c));
    text.match_indices(value).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + value.len()..].chars().next();
        let edge_ok = |inner: Option<char>, outer: Option<char>| !(word(inner) && word(outer));
        edge_ok(value.chars().next(), before) && edge_ok(value.chars().next_back(), after)
    })
}

/// Most tables [`connect`] may add for one question: beyond this the prompt is no longer focused.
const CONNECT_MAX_ADDED: usize = 4;

/// Completes a focused table set so the tables the question names can be joined: they are
/// connected through the tables between them (the fewest, over declared or `…Id` references,
/// walked both ways: `references` is [`reference_lists`]). Without this a small model given
/// two tables that do not meet invents the tables between them.
fn connect(named: &[usize], references: &[Vec<usize>], keep: &mut Vec<usize>) {
    let targets = named;
    let mut added = 0;
    let Some((&first, rest)) = targets.split_first() else {
        return;
    };
    let n = references.len();
    let mut next_to = vec![Vec::new(); n];
    for (from, tos) in references.iter().enumerate() {
        for &to in tos {
            next_to[from].push(to);
            next_to[to].push(from);
        }
    }
    let mut joined = vec![false; n];
    joined[first] = true;
    for &target in rest {
        if joined[target] {
            continue;
        }
        // 0-1 search from the target to the joined tables: stepping onto a kept table is
        // free, onto another table costs one added table.
        let mut cost = vec![usize::MAX; n];
        let mut came_from = vec![usize::MAX; n];
        let mut queue = std::collections::VecDeque::from([target]);
        cost[target] = 0;
        let mut reached = None;
        while let Some(t) = queue.pop_front() {
            if joined[t] {
                reached = Some(t);
                break;
            }
            for &u in &next_to[t] {
                let step = usize::from(!keep.contains(&u));
                if cost[t] + step < cost[u] {
                    cost[u] = cost[t] + step;
                    came_from[u] = t;
                    if step == 0 {
                        queue.push_front(u);
                    } else {
                        queue.push_back(u);
                    }
                }
            }
        }
        let Some(end) = reached else {
            continue;
        };
        if added + cost[end] > CONNECT_MAX_ADDED {
            continue;
        }
        let mut t = end;
        while t != usize::MAX {
            joined[t] = true;
            if !keep.contains(&t) {
                keep.push(t);
                added += 1;
            }
            t = came_from[t];
        }
    }
}

/// For each table, the tables it references ([`hint::references`]), in order.
fn reference_lists(schema: &Schema) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); schema.tables.len()];
    for r in hint::references(schema) {
        out[r.from].push(r.to);
    }
    out
}

/// `SaleLine` → `Sale Line`, `order_items` → `order items`.
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
    fn examples_take_the_schema_naming_style() {
        let pascal = Naming::Pascal.restyle(
            "SELECT teacher.first_name || ' ' || teacher.last_name AS teacher_name FROM teacher \
             WHERE title = 'first_name' -- e.g. 'course_id'",
        );
        assert_eq!(
            pascal,
            "SELECT Teacher.FirstName || ' ' || Teacher.LastName AS TeacherName FROM Teacher \
             WHERE Title = 'first_name' -- e.g. 'course_id'"
        );
        assert_eq!(
            Naming::Snake.restyle("SELECT teacher_id"),
            "SELECT teacher_id"
        );
        // Every identifier of the examples is listed, so none keeps snake_case in Pascal style.
        let all = format!(
            "{EXAMPLE_SCHEMA}{}",
            EXAMPLES.iter().map(|e| e.1).collect::<String>()
        );
        let restyled = Naming::Pascal.restyle(&all);
        let unquoted: String = restyled.split('\'').step_by(2).collect();
        assert!(
            !unquoted
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|w| w.contains('_') && w.chars().any(|c| c.is_ascii_lowercase())),
            "{restyled}"
        );
        assert_eq!(Naming::of(&shop()), Naming::Snake);
        // `InvoiceLine`, `TrackId`: Pascal case wins.
        let mut pascal_schema = shop();
        for t in &mut pascal_schema.tables {
            for c in &mut t.columns {
                c.name = format!("{}Id", c.name.to_uppercase());
            }
        }
        assert_eq!(Naming::of(&pascal_schema), Naming::Pascal);
    }

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(split_ident("InvoiceLine"), "Invoice Line");
        assert_eq!(split_ident("order_items"), "order items");
        assert_eq!(split_ident("CustomerId"), "Customer Id");
    }

    fn shop() -> Schema {
        use knowhub_sql::{ColumnInfo, ForeignKey, TableInfo, TableKind, Value};
        let col = |name: &str, ty: &str, pk: u32, samples: &[&str]| ColumnInfo {
            name: name.into(),
            decl_type: ty.into(),
            samples: samples.iter().map(|s| Value::Text((*s).into())).collect(),
            values: vec![],
            primary_key: pk,
        };
        let fk = |from: &str, to: &str, to_col: &str| ForeignKey {
            columns: vec![from.into()],
            ref_table: to.into(),
            ref_columns: vec![to_col.into()],
        };
        let table =
            |name: &str, columns: Vec<ColumnInfo>, foreign_keys: Vec<ForeignKey>| TableInfo {
                name: name.into(),
                kind: TableKind::Table,
                columns,
                row_count: Some(3),
                foreign_keys,
            };
        Schema {
            tables: vec![
                table(
                    "author",
                    vec![
                        col("id", "INTEGER", 1, &[]),
                        col("name", "TEXT", 0, &["Ann"]),
                    ],
                    vec![],
                ),
                table(
                    "book",
                    vec![
                        col("id", "INTEGER", 1, &[]),
                        col("title", "TEXT", 0, &["Dune"]),
                        col("writer", "INTEGER", 0, &[]),
                    ],
                    vec![fk("writer", "author", "id")],
                ),
                table(
                    "shelf",
                    vec![
                        col("id", "INTEGER", 1, &[]),
                        col("room", "TEXT", 0, &["attic"]),
                    ],
                    vec![],
                ),
                table(
                    "shelf_book",
                    vec![
                        col("shelf", "INTEGER", 1, &[]),
                        col("book", "INTEGER", 2, &[]),
                    ],
                    vec![fk("shelf", "shelf", "id"), fk("book", "book", "id")],
                ),
                table(
                    "visitor",
                    vec![
                        col("id", "INTEGER", 1, &[]),
                        col("name", "TEXT", 0, &["Bo"]),
                    ],
                    vec![],
                ),
            ],
        }
    }

    #[test]
    fn focus_keeps_referenced_and_link_tables() {
        let s = shop();
        let names = |s: &Schema| s.tables.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
        for (question, max, want) in [
            // book references author through a column not named like the table.
            ("Which titles are there?", 1, vec!["author", "book"]),
            // The link table scores best; the tables it references come with it.
            (
                "Books in the attic shelf",
                1,
                vec!["book", "shelf", "shelf_book"],
            ),
            // shelf_book links two kept tables.
            (
                "attic Dune",
                2,
                vec!["author", "book", "shelf", "shelf_book"],
            ),
            // Nothing matches: the whole schema.
            (
                "zzz",
                1,
                vec!["author", "book", "shelf", "shelf_book", "visitor"],
            ),
            // Small schemas are never cut.
            (
                "Dune",
                9,
                vec!["author", "book", "shelf", "shelf_book", "visitor"],
            ),
        ] {
            assert_eq!(names(&focus(&s, question, max)), want, "{question}");
        }
    }

    /// A store: the catalogue (artist → record → song, genre), who buys (client), and the
    /// sales (receipt, receipt_line with quantity). References by `…_id` naming only, and 12
    /// tables so that focusing cuts.
    fn store() -> (tempfile::TempDir, Schema) {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("store.sqlite");
        let conn = rusqlite::Connection::open(&db).expect("open");
        conn.execute_batch(
            "CREATE TABLE artist (artist_id INTEGER PRIMARY KEY, name TEXT);
             CREATE TABLE record (record_id INTEGER PRIMARY KEY, title TEXT, artist_id INTEGER);
             CREATE TABLE genre (genre_id INTEGER PRIMARY KEY, name TEXT);
             CREATE TABLE song (song_id INTEGER PRIMARY KEY, name TEXT, record_id INTEGER,
                                genre_id INTEGER, unit_price NUMERIC);
             CREATE TABLE client (client_id INTEGER PRIMARY KEY, name TEXT, city TEXT);
             CREATE TABLE receipt (receipt_id INTEGER PRIMARY KEY, client_id INTEGER,
                                   receipt_date TEXT);
             CREATE TABLE receipt_line (receipt_line_id INTEGER PRIMARY KEY,
                                        receipt_id INTEGER, song_id INTEGER,
                                        unit_price NUMERIC, quantity INTEGER);
             CREATE TABLE warehouse (warehouse_id INTEGER PRIMARY KEY, city TEXT);
             CREATE TABLE shelf (shelf_id INTEGER PRIMARY KEY, warehouse_id INTEGER);
             CREATE TABLE supplier (supplier_id INTEGER PRIMARY KEY, name TEXT);
             CREATE TABLE holiday (holiday_id INTEGER PRIMARY KEY, day TEXT);
             CREATE TABLE note (note_id INTEGER PRIMARY KEY, body TEXT);",
        )
        .expect("ddl");
        let schema = knowhub_sql::introspect(&db, 2).expect("introspect");
        (dir, schema)
    }

    #[test]
    fn focus_joins_the_named_tables_through_the_tables_between() {
        let (_dir, s) = store();
        let names = |s: &Schema| s.tables.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
        for (question, want) in [
            // Named tables apart are joined through the table between (record).
            (
                "List each artist with their song names.",
                vec!["artist", "client", "genre", "record", "song"],
            ),
            (
                "Which artist has the most records?",
                vec!["artist", "genre", "record", "song"],
            ),
        ] {
            assert_eq!(
                names(&focus(&s, question, FOCUS_TABLES)),
                want,
                "{question}"
            );
        }
    }

    #[test]
    fn value_phrases_are_quotes_names_and_chinese_spans() {
        for (question, want) in [
            (
                "Get me all the Iron Maiden songs.",
                vec!["Iron Maiden", "Iron", "Maiden"],
            ),
            // The opening word is an instruction; a name after it is kept.
            ("Show tracks by AC/DC.", vec!["AC/DC"]),
            (
                "List employees who report to Andrew Adams",
                vec!["Andrew Adams", "Andrew", "Adams"],
            ),
            // Quotes, but not a possessive's apostrophe.
            (
                "Show the customer's \"Sales Support Agent\" rep",
                vec!["Sales Support Agent", "Sales", "Support", "Agent"],
            ),
            ("Tracks in the 'Music' playlist", vec!["Music"]),
            // Lower-case words are no values' names.
            ("how many rock tracks are there?", vec![]),
            (
                "张三负责",
                vec!["张三", "张三负", "张三负责", "三负", "三负责", "负责"],
            ),
        ] {
            assert_eq!(value_phrases(question), want, "{question}");
        }
        assert!(value_phrases(&"项目".repeat(200)).len() <= crate::MAX_PHRASES);
    }

    #[test]
    fn named_values_come_first_among_the_samples() {
        let (_dir, s) = store();
        let found = [crate::NamedValue {
            table: "artist".into(),
            column: "name".into(),
            value: "Iron Maiden".into(),
        }];
        let shown = with_named_values(&s, &found);
        let samples = &shown
            .table("artist")
            .and_then(|t| t.column("name"))
            .expect("column")
            .samples;
        assert_eq!(
            samples.first(),
            Some(&knowhub_sql::Value::Text("Iron Maiden".into()))
        );
        // The table holding a named value is kept and joined to the ones the question names.
        let names: Vec<String> = focus(&shown, "List each song by Iron Maiden", FOCUS_TABLES)
            .tables
            .iter()
            .map(|t| t.name.clone())
            .collect();
        assert!(
            ["artist", "record", "song"]
                .iter()
                .all(|n| names.iter().any(|x| x == n)),
            "{names:?}"
        );
        for (text, value, want) in [
            ("songs by iron maiden", "iron maiden", true),
            ("songs by iron maidens", "iron maiden", false),
            ("张三负责的项目", "张三", true),
            ("a", "a", false),
        ] {
            assert_eq!(mentions(text, value), want, "{text} / {value}");
        }
    }

    #[test]
    fn prompt_is_ddl_then_question_comment() {
        let s = shop();
        let ask = "-- Using valid SQLite, answer the following questions for the tables provided \
                   above.\n-- How many books?\n";
        let failed = Feedback {
            sql: "SELECT x\nFROM book".to_string(),
            error: "no such column: x".to_string(),
            hint: hint::Hint {
                lines: vec!["No table has a column x.".into()],
                tables: Vec::new(),
            },
        };
        for (feedback, tail) in [
            (None, ask.to_string()),
            (
                Some(&failed),
                format!(
                    "{ask}-- This attempt failed: SELECT x FROM book\n-- Error: no such column: \
                     x\n-- Hint: No table has a column x.\n-- Write a corrected statement.\n"
                ),
            ),
        ] {
            let p = sql_prompt(&s, "How many\nbooks?", feedback, 10_000);
            assert!(
                p.starts_with("CREATE TABLE author (\n  id INTEGER PRIMARY KEY,\n"),
                "{p}"
            );
            assert!(
                p.contains("  FOREIGN KEY (writer) REFERENCES author (id)\n"),
                "{p}"
            );
            assert!(p.ends_with(&tail), "{p}");
        }
    }

    #[test]
    fn prefilled_replies_are_continued() {
        for (reply, want) in [
            (" * FROM book", "SELECT * FROM book"),
            ("\n  name FROM author", "SELECT\n  name FROM author"),
            // A server that ignored the pre-filled start writes the whole statement.
            ("SELECT 1", "SELECT 1"),
            ("  select 1", "  select 1"),
            (
                "WITH a AS (SELECT 1) SELECT * FROM a",
                "WITH a AS (SELECT 1) SELECT * FROM a",
            ),
            ("```sql\nSELECT 2\n```", "```sql\nSELECT 2\n```"),
            ("", "SELECT"),
        ] {
            assert_eq!(continue_prefix("SELECT", reply), want, "{reply:?}");
        }
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
