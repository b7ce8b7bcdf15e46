//! The schema as a model reads it: a compact one-line-per-table text and SQLite DDL with keys,
//! references, units and sample values, both fitted to a character budget.

use knowhub_sql::{ColumnInfo, ForeignKey, Schema, TableInfo, TableKind, Value, quote_ident};

/// Prompt texts of a [`Schema`].
pub trait SchemaPrompt {
    /// A compact description for an LLM prompt, at most `max_chars` characters: one
    /// `CREATE TABLE name(col TYPE /* samples */, …); -- N rows` line per table, in name order.
    ///
    /// When the full text is too long, samples are cut to one per column, then dropped, then
    /// trailing tables are replaced by a `-- N more tables: …` line. The same schema and budget
    /// always give the same text.
    fn prompt_text(&self, max_chars: usize) -> String;

    /// The schema as SQLite DDL, the form code models were trained on, at most `max_chars`
    /// characters: per table a `CREATE TABLE name (` block with one column per line (declared
    /// type, `PRIMARY KEY`, sample values as a `-- e.g.` comment), `PRIMARY KEY (…)` for a
    /// composite key and `FOREIGN KEY (…) REFERENCES other (…)` lines for the declared foreign
    /// keys whose table is part of this schema, then `);` and the row count as a comment.
    /// Single-column primary keys and foreign-key columns get no samples (their values say
    /// nothing), numbers and dates at most one. Fitting works as in
    /// [`SchemaPrompt::prompt_text`].
    fn ddl_text(&self, max_chars: usize) -> String;
}

impl SchemaPrompt for Schema {
    fn prompt_text(&self, max_chars: usize) -> String {
        fit(self, max_chars, render)
    }

    fn ddl_text(&self, max_chars: usize) -> String {
        fit(self, max_chars, |t, samples| render_ddl(self, t, samples))
    }
}

/// The text of `render` over all tables within `max_chars`, degrading as
/// [`SchemaPrompt::prompt_text`] describes.
fn fit(schema: &Schema, max_chars: usize, render: impl Fn(&TableInfo, usize) -> String) -> String {
    let max_samples = schema
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
        let lines: Vec<String> = schema.tables.iter().map(|t| render(t, samples)).collect();
        let text = lines.concat();
        if text.chars().count() <= max_chars {
            return text;
        }
    }
    // Even without samples it does not fit: keep whole tables while there is room for them
    // and for a closing note naming the rest.
    let lines: Vec<String> = schema.tables.iter().map(|t| render(t, 0)).collect();
    let note = |from: usize| {
        let rest: Vec<&str> = schema.tables[from..]
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
/// units needs: asked for "chapters longer than 5 minutes", a small model compared
/// `DurationMs > 5000` until the DDL said what a minute is in that column.
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

/// One table of [`SchemaPrompt::ddl_text`], with up to `samples` sample values per column.
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use knowhub_sql::introspect;
    use rusqlite::Connection;

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
}
