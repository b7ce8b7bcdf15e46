//! What the database holds, for the validator (which names exist, which have the tenant column)
//! and for whoever writes statements (names, types, keys, sizes, a few sample values).
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
    /// otherwise. The template path matches a question's words against them: "张伟负责的项目"
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
