//! Question → SQL → result, shared by the SQL tool node and `knowhub eval sql`: the LLM writes
//! a statement from the schema; a validation or execution error is fed back once (ReAct); the
//! template path answers simple count/list/sum/filter questions without a model. Every
//! statement goes through `knowhub_sql::validate` and runs through `knowhub_sql::execute`:
//! safety never depends on the prompt.
//!
//! The prompt follows Qwen2.5-Coder's own text-to-SQL layout: the tables the question is about
//! ([`focus`]) as `CREATE TABLE` DDL with keys, foreign keys and sample values
//! ([`Schema::ddl_text`]), then `-- Using valid SQLite, answer the following questions…` and the
//! question as a SQL comment, after three worked examples on a made-up schema; the answer is
//! pre-filled with `SELECT` and stops at `;`. The examples are spelled in the schema's own
//! naming style ([`Naming`]). A listing question answered with a plain pick of columns from one
//! table gets whole rows ([`whole_rows`]); a count per entity keeps the entities with none and
//! counts per entity, not per name ([`knowhub_sql::count_every_group`]); a listing over a join
//! names the rows it lists ([`knowhub_sql::name_the_listed_rows`]); a ranking shows the measure
//! it ranks by ([`knowhub_sql::show_ranking_measure`]). A table's name run into a column's
//! (`PlaylistPlaylistId`) is read apart first ([`knowhub_sql::split_fused_names`]), and a join
//! condition comparing a column with itself is mended ([`knowhub_sql::mend_join_conditions`]),
//! as is a column qualified with a table that lacks it when one joined table has it
//! ([`knowhub_sql::mend_column_references`]).

