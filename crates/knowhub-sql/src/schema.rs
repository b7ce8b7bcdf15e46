//! What the database holds, for the validator (which names exist, which have the tenant column)
//! and for the LLM prompt (names, types, sizes, a few sample values).
//!
//! Introspection opens the file through the same hardened read-only connection as queries and
//! gives every count/sample query a small time budget, so a huge table or a pathological view
//! costs at most a second and then simply has no count or fewer samples. Internal objects
//! (`sqlite_%`) are skipped; everything else of type `table` or `view` is listed, which covers
//! the spreadsheet database (`tables.sqlite`) whose sheets are ordinary tables with whatever
//! column names the sheet had.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use crate::conn::{clear_deadline, open_read_only, quote_ident, set_deadline};
use crate::error::Result;
use crate::value::{Value, cut};

/// Longest sample text kept, in bytes (cut at a character boundary, ending in `…`).
const SAMPLE_BYTES: usize = 40;
/// Time budget for each count or sample query during introspection.
const QUERY_BUDGET: Duration = Duration::from_millis(500);
/// Time budget for all count and sample queries of one introspection; once spent, the remaining
/// tables are listed with their columns but without counts or samples.
const TOTAL_BUDGET: Duration = Duration::from_secs(10);

/// Whether an object is a table or a view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TableKind {
    /// A table (including virtual tables).
    Table,
    /// A view.
    View,
}

/// One column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnInfo {
    /// Name as declared.
    pub name: String,
    /// Declared type (may be empty, e.g. for view columns).
    pub decl_type: String,
    /// Up to N distinct non-null, non-blob values, in storage order; text cut to 40 bytes.
    pub samples: Vec<Value>,
    /// Position in the table's primary key (1-based); 0 when not part of it.
    #[serde(default)]
    pub primary_key: u32,
    /// Every distinct text value of the column when it holds at most 200 of them, none longer
    /// than 60 characters (statuses, teams, owners, countries), read where the table has at
    /// most 200,000 rows, with the time left once every table's samples are read; empty
    /// otherwise. The template path matches a question's words against them: "李娜负责的项目"
    /// filters on an owner that three samples would not show. Not serialized, nor shown to a
    /// model (the samples are).
    #[serde(skip)]
    pub values: Vec<String>,
}

/// Distinct values a column may have for `ColumnInfo::values` to list them all.
pub(crate) const MAX_VALUES: usize = 200;
/// Characters a listed value may have: longer text is prose, not a name to filter on.
pub(crate) const MAX_VALUE_CHARS: usize = 60;
/// Rows a table may have for its values to be read: a `DISTINCT` over more is a long scan.
pub(crate) const MAX_VALUE_ROWS: u64 = 200_000;

impl ColumnInfo {
    /// The column's text values a question's words are matched against: all of them where
    /// they are known ([`values`](Self::values)), else its text samples, less any cut short.
    pub fn known_values(&self) -> Vec<&str> {
        if !self.values.is_empty() {
            return self.values.iter().map(String::as_str).collect();
        }
        self.samples
            .iter()
            .filter_map(|v| match v {
                Value::Text(t) if !t.ends_with('…') => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Whether the column holds numbers: INTEGER/REAL affinity, a NUMERIC/DECIMAL/MONEY declared
    /// type, or (no declared type) samples that are all numbers.
    pub fn is_numeric(&self) -> bool {
        let t = self.decl_type.to_ascii_uppercase();
        if t.contains("INT")
            || t.contains("REAL")
            || t.contains("FLOA")
            || t.contains("DOUB")
            || t.contains("NUM")
            || t.contains("DEC")
            || t.contains("MONEY")
        {
            return true;
        }
        t.is_empty()
            && !self.samples.is_empty()
            && self.samples.iter().all(|v| v.as_f64().is_some())
    }

    /// Whether the column holds yes/no values: a BOOL declared type, or an integer column whose
    /// samples are exactly 0 and 1 (spreadsheet TRUE/FALSE cells are stored so).
    pub fn is_boolean(&self) -> bool {
        if self.decl_type.to_ascii_uppercase().contains("BOOL") {
            return true;
        }
        let flags = |n: i64| {
            self.samples
                .iter()
                .any(|v| matches!(v, Value::Integer(i) if *i == n))
        };
        self.is_numeric() && self.samples.len() == 2 && flags(0) && flags(1)
    }

    /// Whether the column holds text (text affinity, or untyped with text samples).
    pub fn is_text(&self) -> bool {
        let t = self.decl_type.to_ascii_uppercase();
        if t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT") {
            return true;
        }
        !self.is_numeric() && self.samples.iter().any(|v| matches!(v, Value::Text(_)))
    }
}

/// One table or view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableInfo {
    /// Name as stored in the schema.
    pub name: String,
    /// Table or view.
    pub kind: TableKind,
    /// Columns in declaration order.
    pub columns: Vec<ColumnInfo>,
    /// Number of rows; `None` when counting ran out of its time budget.
    pub row_count: Option<u64>,
    /// Declared foreign keys (`FOREIGN KEY … REFERENCES …`), in declaration order.
    #[serde(default)]
    pub foreign_keys: Vec<ForeignKey>,
}

/// One declared foreign key: `columns` of this table reference `ref_columns` of `ref_table`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForeignKey {
    /// The referencing columns of this table.
    pub columns: Vec<String>,
    /// The referenced table, as written in the declaration.
    pub ref_table: String,
    /// The referenced columns; empty when the declaration names none (the primary key).
    pub ref_columns: Vec<String>,
}

