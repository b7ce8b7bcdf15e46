//! Which of a question's phrases are values stored in the database: "Get me all the Kim Park
//! songs" names a row of `Author.Name`, "张三负责几个项目" one of `Owner`. A prompt that shows
//! the model where the value lives ("Name … -- e.g. 'Kim Park'") keeps it from filtering an
//! book title or a chapter name for the band.
//!
//! Lookups are ordinary statements that go through [`knowhub_sql::validate`] and [`knowhub_sql::execute`]
//! under the caller's [`Policy`]: read-only, time-bounded, and restricted to the caller's tenant
//! where the source declares one, so a lookup never reveals another tenant's values.

use std::path::Path;
use std::time::{Duration, Instant};

use knowhub_sql::{Policy, Schema, TableKind, Value, execute, quote_ident, validate};

/// Most phrases looked up for one question.
pub const MAX_PHRASES: usize = 48;
/// Tables with more rows than this are not searched: a scan of each text column costs time the
/// user waits for.
pub const MAX_ROWS_SEARCHED: u64 = 500_000;
/// Most text columns searched for one question.
const MAX_COLUMNS: usize = 64;
/// Time all lookups for one question may take together: past it the remaining columns are
/// not searched.
pub const LOOKUP_BUDGET: Duration = Duration::from_millis(1500);

/// A value of the database that a phrase of the question names, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedValue {
    /// The table, as declared.
    pub table: String,
    /// The column, as declared.
    pub column: String,
    /// The value as stored (its case may differ from the question's).
    pub value: String,
}

/// The stored text values equal (ASCII case aside) to one of `phrases`, column by column in
/// schema order. Columns that cannot be searched (too large a table, a lookup that fails or
/// runs out of time, columns left when [`LOOKUP_BUDGET`] is spent) are skipped: this only ever
/// adds hints, so it never fails.
///
/// ```
/// use knowhub_sql::{Policy, introspect};
/// use knowhub_sqlgen::values_named;
/// let dir = tempfile::tempdir().unwrap();
/// let db = dir.path().join("music.sqlite");
/// let conn = rusqlite::Connection::open(&db).unwrap();
/// conn.execute_batch(
///     "CREATE TABLE author (id INTEGER PRIMARY KEY, name TEXT);
///      INSERT INTO author (name) VALUES ('Kim Park'), ('Ann Lee');",
/// )
/// .unwrap();
/// let schema = introspect(&db, 2).unwrap();
/// let found = values_named(&db, &schema, &Policy::default(), &["kim park".into()]);
/// assert_eq!(found.len(), 1);
/// assert_eq!((found[0].column.as_str(), found[0].value.as_str()), ("name", "Kim Park"));
/// ```
pub fn values_named(
    db: &Path,
    schema: &Schema,
    policy: &Policy,
    phrases: &[String],
) -> Vec<NamedValue> {
    let mut wanted: Vec<String> = phrases
        .iter()
        .map(|p| p.trim().to_ascii_lowercase())
        .filter(|p| !p.is_empty())
        .collect();
    wanted.sort();
    wanted.dedup();
    wanted.truncate(MAX_PHRASES);
    if wanted.is_empty() {
        return Vec::new();
    }
    let list = wanted
        .iter()
        .map(|p| format!("'{}'", p.replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(", ");
    let mut out = Vec::new();
    let columns = schema
        .tables
        .iter()
        .filter(|t| t.kind == TableKind::Table)
        .filter(|t| t.row_count.is_none_or(|n| n <= MAX_ROWS_SEARCHED))
        .flat_map(|t| t.columns.iter().map(move |c| (t, c)))
        .filter(|(_, c)| c.is_text())
        .take(MAX_COLUMNS);
    let started = Instant::now();
    for (table, column) in columns {
        let Some(left) = LOOKUP_BUDGET.checked_sub(started.elapsed()) else {
            break;
        };
        let policy = Policy {
            timeout: policy.timeout.min(left),
            ..policy.clone()
        };
        let policy = &policy;
        let col = quote_ident(&column.name);
        // `lower()` folds ASCII only, as the phrases were folded: other scripts match exactly.
        let sql = format!(
            "SELECT DISTINCT {col} FROM {} WHERE lower({col}) IN ({list})",
            quote_ident(&table.name)
        );
        let Ok(safe) = validate(&sql, schema, policy) else {
            continue;
        };
        let Ok(result) = execute(db, &safe, policy) else {
            continue;
        };
        for row in result.rows {
            if let Some(Value::Text(value)) = row.into_iter().next() {
                out.push(NamedValue {
                    table: table.name.clone(),
                    column: column.name.clone(),
                    value,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use knowhub_sql::TenantFilter;
    use knowhub_sql::introspect;

    fn db() -> (tempfile::TempDir, std::path::PathBuf, Schema) {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("projects.sqlite");
        let conn = rusqlite::Connection::open(&db).expect("open");
        conn.execute_batch(
            "CREATE TABLE project (id INTEGER PRIMARY KEY, name TEXT, owner TEXT, org TEXT,
                                   budget REAL);
             INSERT INTO project (name, owner, org, budget) VALUES
               ('Apollo', '张三', 'acme', 10), ('Gemini', 'Li Wei', 'acme', 20),
               ('Mercury', 'O''Brien', 'acme', 5), ('Secret', 'Eve', 'other', 1);",
        )
        .expect("fill");
        let schema = introspect(&db, 2).expect("introspect");
        (dir, db, schema)
    }

    #[test]
    fn phrases_find_their_stored_values() {
        let (_dir, db, schema) = db();
        let found = |policy: &Policy, phrases: &[&str]| {
            let phrases: Vec<String> = phrases.iter().map(|p| (*p).to_string()).collect();
            values_named(&db, &schema, policy, &phrases)
                .into_iter()
                .map(|v| format!("{}={}", v.column, v.value))
                .collect::<Vec<_>>()
        };
        let open = Policy::default();
        for (phrases, want) in [
            // Case folded; Chinese matched as written; quotes inside a value.
            (vec!["GEMINI", "张三"], vec!["name=Gemini", "owner=张三"]),
            (vec!["o'brien"], vec!["owner=O'Brien"]),
            // Numbers are not text columns' values; unknown phrases find nothing.
            (vec!["10", "Pluto", ""], vec![]),
            // A phrase trying to break out of its quotes is only a value.
            (vec!["x') OR 1=1 --"], vec![]),
        ] {
            assert_eq!(found(&open, &phrases), want, "{phrases:?}");
        }
        // Another tenant's value is not found.
        let acme = Policy {
            tenant: Some(TenantFilter::new("org", "acme")),
            ..Policy::default()
        };
        assert_eq!(found(&open, &["Secret"]), ["name=Secret"]);
        assert!(found(&acme, &["Secret"]).is_empty());
        assert_eq!(found(&acme, &["apollo"]), ["name=Apollo"]);
    }
}