pub mod hint;

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
/// that the template understands: in "新员工的试用期是多久？目前有多少人在试用期？" the data
/// answers the second, the documents the first.
pub fn template_for(question: &str, schema: &knowhub_sql::Schema) -> Option<String> {
    knowhub_sql::template_sql(question, schema).or_else(|| {
        let parts = crate::text::questions(question);
        parts
            .iter()
            .filter(|_| parts.len() > 1)
            .find_map(|part| knowhub_sql::template_sql(part, schema))
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
    let mut feedback: Option<Feedback> = None;
    let mut template_tried = false;
    let mut llm_done = false;
    // A question the template fully understands (every word a table, a column, a value or a
    // question word) gets its statement first, with or without a model: it is exact and
    // immediate, where the default 0.5B answered "谁还在试用期？" with
    // `WHERE "Hire date" < '2024-01-01'`. The model writes what the template cannot, and is
    // not told about the template's failure: that was not its draft.
    if let Some(sql) = template_for(question, schema) {
        template_tried = true;
        let error = match run_statement(&sql, schema, db, policy) {
            Ok(ran) => {
                out.answer = Some(ran.into_answer("template"));
                None
            }
            Err(e) => Some(e),
        };
        out.attempts.push(Attempt {
            by: "template".into(),
            sql,
            error,
        });
        if out.answer.is_some() {
            return out;
        }
    }
    // The schema the model is shown: with the values the question names among the samples.
    let shown = match llm {
        Some(_) => {
            let found = knowhub_sql::values_named(db, schema, policy, &value_phrases(question));
            with_named_values(schema, &found)
        }
        None => schema.clone(),
    };
    for _ in 0..=retry_budget + 1 {
        let generated = match llm {
            Some(llm)
                if !llm_done
                    && out.attempts.iter().filter(|a| a.by == "llm").count() <= retry_budget =>
            {
                generate(
                    llm,
                    &shown,
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
            template_for(question, schema).map(|s| ("template", s))
        });
        let Some((by, sql)) = generated else { break };
        let sql = match by {
            "llm" => {
                let sql = knowhub_sql::drop_imagined_lookups(&sql, schema).unwrap_or(sql);
                let sql = knowhub_sql::split_fused_names(&sql, schema).unwrap_or(sql);
                let sql = knowhub_sql::mend_join_conditions(&sql, schema).unwrap_or(sql);
                let sql = knowhub_sql::rejoin_by_foreign_keys(&sql, schema).unwrap_or(sql);
                let sql = knowhub_sql::mend_crossed_keys(&sql, schema).unwrap_or(sql);
                let sql = knowhub_sql::mend_column_references(&sql, schema).unwrap_or(sql);
                let sql = knowhub_sql::group_the_ranked_rows(&sql, schema).unwrap_or(sql);
                let sql = knowhub_sql::translate_date_functions(&sql).unwrap_or(sql);
                let sql = knowhub_sql::compare_with_every_match(&sql).unwrap_or(sql);
                let sql = knowhub_sql::convert_duration_units(&sql, question).unwrap_or(sql);
                let sql = whole_rows(question, &sql).unwrap_or(sql);
                let sql = rows_behind_ids(question, &sql, schema).unwrap_or(sql);
                let sql = knowhub_sql::count_every_group(&sql, schema).unwrap_or(sql);
                let sql = knowhub_sql::name_the_listed_rows(&sql, schema).unwrap_or(sql);
                let sql = knowhub_sql::name_the_group_keys(&sql, schema).unwrap_or(sql);
                let sql = knowhub_sql::group_by_row_key(&sql, schema).unwrap_or(sql);
                let sql = knowhub_sql::show_the_named_name(&sql, schema).unwrap_or(sql);
                let sql = knowhub_sql::show_the_unpinned_column(
                    &sql,
                    schema,
                    &tables_named(question, schema),
                )
                .unwrap_or(sql);
                let sql = if asks_for_name_parts(question) {
                    sql
                } else {
                    knowhub_sql::join_name_parts(&sql, schema).unwrap_or(sql)
                };
                let sql = knowhub_sql::count_units_sold(&sql, schema, question).unwrap_or(sql);
                let sql = knowhub_sql::show_ranking_measure(&sql).unwrap_or(sql);
                knowhub_sql::show_filter_measure(&sql).unwrap_or(sql)
            }
            _ => sql,
        };
        if out.attempts.iter().any(|a| a.sql == sql) {
            // The same statement again brings no new information, and asking again would give
            // it again (greedy decoding): try the template next.
            llm_done = true;
            if template_tried {
                break;
            }
            continue;
        }
        match run_statement(&sql, schema, db, policy) {
            Ok(ran) => {
                out.attempts.push(Attempt {
                    by: by.into(),
                    sql: sql.clone(),
                    error: None,
                });
                out.answer = Some(ran.into_answer(by));
                break;
            }
            Err(e) => {
                feedback = Some(Feedback {
                    hint: hint::for_error(schema, &sql, &e),
                    sql: sql.clone(),
                    error: e.clone(),
                });
                out.attempts.push(Attempt {
                    by: by.into(),
                    sql,
                    error: Some(e),
                });
            }
        }
    }
    out
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
    // Safe, but an answer from nowhere: `SELECT strftime('%d', '2019-04-30') - … FROM staff`
    // printed "0" a dozen times as the leave allowance.
    if !safe.reads_data() {
        return Err(READS_NO_DATA.to_string());
    }
    // Runs, but counts a parent's measure once per child row: a wrong number is worse than
    // none, and the reason tells the retry what to sum instead.
    if let Some(repeated) = knowhub_sql::repeated_sum(sql, schema) {
        return Err(repeated.to_string());
    }
    let result = knowhub_sql::execute(db, &safe, policy).map_err(|e| e.to_string())?;
    Ok(Ran { safe, result })
}

/// The tables whose whole name the question uses ("tracks" names `Track`, "playlist"
/// `Playlist`, "invoice lines" `InvoiceLine`).
fn tables_named<'s>(question: &str, schema: &'s Schema) -> Vec<&'s str> {
    let q_terms = crate::text::terms(question);
    schema
        .tables
        .iter()
        .filter(|t| {
            let words = crate::text::terms(&split_ident(&t.name));
            !words.is_empty() && words.iter().all(|w| q_terms.contains(w))
        })
        .map(|t| t.name.as_str())
        .collect()
}

/// The phrases of a question that may be stored values, for [`knowhub_sql::values_named`]:
/// quoted text, runs of capitalised words ("Iron Maiden", "AC/DC") and each of their words
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
            // An apostrophe inside a word ("customer's") opens nothing.
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
        if !crate::lang::is_cjk(chars[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && crate::lang::is_cjk(chars[i]) {
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
    out.truncate(knowhub_sql::MAX_PHRASES);
    out
}

/// `schema` with each found value first among its column's samples, so the prompt shows the
/// model which column holds what the question names.
fn with_named_values(schema: &Schema, found: &[knowhub_sql::NamedValue]) -> Schema {
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

/// Whether the question asks for a name's parts ("first and last names", "姓和名"), which
/// then stay apart.
fn asks_for_name_parts(question: &str) -> bool {
    let q = question.to_lowercase();
    [
        "first name",
        "last name",
        "first and last",
        "surname",
        "given name",
        "family name",
        "firstname",
        "lastname",
        "姓和名",
        "名和姓",
        "姓氏",
    ]
    .iter()
    .any(|w| q.contains(w))
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
/// `teacher_id`, it wrote `Track.track_id` and `album.artist_id` against Chinook's `TrackId`
/// and `ArtistId`, so the examples are written in the style of the schema the question is
/// about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Naming {
    /// `teacher_id`, `first_name`.
    Snake,
    /// `TeacherId`, `FirstName` (tables `Teacher`).
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
    let best = keep.clone();
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
    // it names ("Iron Maiden" in the artists' names).
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
    connect(schema, question, &named, &best, &references, &mut keep);
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
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() && !crate::lang::is_cjk(c));
    text.match_indices(value).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + value.len()..].chars().next();
        let edge_ok = |inner: Option<char>, outer: Option<char>| !(word(inner) && word(outer));
        edge_ok(value.chars().next(), before) && edge_ok(value.chars().next_back(), after)
    })
}

