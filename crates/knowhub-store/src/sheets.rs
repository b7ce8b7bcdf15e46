//! Spreadsheet sheets as typed SQLite tables, the form the SQL tool queries.
//!
//! Local mode keeps them in `tables.sqlite` beside the store (attached as `sheets`, written in
//! the store's transactions). A team replica keeps a [`SheetReplica`]: the same kind of file,
//! derived from the team database like the replica's full-text index, with a manifest of which
//! table generation each local table holds. Either way the SQL tool opens the file read-only and
//! sees only the tables the engine lists for the caller.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use knowhub_parse::{Cell, Column, ColumnType, Table};
use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags, params, params_from_iter};

use crate::{DocumentId, Result, SheetTableRecord, StoreError};

pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A table name a person (and a language model) can read: the sheet's name made safe, the
/// document id, and the sheet's position (so names stay unique): `projects_12_1`.
pub fn sheet_sql_name(sheet: &str, doc: i64, n: usize) -> String {
    let mut slug: String = sheet
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '_' })
        .collect();
    while slug.contains("__") {
        slug = slug.replace("__", "_");
    }
    let slug: String = slug.trim_matches('_').chars().take(40).collect();
    let slug = if slug.is_empty() || slug.starts_with(|c: char| c.is_ascii_digit()) {
        format!("sheet{}", n + 1)
    } else {
        slug
    };
    format!("{slug}_{doc}_{}", n + 1)
}

/// Creates `schema.sql_name` with the sheet's typed columns and fills it. Returns false (and
/// creates nothing) for a sheet without columns.
fn write_table(conn: &Connection, schema: &str, sql_name: &str, table: &Table) -> Result<bool> {
    let cols: Vec<String> = table
        .columns
        .iter()
        .map(|c| {
            let ty = match c.ty {
                ColumnType::Integer | ColumnType::Boolean => "INTEGER",
                ColumnType::Real => "REAL",
                ColumnType::Text | ColumnType::DateTime => "TEXT",
            };
            format!("{} {ty}", quote_ident(&c.name))
        })
        .collect();
    if cols.is_empty() {
        return Ok(false);
    }
    conn.execute_batch(&format!(
        "DROP TABLE IF EXISTS {schema}.{q}; CREATE TABLE {schema}.{q} ({})",
        cols.join(", "),
        q = quote_ident(sql_name)
    ))?;
    let placeholders = vec!["?"; table.columns.len()].join(",");
    let mut insert = conn.prepare(&format!(
        "INSERT INTO {schema}.{} VALUES ({placeholders})",
        quote_ident(sql_name)
    ))?;
    for row in &table.rows {
        let values = (0..table.columns.len()).map(|i| match row.get(i) {
            None | Some(Cell::Null) => Value::Null,
            Some(Cell::Bool(b)) => Value::Integer(i64::from(*b)),
            Some(Cell::Int(v)) => Value::Integer(*v),
            Some(Cell::Float(v)) => Value::Real(*v),
            Some(Cell::Text(s)) => Value::Text(s.clone()),
        });
        insert.execute(params_from_iter(values))?;
    }
    Ok(true)
}