impl TableInfo {
    /// The column called `name` (ASCII-case-insensitive, like SQLite).
    pub fn column(&self, name: &str) -> Option<&ColumnInfo> {
        self.columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(name))
    }
}

/// Every user table and view of one database file, sorted by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Schema {
    /// Tables and views, sorted by lower-cased name.
    pub tables: Vec<TableInfo>,
}

impl Schema {
    /// The table or view called `name` (ASCII-case-insensitive, like SQLite).
    pub fn table(&self, name: &str) -> Option<&TableInfo> {
        self.tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(name))
    }

    /// A compact description for an LLM prompt, at most `max_chars` characters: one
    /// `CREATE TABLE name(col TYPE /* samples */, …); -- N rows` line per table, in name order.
    ///
    /// When the full text is too long, samples are cut to one per column, then dropped, then
    /// trailing tables are replaced by a `-- N more tables: …` line. The same schema and budget
    /// always give the same text.
    pub fn prompt_text(&self, max_chars: usize) -> String {
        self.fit(max_chars, render)
    }

    /// The schema as SQLite DDL, the form code models were trained on, at most `max_chars`
    /// characters: per table a `CREATE TABLE name (` block with one column per line (declared
    /// type, `PRIMARY KEY`, sample values as a `-- e.g.` comment), `PRIMARY KEY (…)` for a
    /// composite key and `FOREIGN KEY (…) REFERENCES other (…)` lines for the declared foreign
    /// keys whose table is part of this schema, then `);` and the row count as a comment.
    /// Single-column primary keys and foreign-key columns get no samples (their values say
    /// nothing), numbers and dates at most one. Fitting works as in
    /// [`Schema::prompt_text`].
    pub fn ddl_text(&self, max_chars: usize) -> String {
        self.fit(max_chars, |t, samples| render_ddl(self, t, samples))
    }

    /// The text of `render` over all tables within `max_chars`, degrading as
    /// [`Schema::prompt_text`] describes.
    fn fit(&self, max_chars: usize, render: impl Fn(&TableInfo, usize) -> String) -> String {
        let max_samples = self
            .tables
            .iter()
            .flat_map(|t| t.columns.iter().map(|c| c.samples.len()))
            .max()
            .unwrap_or(0);
        let mut levels = vec![max_samples];
        if max_samples > 1 {
            levels.push(1);
        }
        if max_samples > 0 {
            levels.push(0);
        }
        for samples in levels {
            let lines: Vec<String> = self.tables.iter().map(|t| render(t, samples)).collect();
            let text = lines.concat();
            if text.chars().count() <= max_chars {
                return text;
            }
        }
        // Even without samples it does not fit: keep whole tables while there is room for them
        // and for a closing note naming the rest.
        let lines: Vec<String> = self.tables.iter().map(|t| render(t, 0)).collect();
        let note = |from: usize| {
            let rest: Vec<&str> = self.tables[from..]
                .iter()
                .map(|t| t.name.as_str())
                .collect();
            if rest.is_empty() {
                String::new()
            } else {
                format!("-- {} more tables: {}\n", rest.len(), rest.join(", "))
            }
        };
        let mut out = String::new();
        let mut used = 0;
        for (i, line) in lines.iter().enumerate() {
            let len = line.chars().count();
            if used + len + note(i + 1).chars().count() <= max_chars {
                out.push_str(line);
                used += len;
            } else {
                out.push_str(&truncate_chars(&note(i), max_chars - used));
                break;
            }
        }
        out
    }
}

fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].to_owned(),
        None => s.to_owned(),
    }
}