/// Most tables [`connect`] may add for one question: beyond this the prompt is no longer focused.
const CONNECT_MAX_ADDED: usize = 4;

/// Completes a focused table set so the question can be answered from it (`references`:
/// [`reference_lists`], walked both ways):
///
/// - a question about sales ("best selling artists", "revenue by genre", "most purchased",
///   "花费最多") needs the table that records them (a column like quantity, amount, total),
///   which none of its words name; it is added when no kept table has such a column;
/// - the tables the question names and the sales tables are joined through the tables
///   between them (the fewest, over declared or `…Id` references): "revenue per artist"
///   needs album and track between artist and the invoice lines.
///
/// Without this a small model given only `Artist` and `Invoice` invents the tables between
/// them, or prices the catalogue instead of what was sold.
fn connect(
    schema: &Schema,
    question: &str,
    named: &[usize],
    best: &[usize],
    references: &[Vec<usize>],
    keep: &mut Vec<usize>,
) {
    let mut targets: Vec<usize> = named.to_vec();
    let mut added = 0;
    if asks_about_sales(question) {
        targets.extend(best.iter().filter(|i| !named.contains(i)));
        let holds_sales = |i: &usize| {
            schema.tables[*i]
                .columns
                .iter()
                .any(|c| is_measure_column(&c.name))
        };
        let kept_sales: Vec<usize> = keep.iter().copied().filter(holds_sales).collect();
        if kept_sales.is_empty() {
            for i in (0..schema.tables.len()).filter(holds_sales) {
                if added < CONNECT_MAX_ADDED {
                    keep.push(i);
                    targets.push(i);
                    added += 1;
                }
            }
        } else {
            targets.extend(kept_sales);
        }
    }
    let Some((&first, rest)) = targets.split_first() else {
        return;
    };
    let n = schema.tables.len();
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

/// Words that ask about sales, in English and Chinese. "Sales" naming a role ("sales agent",
/// "Sales Support Agent") is not a sale, nor is anything inside double quotes (a value).
const SALES_WORDS: &[&str] = &[
    "purchase",
    "purchased",
    "purchases",
    "bought",
    "buy",
    "buys",
    "buying",
    "sold",
    "sell",
    "sells",
    "selling",
    "seller",
    "sellers",
    "sale",
    "sales",
    "revenue",
    "revenues",
    "spent",
    "spend",
    "spending",
    "earned",
    "earn",
    "earns",
    "earnings",
    "income",
    "销售",
    "销量",
    "卖",
    "买",
    "购买",
    "收入",
    "营收",
    "营业额",
    "消费",
    "花费",
];
const ROLE_WORDS: &[&str] = &[
    "agent",
    "agents",
    "rep",
    "reps",
    "representative",
    "representatives",
    "support",
    "team",
    "department",
    "manager",
    "managers",
    "person",
    "people",
    "staff",
];
/// Column-name words of what a sale records: how many, how much.
const MEASURE_WORDS: &[&str] = &[
    "quantity",
    "qty",
    "amount",
    "total",
    "subtotal",
    "revenue",
    "sales",
    "数量",
    "金额",
    "总额",
    "销售额",
    "收入",
    "营收",
];

/// Whether the question asks about sales ([`SALES_WORDS`]).
fn asks_about_sales(question: &str) -> bool {
    let mut unquoted = String::new();
    let mut quoted = false;
    for c in question.chars() {
        match c {
            '"' => quoted = !quoted,
            '“' | '「' => quoted = true,
            '”' | '」' => quoted = false,
            c if !quoted => unquoted.push(c),
            _ => {}
        }
    }
    let lower = unquoted.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() || !c.is_ascii())
        .filter(|w| !w.is_empty())
        .collect();
    let english = words.iter().enumerate().any(|(i, w)| {
        SALES_WORDS.contains(w)
            && !((*w == "sales" || *w == "sale")
                && words.get(i + 1).is_some_and(|n| ROLE_WORDS.contains(n)))
    });
    english
        || SALES_WORDS
            .iter()
            .any(|w| !w.is_ascii() && lower.contains(w))
}