/// The rows of `schema.sql_name`, as the cells they were stored from.
fn read_rows(
    conn: &Connection,
    schema: &str,
    sql_name: &str,
    columns: &[Column],
) -> Result<Vec<Vec<Cell>>> {
    let mut stmt = conn.prepare(&format!("SELECT * FROM {schema}.{}", quote_ident(sql_name)))?;
    let width = stmt.column_count();
    let rows = stmt.query_map([], |r| {
        (0..width)
            .map(|i| {
                let boolean = columns.get(i).map(|c| c.ty) == Some(ColumnType::Boolean);
                Ok(match r.get::<_, Value>(i)? {
                    Value::Null => Cell::Null,
                    Value::Integer(v) if boolean && (v == 0 || v == 1) => Cell::Bool(v == 1),
                    Value::Integer(v) => Cell::Int(v),
                    Value::Real(v) => Cell::Float(v),
                    Value::Text(s) => Cell::Text(s),
                    Value::Blob(b) => Cell::Text(String::from_utf8_lossy(&b).into_owned()),
                })
            })
            .collect::<rusqlite::Result<Vec<Cell>>>()
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Drops a document's tables from the store's `sheets` database and its list (in the store's
/// transaction).
pub(crate) fn drop_document_tables(tx: &rusqlite::Transaction<'_>, doc: i64) -> Result<()> {
    let names: Vec<String> = {
        let mut stmt = tx.prepare("SELECT sql_name FROM sheet_tables WHERE document_id = ?1")?;
        stmt.query_map(params![doc], |r| r.get(0))?
            .collect::<Result<_, _>>()?
    };
    for name in names {
        tx.execute_batch(&format!(
            "DROP TABLE IF EXISTS sheets.{}",
            quote_ident(&name)
        ))?;
    }
    tx.execute(
        "DELETE FROM sheet_tables WHERE document_id = ?1",
        params![doc],
    )?;
    Ok(())
}

/// Stores sheet `n` of document `doc` as a table in the store's `sheets` database and lists it.
pub(crate) fn create_document_table(
    tx: &rusqlite::Transaction<'_>,
    doc: i64,
    n: usize,
    table: &Table,
) -> Result<()> {
    let sql_name = sheet_sql_name(&table.name, doc, n);
    if !write_table(tx, "sheets", &sql_name, table)? {
        return Ok(());
    }
    let columns =
        serde_json::to_string(&table.columns).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    tx.execute(
        "INSERT INTO sheet_tables (document_id, sheet_name, sql_name, columns, row_count)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![doc, table.name, sql_name, columns, table.rows.len() as i64],
    )?;
    Ok(())
}

/// A stored sheet with its rows, read from the tables database attached to `conn` as `schema`
/// (`sheets` beside a local store), e.g. to copy it into a team database.
pub fn read_sheet_table(
    conn: &Connection,
    schema: &str,
    record: &SheetTableRecord,
) -> Result<Table> {
    Ok(Table {
        name: record.sheet_name.clone(),
        columns: record.columns.clone(),
        rows: read_rows(conn, schema, &record.sql_name, &record.columns)?,
    })
}

/// A sheet table as a team replica receives it from the database.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaTable {
    /// The database's id for this version of the table: a re-ingested sheet gets a new one.
    pub generation: i64,
    pub sql_name: String,
    pub table: Table,
}

/// A team replica's copy of the spreadsheet tables, in a SQLite file of its own (never the
/// local store's `tables.sqlite`, which is primary data in local mode).
#[derive(Debug)]
pub struct SheetReplica {
    conn: Connection,
}

const MANIFEST: &str = "knowhub_replica_tables";

impl SheetReplica {
    /// Opens (creating if needed) the replica file at `path`.
    pub fn open(path: &Path) -> Result<SheetReplica> {
        let conn = Connection::open(path).map_err(|source| StoreError::Open {
            path: path.display().to_string(),
            source,
        })?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
             CREATE TABLE IF NOT EXISTS {MANIFEST} (
                 sql_name TEXT PRIMARY KEY,
                 document_id INTEGER NOT NULL,
                 generation INTEGER NOT NULL);"
        ))?;
        Ok(SheetReplica { conn })
    }

    /// The tables held: sql name → (document, generation).
    pub fn generations(&self) -> Result<BTreeMap<String, (DocumentId, i64)>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT sql_name, document_id, generation FROM {MANIFEST}"
        ))?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, String>(0)?, (DocumentId(r.get(1)?), r.get(2)?)))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Makes `tables` the tables of `doc`, in one transaction: readers see the old set or the
    /// new one, never a mix.
    pub fn replace_document(&mut self, doc: DocumentId, tables: &[ReplicaTable]) -> Result<()> {
        let tx = self.conn.transaction()?;
        drop_where(&tx, "document_id = ?1", doc.0)?;
        for t in tables {
            // A name another document held (ids are never reused, so only after a crash).
            drop_where(&tx, "sql_name = ?1", &t.sql_name)?;
            if write_table(&tx, "main", &t.sql_name, &t.table)? {
                tx.execute(
                    &format!(
                        "INSERT INTO {MANIFEST} (sql_name, document_id, generation)
                         VALUES (?1, ?2, ?3)"
                    ),
                    params![t.sql_name, doc.0, t.generation],
                )?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Drops the named tables.
    pub fn remove(&mut self, names: &[String]) -> Result<()> {
        let tx = self.conn.transaction()?;
        for name in names {
            drop_where(&tx, "sql_name = ?1", name)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The rows of a held table (tests, checks).
    pub fn rows(&self, sql_name: &str, columns: &[Column]) -> Result<Vec<Vec<Cell>>> {
        read_rows(&self.conn, "main", sql_name, columns)
    }

    /// The tables held by the replica file at `path`, read without writing (the engine asks
    /// before it offers a table to the SQL tool; the follower may be a moment behind). A
    /// missing file holds none.
    pub fn held(path: &Path) -> Result<BTreeSet<String>> {
        if !path.exists() {
            return Ok(BTreeSet::new());
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| StoreError::Open {
            path: path.display().to_string(),
            source,
        })?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        let exists: bool = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
            params![MANIFEST],
            |r| r.get(0),
        )?;
        if !exists {
            return Ok(BTreeSet::new());
        }
        let mut stmt = conn.prepare(&format!("SELECT sql_name FROM {MANIFEST}"))?;
        let names = stmt.query_map([], |r| r.get(0))?;
        Ok(names.collect::<rusqlite::Result<_>>()?)
    }
}

/// Drops the manifest's tables matching `condition` (one `?1` parameter) and their entries.
fn drop_where(
    tx: &rusqlite::Transaction<'_>,
    condition: &str,
    value: impl rusqlite::ToSql,
) -> Result<()> {
    let names: Vec<String> = {
        let mut stmt = tx.prepare(&format!(
            "SELECT sql_name FROM {MANIFEST} WHERE {condition}"
        ))?;
        stmt.query_map(params![value], |r| r.get(0))?
            .collect::<Result<_, _>>()?
    };
    for name in &names {
        tx.execute_batch(&format!("DROP TABLE IF EXISTS main.{}", quote_ident(name)))?;
        tx.execute(
            &format!("DELETE FROM {MANIFEST} WHERE sql_name = ?1"),
            params![name],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(name: &str, rows: Vec<Vec<Cell>>) -> Table {
        Table {
            name: name.into(),
            columns: vec![
                Column {
                    name: "名称".into(),
                    ty: ColumnType::Text,
                },
                Column {
                    name: "amount".into(),
                    ty: ColumnType::Real,
                },
                Column {
                    name: "count".into(),
                    ty: ColumnType::Integer,
                },
                Column {
                    name: "done".into(),
                    ty: ColumnType::Boolean,
                },
            ],
            rows,
        }
    }

    fn rows() -> Vec<Vec<Cell>> {
        vec![
            vec![
                Cell::Text("甲".into()),
                Cell::Float(1.5),
                Cell::Int(3),
                Cell::Bool(true),
            ],
            vec![
                Cell::Text("b".into()),
                Cell::Null,
                Cell::Int(-7),
                Cell::Bool(false),
            ],
        ]
    }

    #[test]
    fn replica_replaces_a_documents_tables_and_reads_them_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("team-tables.sqlite");
        assert!(SheetReplica::held(&path).expect("held").is_empty());
        let mut replica = SheetReplica::open(&path).expect("open");
        let first = ReplicaTable {
            generation: 1,
            sql_name: "plan_5_1".into(),
            table: table("Plan", rows()),
        };
        replica
            .replace_document(DocumentId(5), std::slice::from_ref(&first))
            .expect("replace");
        assert_eq!(
            replica
                .rows("plan_5_1", &first.table.columns)
                .expect("rows"),
            rows()
        );
        let second = ReplicaTable {
            generation: 2,
            sql_name: "budget_5_1".into(),
            table: table("Budget", rows()[..1].to_vec()),
        };
        replica
            .replace_document(DocumentId(5), &[second])
            .expect("replace");
        let held = replica.generations().expect("generations");
        assert_eq!(
            held.into_iter().collect::<Vec<_>>(),
            vec![("budget_5_1".to_string(), (DocumentId(5), 2))]
        );
        assert_eq!(
            SheetReplica::held(&path).expect("held"),
            BTreeSet::from(["budget_5_1".to_string()])
        );
        replica.remove(&["budget_5_1".into()]).expect("remove");
        assert!(SheetReplica::held(&path).expect("held").is_empty());
        // The dropped tables are gone from the file, not only from the manifest.
        let n: i64 = replica
            .conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'",
                [],
                |r| r.get(0),
            )
            .expect("count");
        assert_eq!(n, 1);
    }

    #[test]
    fn a_sheet_without_columns_makes_no_table() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut replica = SheetReplica::open(&dir.path().join("t.sqlite")).expect("open");
        let empty = ReplicaTable {
            generation: 1,
            sql_name: "empty_1_1".into(),
            table: Table {
                name: "Empty".into(),
                columns: Vec::new(),
                rows: Vec::new(),
            },
        };
        replica
            .replace_document(DocumentId(1), &[empty])
            .expect("replace");
        assert!(replica.generations().expect("generations").is_empty());
    }
}