/// Words SQLite (or an LLM) would misread as keywords when unquoted.
const RESERVED: &[&str] = &[
    "all",
    "and",
    "as",
    "asc",
    "between",
    "by",
    "case",
    "check",
    "collate",
    "column",
    "create",
    "cross",
    "default",
    "delete",
    "desc",
    "distinct",
    "drop",
    "else",
    "end",
    "except",
    "exists",
    "from",
    "group",
    "having",
    "in",
    "index",
    "inner",
    "insert",
    "intersect",
    "into",
    "is",
    "join",
    "key",
    "left",
    "like",
    "limit",
    "natural",
    "not",
    "null",
    "offset",
    "on",
    "or",
    "order",
    "outer",
    "primary",
    "references",
    "right",
    "select",
    "set",
    "table",
    "then",
    "to",
    "transaction",
    "union",
    "unique",
    "update",
    "using",
    "values",
    "when",
    "where",
    "with",
];

/// An identifier as an LLM should write it: bare when that is unambiguous, else quoted.
fn ident(name: &str) -> String {
    let simple = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if simple && !RESERVED.contains(&name.to_ascii_lowercase().as_str()) {
        name.to_owned()
    } else {
        quote_ident(name)
    }
}

/// The unit a column's name says its numbers are in, with the conversions a question in other
/// units needs: asked for "tracks longer than 5 minutes", a small model compared
/// `Milliseconds > 5000` until the DDL said what a minute is in that column.
fn unit_note(column: &str) -> Option<&'static str> {
    let words = crate::template::ident_words(column);
    let has = |names: &[&str]| {
        words.iter().any(|w| {
            names.contains(&w.as_str()) || names.iter().any(|n| !n.is_ascii() && w.contains(n))
        })
    };
    if has(&[
        "milliseconds",
        "millisecond",
        "millis",
        "msec",
        "ms",
        "毫秒",
    ]) {
        Some("in milliseconds: 1 second = 1000, 1 minute = 60000")
    } else if has(&["seconds", "secs", "秒数"]) {
        Some("in seconds: 1 minute = 60, 1 hour = 3600")
    } else if has(&["minutes", "mins", "分钟"]) {
        Some("in minutes: 1 hour = 60")
    } else if has(&["bytes", "字节"]) {
        Some("in bytes: 1 KB = 1024, 1 MB = 1048576")
    } else {
        None
    }
}

fn render_sample(v: &Value) -> String {
    let s = match v {
        Value::Text(t) => format!("'{}'", t.replace('\'', "''")),
        other => other.to_string(),
    };
    s.replace("*/", "* /").replace(['\n', '\r'], " ")
}

fn render(t: &TableInfo, samples: usize) -> String {
    let cols: Vec<String> = t
        .columns
        .iter()
        .map(|c| {
            let mut s = ident(&c.name);
            if !c.decl_type.is_empty() {
                s.push(' ');
                s.push_str(&c.decl_type);
            }
            let shown: Vec<String> = c.samples.iter().take(samples).map(render_sample).collect();
            if !shown.is_empty() {
                s.push_str(&format!(" /* {} */", shown.join(", ")));
            }
            s
        })
        .collect();
    let kind = match t.kind {
        TableKind::Table => "TABLE",
        TableKind::View => "VIEW",
    };
    let rows = match t.row_count {
        Some(1) => " -- 1 row".to_owned(),
        Some(n) => format!(" -- {n} rows"),
        None => String::new(),
    };
    format!(
        "CREATE {kind} {}({});{rows}\n",
        ident(&t.name),
        cols.join(", ")
    )
}