/// Whether a column records how many or how much was sold ([`MEASURE_WORDS`]).
fn is_measure_column(name: &str) -> bool {
    let lower = split_ident(name).to_lowercase();
    lower
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| MEASURE_WORDS.contains(&w))
        || MEASURE_WORDS
            .iter()
            .any(|w| !w.is_ascii() && lower.contains(w))
}

/// For each table, the tables it references ([`hint::references`]), in order.
fn reference_lists(schema: &Schema) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); schema.tables.len()];
    for r in hint::references(schema) {
        out[r.from].push(r.to);
    }
    out
}

/// Words that ask for rows to be listed ("list the customers…", "show all orders…").
const LISTING_WORDS: &[&str] = &[
    "list", "show", "showing", "find", "display", "see", "列出", "显示", "查找", "找出", "查看",
];
const WH_WORDS: &[&str] = &["what", "which", "who", "how", "when", "where", "why"];

/// Whether the question asks to list or show rows ("List all customers…", "列出…"), rather
/// than asking a wh-question.
fn asks_to_list(question: &str) -> bool {
    let q_lower = question.to_lowercase();
    let q_words: Vec<&str> = q_lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let listing = q_words.iter().any(|w| LISTING_WORDS.contains(w))
        || LISTING_WORDS
            .iter()
            .any(|w| !w.is_ascii() && q_lower.contains(w));
    listing && !q_words.first().is_some_and(|w| WH_WORDS.contains(w))
}

/// The rows of the entity a listing asks for, where the model listed only their ids from
/// another table: "List all customers who have made at least one purchase" answered with
/// `SELECT DISTINCT CustomerId FROM Invoice` becomes `SELECT * FROM Customer WHERE CustomerId
/// IN (SELECT CustomerId FROM Invoice)` — a list of ids is not a list of customers. Only when
/// the one selected column is named as another table's single primary key, that table's name
/// is in the question, and the statement reads from another table first.
fn rows_behind_ids(question: &str, sql: &str, schema: &Schema) -> Option<String> {
    if !asks_to_list(question) {
        return None;
    }
    let sql = sql.trim();
    let upper = sql.to_ascii_uppercase();
    let from = upper.find(" FROM ")?;
    let mut col = sql.get(..from)?.strip_prefix("SELECT ").or_else(|| {
        upper
            .starts_with("SELECT ")
            .then(|| sql.get(7..from))
            .flatten()
    })?;
    col = col.trim();
    if let Some(rest) = col
        .get(..9)
        .filter(|d| d.eq_ignore_ascii_case("distinct "))
        .and_then(|_| col.get(9..))
    {
        col = rest.trim();
    }
    if col.is_empty()
        || !col
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '"'))
    {
        return None;
    }
    let rest = sql.get(from + 6..)?;
    let source = rest
        .split_whitespace()
        .next()?
        .trim_matches(|c| matches!(c, '"' | '`' | '[' | ']'));
    let name = col.rsplit('.').next()?.trim_matches('"');
    let q_terms = crate::text::terms(question);
    let entity = schema.tables.iter().find(|t| {
        let keys: Vec<&str> = t
            .columns
            .iter()
            .filter(|c| c.primary_key > 0)
            .map(|c| c.name.as_str())
            .collect();
        keys.len() == 1
            && keys[0].eq_ignore_ascii_case(name)
            // `CustomerId`, `customer_id`: a bare `id` is every table's and names none.
            && !name.eq_ignore_ascii_case("id")
            && is_own_id(name, &t.name)
            && !t.name.eq_ignore_ascii_case(source)
            && crate::text::terms(&split_ident(&t.name))
                .iter()
                .all(|w| q_terms.contains(w))
    })?;
    Some(format!(
        "SELECT * FROM {table} WHERE {key} IN (SELECT {col} FROM {rest})",
        table = entity.name,
        key = name,
    ))
}