/// One table of [`Schema::ddl_text`], with up to `samples` sample values per column.
fn render_ddl(schema: &Schema, t: &TableInfo, samples: usize) -> String {
    let fks: Vec<&ForeignKey> = t
        .foreign_keys
        .iter()
        .filter(|fk| schema.table(&fk.ref_table).is_some() && !fk.columns.is_empty())
        .collect();
    let keyed = |name: &str| {
        fks.iter()
            .any(|fk| fk.columns.iter().any(|c| c.eq_ignore_ascii_case(name)))
    };
    let pk_len = t.columns.iter().filter(|c| c.primary_key > 0).count();
    let mut items: Vec<(String, Option<String>)> = t
        .columns
        .iter()
        .map(|c| {
            let mut s = ident(&c.name);
            if !c.decl_type.is_empty() {
                s.push(' ');
                s.push_str(&c.decl_type);
            }
            if pk_len == 1 && c.primary_key > 0 {
                s.push_str(" PRIMARY KEY");
            }
            let comment = if (pk_len == 1 && c.primary_key > 0) || keyed(&c.name) {
                None
            } else {
                // Text values are what questions quote; one number or date shows the scale
                // or format.
                let ty = c.decl_type.to_ascii_uppercase();
                let n = if c.is_text() && !ty.contains("DATE") && !ty.contains("TIME") {
                    samples
                } else {
                    samples.min(1)
                };
                let shown: Vec<String> = c.samples.iter().take(n).map(render_sample).collect();
                let samples = (!shown.is_empty()).then(|| format!("e.g. {}", shown.join(", ")));
                match (unit_note(&c.name), samples) {
                    (Some(unit), Some(samples)) => Some(format!("{unit}; {samples}")),
                    (Some(unit), None) => Some(unit.to_string()),
                    (None, samples) => samples,
                }
            };
            (s, comment)
        })
        .collect();
    if pk_len > 1 {
        let mut pk: Vec<&ColumnInfo> = t.columns.iter().filter(|c| c.primary_key > 0).collect();
        pk.sort_by_key(|c| c.primary_key);
        let names: Vec<String> = pk.iter().map(|c| ident(&c.name)).collect();
        items.push((format!("PRIMARY KEY ({})", names.join(", ")), None));
    }
    for fk in fks {
        let cols: Vec<String> = fk.columns.iter().map(|c| ident(c)).collect();
        let mut line = format!(
            "FOREIGN KEY ({}) REFERENCES {}",
            cols.join(", "),
            ident(&fk.ref_table)
        );
        if !fk.ref_columns.is_empty() {
            let refs: Vec<String> = fk.ref_columns.iter().map(|c| ident(c)).collect();
            line.push_str(&format!(" ({})", refs.join(", ")));
        }
        items.push((line, None));
    }
    let kind = match t.kind {
        TableKind::Table => "TABLE",
        TableKind::View => "VIEW",
    };
    let mut out = format!("CREATE {kind} {} (\n", ident(&t.name));
    let last = items.len().saturating_sub(1);
    for (i, (item, comment)) in items.iter().enumerate() {
        out.push_str("  ");
        out.push_str(item);
        if i < last {
            out.push(',');
        }
        if let Some(c) = comment {
            out.push_str(" -- ");
            out.push_str(c);
        }
        out.push('\n');
    }
    out.push_str(");");
    match t.row_count {
        Some(1) => out.push_str(" -- 1 row"),
        Some(n) => out.push_str(&format!(" -- {n} rows")),
        None => {}
    }
    out.push_str("\n\n");
    out
}

/// Reads the tables and views of the SQLite file at `db_path` (opened read-only), with up to
/// `samples_per_column` distinct sample values per column.
///
/// Objects whose columns cannot be read (a view over a missing table, a virtual table of an
/// unknown module) are left out with a warning in the log.
pub fn introspect(db_path: impl AsRef<Path>, samples_per_column: usize) -> Result<Schema> {
    let mut conn = open_read_only(db_path.as_ref())?;
    let objects: Vec<(String, String)> = {
        let mut stmt = conn.prepare(
            "SELECT name, type FROM sqlite_schema
             WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
        )?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?
    };
    let mut tables = Vec::with_capacity(objects.len());
    let deadline = Instant::now() + TOTAL_BUDGET;
    for (name, kind) in objects {
        let kind = if kind == "view" {
            TableKind::View
        } else {
            TableKind::Table
        };
        match describe(&mut conn, &name, kind, samples_per_column, deadline) {
            Ok(t) => tables.push(t),
            Err(e) => tracing::warn!(table = %name, error = %e, "skipping unreadable table"),
        }
    }
    // Every table's samples first, for the prompt; then, with the time left, every value of
    // the columns of names, for the template.
    if samples_per_column > 0 {
        for t in &mut tables {
            if t.row_count.is_none_or(|n| n > MAX_VALUE_ROWS) {
                continue;
            }
            let q = quote_ident(&t.name);
            for c in &mut t.columns {
                let Some(b) = budget(deadline) else { break };
                c.values = all_values(&mut conn, &q, &c.name, b)?;
            }
        }
    }
    tables.sort_by(|a, b| {
        a.name
            .to_lowercase()
            .cmp(&b.name.to_lowercase())
            .then_with(|| a.name.cmp(&b.name))
    });
    Ok(Schema { tables })
}