/// `SELECT *` instead of the model's column pick when the question asks to list or show rows
/// without naming what to show, and the statement is a plain read of one table (no join,
/// grouping, aggregate or DISTINCT). Small models pick a "name" column or two where a person
/// asking to "show the customers from Brazil" wants the rows; columns the question names (other
/// than those it filters or sorts by) keep the model's pick. `None` leaves the statement as it
/// is. The result still goes through validation like any statement.
fn whole_rows(question: &str, sql: &str) -> Option<String> {
    if !asks_to_list(question) {
        return None;
    }
    let sql = sql.trim();
    let upper = sql.to_ascii_uppercase();
    if !upper.starts_with("SELECT ") {
        return None;
    }
    let from = upper.find(" FROM ")?;
    let rest = sql.get(from + 6..)?;
    let table = rest
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_matches(|c| matches!(c, '"' | '`' | '[' | ']'));
    let mut cols = sql.get(6..from)?.trim();
    // `[DISTINCT] FirstName || ' ' || LastName [AS name]`: a name built from its parts is a
    // plain pick of those columns (the listing example shows a name built so).
    let joined_parts;
    if let Some(parts) = concatenated_columns(cols) {
        joined_parts = parts;
        cols = &joined_parts;
    }
    // `DISTINCT CustomerId FROM Customer`: the table's own id is distinct row by row already,
    // and `DISTINCT Name FROM MediaType` or `DISTINCT FirstName, LastName FROM Customer` picks
    // the rows by what names them ("all the different media types" are the table's rows):
    // a plain pick of rows.
    if let Some(picked) = cols
        .get(..9)
        .filter(|d| d.eq_ignore_ascii_case("distinct "))
        .and_then(|_| cols.get(9..))
        .map(str::trim)
        && picked
            .split(',')
            .all(|c| is_own_id(c.trim(), table) || is_own_name(c.trim(), table))
    {
        cols = picked;
    }
    let plain_list = !cols.is_empty()
        && cols
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '"' | ',' | ' '))
        && !cols
            .split(|c: char| c == ',' || c.is_whitespace())
            .any(|w| w.eq_ignore_ascii_case("distinct") || w.eq_ignore_ascii_case("as"));
    if !plain_list {
        return None;
    }
    // The statement outside parentheses: one table, no joins, grouping or set operations.
    let mut depth = 0usize;
    let top: String = rest
        .chars()
        .filter(|&c| {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                _ => return depth == 0,
            }
            false
        })
        .collect::<String>()
        .to_ascii_uppercase();
    let top_words: Vec<&str> = top.split_whitespace().collect();
    if top.contains(',')
        || top_words.iter().any(|w| {
            matches!(
                *w,
                "JOIN" | "GROUP" | "HAVING" | "UNION" | "INTERSECT" | "EXCEPT" | "WINDOW"
            )
        })
    {
        return None;
    }
    // A column the question names, other than one it filters or sorts by, was asked for. The
    // table's own name does not count: "the Customers from Brazil" names the table, not
    // `CustomerId`.
    let q_terms = crate::text::terms(question);
    let rest_lower = rest.to_lowercase();
    let table_terms = crate::text::terms(&split_ident(table));
    let asked = cols.split(',').any(|c| {
        let name = c.trim().rsplit('.').next().unwrap_or("").trim_matches('"');
        let used_after = rest_lower.contains(&name.to_lowercase());
        !used_after
            && crate::text::terms(&split_ident(name))
                .iter()
                .any(|w| q_terms.contains(w) && !table_terms.contains(w))
    });
    (!asked).then(|| format!("SELECT * FROM {rest}"))
}

/// The columns of a pick that is one concatenation of columns and quoted text, with an
/// optional DISTINCT and alias (`DISTINCT c.FirstName || ' ' || c.LastName AS name` →
/// `c.FirstName, c.LastName`); `None` for anything else.
fn concatenated_columns(cols: &str) -> Option<String> {
    let body = match cols.get(..9) {
        Some(d) if d.eq_ignore_ascii_case("distinct ") => cols.get(9..)?.trim(),
        _ => cols,
    };
    if !body.contains("||") {
        return None;
    }
    let upper = body.to_ascii_uppercase();
    let body = match upper.rfind(" AS ") {
        Some(i) if !body[i + 4..].contains('\'') => &body[..i],
        _ => body,
    };
    let mut columns = Vec::new();
    for part in body.split("||").map(str::trim) {
        if part.len() >= 2 && part.starts_with('\'') && part.ends_with('\'') {
            if part[1..part.len() - 1].contains('\'') {
                return None;
            }
            continue;
        }
        if part.is_empty()
            || !part
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '"'))
        {
            return None;
        }
        columns.push(part);
    }
    (!columns.is_empty()).then(|| columns.join(", "))
}

/// Whether `col` (maybe qualified) is `table`'s own id by name: `id`, `CustomerId`,
/// `customer_id`.
fn is_own_id(col: &str, table: &str) -> bool {
    let name = col.rsplit('.').next().unwrap_or("").trim_matches('"');
    let flat = |s: &str| s.replace('_', "").to_ascii_lowercase();
    !table.is_empty() && (flat(name) == "id" || flat(name) == format!("{}id", flat(table)))
}