fn describe(
    conn: &mut Connection,
    name: &str,
    kind: TableKind,
    samples_per_column: usize,
    deadline: Instant,
) -> Result<TableInfo> {
    let cols: Vec<(String, String, u32)> = {
        let mut stmt =
            conn.prepare("SELECT name, type, pk FROM pragma_table_info(?1) ORDER BY cid")?;
        stmt.query_map([name], |r| {
            let pk: i64 = r.get(2)?;
            Ok((r.get(0)?, r.get(1)?, u32::try_from(pk).unwrap_or(0)))
        })?
        .collect::<rusqlite::Result<_>>()?
    };
    if cols.is_empty() {
        return Err(crate::SqlError::Unsupported(format!(
            "`{name}` with no readable columns"
        )));
    }
    let q = quote_ident(name);
    let row_count = match budget(deadline) {
        Some(b) => {
            set_deadline(conn, b)?;
            let n = conn
                .query_row(&format!("SELECT count(*) FROM {q}"), [], |r| {
                    r.get::<_, i64>(0)
                })
                .ok()
                .and_then(|n| u64::try_from(n).ok());
            clear_deadline(conn)?;
            n
        }
        None => None,
    };
    let mut columns = Vec::with_capacity(cols.len());
    for (col, decl_type, primary_key) in cols {
        let samples = match budget(deadline) {
            Some(b) if samples_per_column > 0 => samples(conn, &q, &col, samples_per_column, b)?,
            _ => Vec::new(),
        };
        columns.push(ColumnInfo {
            name: col,
            decl_type,
            samples,
            values: Vec::new(),
            primary_key,
        });
    }
    let foreign_keys = if kind == TableKind::Table {
        foreign_keys(conn, name, &columns)
    } else {
        Vec::new()
    };
    Ok(TableInfo {
        name: name.to_owned(),
        kind,
        columns,
        row_count,
        foreign_keys,
    })
}

/// The declared foreign keys of table `name`, ordered by the position of their first column
/// (SQLite numbers them in reverse declaration order). A table whose list cannot be read has
/// none.
fn foreign_keys(conn: &Connection, name: &str, columns: &[ColumnInfo]) -> Vec<ForeignKey> {
    let rows: Vec<(i64, String, String, Option<String>)> = conn
        .prepare(
            "SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?1) ORDER BY id, seq",
        )
        .and_then(|mut stmt| {
            stmt.query_map([name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .unwrap_or_default();
    let mut out: Vec<(i64, ForeignKey)> = Vec::new();
    for (id, table, from, to) in rows {
        match out.last_mut() {
            Some((last, fk)) if *last == id => {
                fk.columns.push(from);
                fk.ref_columns.extend(to);
            }
            _ => out.push((
                id,
                ForeignKey {
                    columns: vec![from],
                    ref_table: table,
                    ref_columns: to.into_iter().collect(),
                },
            )),
        }
    }
    let position = |fk: &ForeignKey| {
        fk.columns
            .first()
            .and_then(|c| columns.iter().position(|x| x.name.eq_ignore_ascii_case(c)))
            .unwrap_or(usize::MAX)
    };
    let mut fks: Vec<ForeignKey> = out
        .into_iter()
        .map(|(_, mut fk)| {
            // A partly named reference list is no use; the referenced key is then implied.
            if fk.ref_columns.len() != fk.columns.len() {
                fk.ref_columns.clear();
            }
            fk
        })
        .collect();
    fks.sort_by_key(position);
    fks
}

/// The budget for the next query: at most [`QUERY_BUDGET`], `None` once `deadline` passed.
fn budget(deadline: Instant) -> Option<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    (!left.is_zero()).then(|| left.min(QUERY_BUDGET))
}

/// Every distinct text value of `col` ([`ColumnInfo::values`]), or none when it has more than
/// [`MAX_VALUES`], one is longer than [`MAX_VALUE_CHARS`], or the budget runs out.
fn all_values(
    conn: &mut Connection,
    table: &str,
    col: &str,
    budget: Duration,
) -> Result<Vec<String>> {
    let c = quote_ident(col);
    let sql = format!(
        "SELECT DISTINCT {c} FROM {table} WHERE typeof({c}) = 'text' AND {c} <> '' LIMIT ?1"
    );
    set_deadline(conn, budget)?;
    let mut out = Vec::new();
    let mut complete = false;
    if let Ok(mut stmt) = conn.prepare(&sql)
        && let Ok(mut rows) = stmt.query([i64::try_from(MAX_VALUES + 1).unwrap_or(i64::MAX)])
    {
        complete = true;
        loop {
            match rows.next() {
                Ok(Some(row)) => match row.get::<_, String>(0) {
                    Ok(v) if v.chars().count() <= MAX_VALUE_CHARS => out.push(v),
                    _ => {
                        complete = false;
                        break;
                    }
                },
                Ok(None) => break,
                // Interrupted at the deadline: the list may lack values.
                Err(_) => {
                    complete = false;
                    break;
                }
            }
        }
    }
    clear_deadline(conn)?;
    if !complete || out.len() > MAX_VALUES {
        out.clear();
    }
    Ok(out)
}

/// Distinct sample values of one column; whatever was found before the budget ran out.
fn samples(
    conn: &mut Connection,
    table: &str,
    col: &str,
    n: usize,
    budget: Duration,
) -> Result<Vec<Value>> {
    let c = quote_ident(col);
    let sql = format!(
        "SELECT DISTINCT {c} FROM {table} WHERE {c} IS NOT NULL AND typeof({c}) <> 'blob' LIMIT ?1"
    );
    set_deadline(conn, budget)?;
    let mut out = Vec::new();
    if let Ok(mut stmt) = conn.prepare(&sql)
        && let Ok(mut rows) = stmt.query([i64::try_from(n).unwrap_or(i64::MAX)])
    {
        while let Ok(Some(row)) = rows.next() {
            match row.get_ref(0) {
                Ok(v) => out.push(match Value::from_sqlite(v) {
                    Value::Text(t) => Value::Text(cut(&t, SAMPLE_BYTES)),
                    other => other,
                }),
                Err(_) => break,
            }
        }
    }
    clear_deadline(conn)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn fixture() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sqlite");
        let c = Connection::open(&path).unwrap();
        c.execute_batch(
            "CREATE TABLE Customer (CustomerId INTEGER PRIMARY KEY AUTOINCREMENT,
                                    Name NVARCHAR(40), Country TEXT, Photo BLOB);
             INSERT INTO Customer (Name, Country, Photo) VALUES
               ('Luís', 'Brazil', x'00'), ('Leonie', 'Germany', NULL),
               ('François', 'Canada', NULL), ('Bjørn', 'Norway', NULL),
               ('A very long name that goes on and on and on and on', 'Brazil', NULL);
             CREATE TABLE \"order\" (id INTEGER, total NUMERIC(10,2));
             INSERT INTO \"order\" VALUES (1, 9.5);
             CREATE VIEW brazilians AS SELECT Name FROM Customer WHERE Country = 'Brazil';
             CREATE TABLE sheet_销售 (\"地区\" TEXT, \"销售额\" REAL);
             INSERT INTO sheet_销售 VALUES ('华东', 1200.5), ('华南', 800);
             CREATE VIEW broken AS SELECT * FROM missing_table;",
        )
        .ok();
        (dir, path)
    }

    #[test]
    fn introspects_tables_views_and_samples() {
        let (_dir, path) = fixture();
        let s = introspect(&path, 3).unwrap();
        let names: Vec<&str> = s.tables.iter().map(|t| t.name.as_str()).collect();
        // sqlite_sequence is internal; the broken view is skipped.
        assert_eq!(names, ["brazilians", "Customer", "order", "sheet_销售"]);
        let c = s.table("customer").unwrap();
        assert_eq!(c.kind, TableKind::Table);
        assert_eq!(c.row_count, Some(5));
        let country = c.column("COUNTRY").unwrap();
        assert_eq!(country.decl_type, "TEXT");
        assert_eq!(
            country.samples,
            vec![
                Value::Text("Brazil".into()),
                Value::Text("Germany".into()),
                Value::Text("Canada".into())
            ]
        );
        assert!(c.column("Photo").unwrap().samples.is_empty(), "no blobs");
        assert!(c.column("CustomerId").unwrap().is_numeric());
        assert!(country.is_text());
        assert!(s.table("order").unwrap().columns[1].is_numeric());
        assert_eq!(s.table("brazilians").unwrap().kind, TableKind::View);
        assert_eq!(s.table("brazilians").unwrap().row_count, Some(2));
        let sheet = s.table("sheet_销售").unwrap();
        assert_eq!(sheet.columns[0].name, "地区");
        assert!(sheet.columns[1].is_numeric());
    }

    #[test]
    fn every_value_of_a_column_of_names_is_known_beyond_the_samples() {
        let (_dir, path) = fixture();
        let s = introspect(&path, 1).unwrap();
        let c = s.table("Customer").unwrap();
        let country = c.column("Country").unwrap();
        assert_eq!(country.samples.len(), 1);
        assert_eq!(country.values, ["Brazil", "Germany", "Canada", "Norway"]);
        assert_eq!(
            country.known_values(),
            ["Brazil", "Germany", "Canada", "Norway"]
        );
        // A value longer than a sample is kept whole.
        let name = c.column("Name").unwrap();
        assert_eq!(
            name.values.last().map(String::as_str),
            Some("A very long name that goes on and on and on and on")
        );
        // No numbers, no blobs.
        assert!(c.column("Photo").unwrap().values.is_empty());
        assert!(s.table("order").unwrap().columns[1].values.is_empty());
        // Without samples, no values are read either.
        let bare = introspect(&path, 0).unwrap();
        let bare_country = bare.table("Customer").unwrap().column("Country").unwrap();
        assert!(bare_country.values.is_empty());
        // More distinct values than a column of names has, or one too long to be a name: none
        // listed, and the samples stand in, less any cut short.
        let dir = tempfile::tempdir().unwrap();
        let many = dir.path().join("many.sqlite");
        let conn = Connection::open(&many).unwrap();
        conn.execute_batch("CREATE TABLE t (code TEXT, note TEXT)")
            .unwrap();
        for i in 0..=MAX_VALUES {
            conn.execute("INSERT INTO t VALUES (?1, 'short')", [format!("c{i}")])
                .unwrap();
        }
        let prose = "x".repeat(MAX_VALUE_CHARS + 1);
        conn.execute("INSERT INTO t VALUES ('c0', ?1)", [&prose])
            .unwrap();
        drop(conn);
        let s = introspect(&many, 3).unwrap();
        let t = s.table("t").unwrap();
        assert!(t.columns[0].values.is_empty());
        assert_eq!(t.columns[0].known_values(), ["c0", "c1", "c2"]);
        assert!(t.columns[1].values.is_empty());
        assert_eq!(t.columns[1].known_values(), ["short"]);
    }

    #[test]
    fn long_samples_are_cut() {
        let (_dir, path) = fixture();
        let s = introspect(&path, 10).unwrap();
        let names = &s.table("Customer").unwrap().column("Name").unwrap().samples;
        assert_eq!(names.len(), 5);
        let Value::Text(long) = &names[4] else {
            panic!("text expected")
        };
        assert!(long.ends_with('…') && long.len() <= SAMPLE_BYTES + '…'.len_utf8());
    }

    #[test]
    fn prompt_text_is_compact_deterministic_and_bounded() {
        let (_dir, path) = fixture();
        let s = introspect(&path, 2).unwrap();
        let full = s.prompt_text(10_000);
        assert_eq!(full, introspect(&path, 2).unwrap().prompt_text(10_000));
        assert!(full.contains(
            "CREATE TABLE Customer(CustomerId INTEGER /* 1, 2 */, Name NVARCHAR(40) /* 'Luís', 'Leonie' */"
        ), "{full}");
        assert!(full.contains("CREATE TABLE \"order\"(id INTEGER /* 1 */, total NUMERIC(10,2) /* 9.5 */); -- 1 row"), "{full}");
        assert!(
            full.contains("CREATE VIEW brazilians(Name NVARCHAR(40)"),
            "{full}"
        );
        assert!(
            full.contains("\"sheet_销售\"(\"地区\" TEXT /* '华东', '华南' */"),
            "{full}"
        );
        assert_eq!(full.lines().count(), 4);

        for budget in [0, 10, 60, 150, 250, 400, full.chars().count()] {
            let text = s.prompt_text(budget);
            assert!(text.chars().count() <= budget, "{budget}: {text}");
        }
        let small = s.prompt_text(250);
        assert!(!small.contains("/*"), "samples dropped first: {small}");
        let tiny = s.prompt_text(150);
        assert!(tiny.contains("more tables: "), "{tiny}");
    }

    fn shop() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shop.sqlite");
        let c = Connection::open(&path).unwrap();
        c.execute_batch(
            "CREATE TABLE author (id INTEGER PRIMARY KEY, name TEXT, born DATE);
             CREATE TABLE book (book_id INTEGER PRIMARY KEY, title TEXT,
                                author_id INTEGER REFERENCES author(id), price REAL,
                                editor_id INTEGER REFERENCES author);
             CREATE TABLE book_tag (book INTEGER, tag TEXT, PRIMARY KEY (book, tag),
                                    FOREIGN KEY (book) REFERENCES book (book_id));
             CREATE TABLE loan (id INTEGER, book_id INTEGER, member TEXT,
                                FOREIGN KEY (book_id) REFERENCES book (book_id));
             CREATE VIEW cheap AS SELECT title FROM book WHERE price < 5;
             INSERT INTO author VALUES (1, 'Ann O''Neil', '1970-01-31'), (2, 'Bo', NULL);
             INSERT INTO book VALUES (10, 'Dune', 1, 9.5, 2), (11, 'Emma', 2, 4, NULL);
             INSERT INTO book_tag VALUES (10, 'sf');",
        )
        .unwrap();
        (dir, path)
    }

    #[test]
    fn units_are_read_from_column_names() {
        let cases = [
            ("Milliseconds", Some("milliseconds")),
            ("duration_ms", Some("milliseconds")),
            ("LengthSeconds", Some("seconds")),
            ("run_mins", Some("minutes")),
            ("FileBytes", Some("bytes")),
            ("时长毫秒", Some("milliseconds")),
            ("Messages", None),
            ("Items", None),
            ("Total", None),
        ];
        for (column, want) in cases {
            let got = unit_note(column);
            match want {
                Some(unit) => assert!(
                    got.is_some_and(|n| n.starts_with(&format!("in {unit}:"))),
                    "{column}: {got:?}"
                ),
                None => assert_eq!(got, None, "{column}"),
            }
        }
    }

    #[test]
    fn keys_are_introspected() {
        let (_dir, path) = shop();
        let s = introspect(&path, 2).unwrap();
        let book = s.table("book").unwrap();
        assert_eq!(book.column("book_id").unwrap().primary_key, 1);
        assert_eq!(book.column("title").unwrap().primary_key, 0);
        assert_eq!(
            book.foreign_keys,
            vec![
                ForeignKey {
                    columns: vec!["author_id".into()],
                    ref_table: "author".into(),
                    ref_columns: vec!["id".into()],
                },
                ForeignKey {
                    columns: vec!["editor_id".into()],
                    ref_table: "author".into(),
                    ref_columns: vec![],
                },
            ]
        );
        let tag = s.table("book_tag").unwrap();
        assert_eq!(tag.column("book").unwrap().primary_key, 1);
        assert_eq!(tag.column("tag").unwrap().primary_key, 2);
        assert!(s.table("cheap").unwrap().foreign_keys.is_empty());
    }

    #[test]
    fn ddl_shows_keys_references_and_samples() {
        let (_dir, path) = shop();
        let full = introspect(&path, 2).unwrap();
        let mut without_author = full.clone();
        without_author.tables.retain(|t| t.name != "author");
        // Just room for the text without samples.
        let mut bare = full.clone();
        for c in bare.tables.iter_mut().flat_map(|t| t.columns.iter_mut()) {
            c.samples.clear();
        }
        let no_samples = bare.ddl_text(10_000).chars().count();
        // (schema, budget, texts that must appear, texts that must not)
        let cases: Vec<(&Schema, usize, Vec<&str>, Vec<&str>)> = vec![
            (
                &full,
                10_000,
                vec![
                    "CREATE TABLE author (\n  id INTEGER PRIMARY KEY,\n  name TEXT, -- e.g. 'Ann O''Neil', 'Bo'\n  born DATE -- e.g. '1970-01-31'\n); -- 2 rows\n\n",
                    "  book_id INTEGER PRIMARY KEY,\n  title TEXT, -- e.g. 'Dune', 'Emma'\n  author_id INTEGER,\n",
                    "  price REAL, -- e.g. 9.5\n",
                    "  FOREIGN KEY (author_id) REFERENCES author (id),\n  FOREIGN KEY (editor_id) REFERENCES author\n);",
                    "CREATE TABLE book_tag (\n  book INTEGER,\n  tag TEXT, -- e.g. 'sf'\n  PRIMARY KEY (book, tag),\n  FOREIGN KEY (book) REFERENCES book (book_id)\n); -- 1 row",
                    "  FOREIGN KEY (book_id) REFERENCES book (book_id)\n); -- 0 rows",
                    "CREATE VIEW cheap (\n  title TEXT -- e.g. 'Emma'\n);",
                ],
                vec!["book_tag INTEGER PRIMARY KEY", "id INTEGER, -- e.g. 1"],
            ),
            // A referenced table that is not part of the schema is not named.
            (
                &without_author,
                10_000,
                vec![
                    "  author_id INTEGER, -- e.g. 1\n",
                    "  editor_id INTEGER -- e.g. 2\n);",
                ],
                vec!["REFERENCES author", "CREATE TABLE author"],
            ),
            // Tight budgets drop samples first.
            (
                &full,
                no_samples,
                vec!["FOREIGN KEY (author_id) REFERENCES author (id)"],
                vec!["e.g."],
            ),
            (&full, 120, vec!["more tables: "], vec![]),
        ];
        for (schema, budget, want, unwanted) in cases {
            let text = schema.ddl_text(budget);
            assert!(text.chars().count() <= budget, "{budget}: {text}");
            assert_eq!(text, schema.ddl_text(budget), "deterministic");
            for w in want {
                assert!(text.contains(w), "{budget}: missing {w:?} in\n{text}");
            }
            for u in unwanted {
                assert!(!text.contains(u), "{budget}: unexpected {u:?} in\n{text}");
            }
        }
    }

    #[test]
    fn wal_database_is_readable_and_missing_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wal.sqlite");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                "PRAGMA journal_mode = WAL; CREATE TABLE doc1_sheet1 (a TEXT); INSERT INTO doc1_sheet1 VALUES ('x');",
            )
            .unwrap();
        }
        let s = introspect(&path, 1).unwrap();
        assert_eq!(s.tables[0].name, "doc1_sheet1");
        assert_eq!(s.tables[0].row_count, Some(1));
        assert!(introspect(dir.path().join("nope.sqlite"), 1).is_err());
    }
}