/// Whether `col` (maybe qualified) names the rows of `table`: `Name`, `<Table>Name`,
/// `<Table>Title`, or a first or last name (not a bare `Title`: an employee's is a job title).
fn is_own_name(col: &str, table: &str) -> bool {
    let name = col.rsplit('.').next().unwrap_or("").trim_matches('"');
    let flat = |s: &str| s.replace('_', "").to_ascii_lowercase();
    let (name, table) = (flat(name), flat(table));
    !table.is_empty()
        && (["name", "firstname", "lastname"].contains(&name.as_str())
            || name == format!("{table}name")
            || name == format!("{table}title"))
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
    fn focus_adds_the_sales_tables_and_the_tables_between() {
        let (_dir, s) = store();
        let names = |s: &Schema| s.tables.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
        for (question, want) in [
            // The table that records sales (receipt_line: quantity), joined to the artist
            // through record and song.
            (
                "Show the top 3 best selling artists.",
                vec!["artist", "receipt_line", "record", "song"],
            ),
            (
                "Which artist sold the most records?",
                vec!["artist", "genre", "receipt_line", "record", "song"],
            ),
            (
                "每个 genre 的销售额是多少？",
                vec!["genre", "receipt_line", "record", "song"],
            ),
            // What the question's words found is joined to the sales too: receipt between.
            (
                "Which city spent the most?",
                vec!["client", "receipt", "receipt_line", "warehouse"],
            ),
            // Named tables apart are joined through the table between (record).
            (
                "List each artist with their song names.",
                vec!["artist", "client", "genre", "record", "song"],
            ),
            // No sales asked: the catalogue only.
            (
                "Which artist has the most records?",
                vec!["artist", "genre", "record", "song"],
            ),
            // "Sales" naming a role, and a quoted value, are not sales.
            (
                "List the sales agents of each client.",
                vec!["client", "receipt"],
            ),
            (
                "Show the artists named \"Sold Out\".",
                vec!["artist", "record"],
            ),
            // A kept table already records sales: nothing more is needed.
            (
                "Total quantity of receipt lines per receipt",
                vec!["client", "receipt", "receipt_line", "song"],
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
        assert!(value_phrases(&"项目".repeat(200)).len() <= knowhub_sql::MAX_PHRASES);
    }

    #[test]
    fn named_values_come_first_among_the_samples() {
        let (_dir, s) = store();
        let found = [knowhub_sql::NamedValue {
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
    fn sales_words_and_measure_columns() {
        for (question, want) in [
            ("Who bought the most stuff?", true),
            ("What is the revenue breakdown by genre?", true),
            ("哪位客户花费最多？", true),
            ("Which sales agent has the most customers?", false),
            (
                "List all employees with the title \"Sales Support Agent\".",
                false,
            ),
            ("How many tracks are there?", false),
        ] {
            assert_eq!(asks_about_sales(question), want, "{question}");
        }
        for (column, want) in [
            ("Quantity", true),
            ("InvoiceTotal", true),
            ("line_amount", true),
            ("销售额", true),
            ("UnitPrice", false),
            ("TotalitarianRegime", false),
        ] {
            assert_eq!(is_measure_column(column), want, "{column}");
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
    fn listed_ids_become_the_rows_they_name() {
        use knowhub_sql::{ColumnInfo, TableInfo, TableKind};
        let table = |name: &str, columns: &[(&str, u32)]| TableInfo {
            name: name.into(),
            kind: TableKind::Table,
            columns: columns
                .iter()
                .map(|(c, pk)| ColumnInfo {
                    name: (*c).into(),
                    decl_type: "INTEGER".into(),
                    samples: vec![],
                    values: vec![],
                    primary_key: *pk,
                })
                .collect(),
            foreign_keys: vec![],
            row_count: None,
        };
        let schema = Schema {
            tables: vec![
                table("Customer", &[("CustomerId", 1), ("Name", 0)]),
                table(
                    "Invoice",
                    &[("InvoiceId", 1), ("CustomerId", 0), ("Total", 0)],
                ),
            ],
        };
        for (question, sql, expected) in [
            (
                "List all customers who have made at least one purchase.",
                "SELECT DISTINCT CustomerId FROM Invoice",
                Some(
                    "SELECT * FROM Customer WHERE CustomerId IN (SELECT CustomerId FROM \
                     Invoice)",
                ),
            ),
            (
                "Show the customers with an invoice over 10",
                "SELECT Invoice.CustomerId FROM Invoice WHERE Total > 10",
                Some(
                    "SELECT * FROM Customer WHERE CustomerId IN (SELECT Invoice.CustomerId \
                     FROM Invoice WHERE Total > 10)",
                ),
            ),
            // Ids of the table read: whole_rows' business, not this one's.
            (
                "List all customers",
                "SELECT CustomerId FROM Customer",
                None,
            ),
            // The question does not name the entity, or does not ask to list.
            (
                "List the invoices over 10",
                "SELECT CustomerId FROM Invoice",
                None,
            ),
            (
                "Which customers bought something?",
                "SELECT CustomerId FROM Invoice",
                None,
            ),
            // More than one column.
            (
                "List all customers who bought",
                "SELECT CustomerId, Total FROM Invoice",
                None,
            ),
        ] {
            let expected = expected.map(|e| e.split_whitespace().collect::<Vec<_>>().join(" "));
            assert_eq!(
                rows_behind_ids(question, sql, &schema),
                expected,
                "{question} / {sql}"
            );
        }
        // A bare `id` names no table.
        assert_eq!(
            rows_behind_ids("List all authors", "SELECT id FROM book", &shop()),
            None
        );
    }

    #[test]
    fn questions_asking_for_name_parts_keep_them() {
        for (question, parts) in [
            ("List the first and last names of all employees", true),
            ("Show each customer's last name", true),
            ("员工的姓氏是什么", true),
            (
                "Who are the top 5 customers by total purchase amount?",
                false,
            ),
            (
                "Show all customers with their support representative name.",
                false,
            ),
            ("哪位客户消费最多", false),
        ] {
            assert_eq!(asks_for_name_parts(question), parts, "{question}");
        }
    }

    #[test]
    fn listing_questions_get_whole_rows() {
        let star = |rest: &str| Some(format!("SELECT * FROM {rest}"));
        for (question, sql, want) in [
            (
                "Show all customers from Canada.",
                "SELECT FirstName, LastName FROM Customer WHERE Country = 'Canada'",
                star("Customer WHERE Country = 'Canada'"),
            ),
            (
                "List all artists.",
                "SELECT Name FROM Artist",
                star("Artist"),
            ),
            // Sorting by a column the question names does not ask to show only it.
            (
                "List all albums sorted by title.",
                "SELECT Title FROM Album ORDER BY Title",
                star("Album ORDER BY Title"),
            ),
            (
                "Find tracks longer than the average.",
                "SELECT t.Name FROM Track t WHERE t.ms > (SELECT AVG(ms) FROM Track)",
                star("Track t WHERE t.ms > (SELECT AVG(ms) FROM Track)"),
            ),
            (
                "列出所有客户",
                "SELECT name FROM customer",
                star("customer"),
            ),
            // DISTINCT over the table's own id picks rows like any plain pick.
            (
                "Show all customers from Canada.",
                "SELECT DISTINCT CustomerId FROM Customer WHERE Country = 'Canada'",
                star("Customer WHERE Country = 'Canada'"),
            ),
            (
                "Show the customers.",
                "SELECT DISTINCT c.customer_id FROM customer c",
                star("customer c"),
            ),
            // DISTINCT over what names the rows: the different rows.
            (
                "Give me a list of all the different media types.",
                "SELECT DISTINCT Name FROM MediaType",
                star("MediaType"),
            ),
            (
                "Show all customers from Canada.",
                "SELECT DISTINCT Customer.FirstName, Customer.LastName FROM Customer WHERE \
                 Country = 'Canada'",
                star("Customer WHERE Country = 'Canada'"),
            ),
            (
                "Show the countries and names.",
                "SELECT DISTINCT Country, Name FROM Customer",
                None,
            ),
            // A bare title may be a job title: the different titles, not the rows.
            (
                "Show the different positions.",
                "SELECT DISTINCT Title FROM Employee",
                None,
            ),
            // The table's name inside a column's name does not ask for that column.
            (
                "Provide a query only showing the Customers from Brazil.",
                "SELECT CustomerId FROM Customer WHERE Country = 'Brazil'",
                star("Customer WHERE Country = 'Brazil'"),
            ),
            (
                "Show the customer names.",
                "SELECT CustomerName FROM Customer",
                None,
            ),
            // The question names the columns to show.
            (
                "List the names of all artists.",
                "SELECT Name FROM Artist",
                None,
            ),
            // Not a listing request.
            ("What genres do we have?", "SELECT Name FROM Genre", None),
            (
                "Which employees list books?",
                "SELECT Name FROM Employee",
                None,
            ),
            // A name built from its parts is a pick of those parts.
            (
                "Show all customers from Canada.",
                "SELECT DISTINCT Customer.FirstName || ' ' || Customer.LastName AS name FROM \
                 Customer WHERE Country = 'Canada'",
                star("Customer WHERE Country = 'Canada'"),
            ),
            (
                "Show the employees.",
                "SELECT FirstName || ' ' || LastName FROM Employee",
                star("Employee"),
            ),
            (
                "Show the employees.",
                "SELECT FirstName || ' ' || upper(LastName) FROM Employee",
                None,
            ),
            (
                "Show the employees' last names.",
                "SELECT FirstName || ' ' || LastName FROM Employee",
                None,
            ),
            // Joins, grouping, aggregates, DISTINCT and aliases keep the model's pick.
            (
                "Show tracks with their genre.",
                "SELECT t.Name, g.Name FROM Track t JOIN Genre g ON t.GenreId = g.GenreId",
                None,
            ),
            (
                "Show tracks per genre.",
                "SELECT GenreId FROM Track GROUP BY GenreId",
                None,
            ),
            ("Show the track count.", "SELECT COUNT(*) FROM Track", None),
            (
                "Show the countries.",
                "SELECT DISTINCT Country FROM Customer",
                None,
            ),
            (
                "Show the countries.",
                "SELECT Country AS c FROM Customer",
                None,
            ),
            ("Show the tracks.", "SELECT Name FROM Track, Genre", None),
            ("Show all tracks.", "SELECT * FROM Track", None),
        ] {
            assert_eq!(whole_rows(question, sql), want, "{question} / {sql}");
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
