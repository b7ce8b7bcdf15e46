//! Spreadsheet sheets in the team database, for the SQL tool.
//!
//! The database keeps each sheet's typed cells (`sheet_tables`, `sheet_rows`), written in the
//! same transaction as the document's text, so its change-log entry covers them too. Replicas
//! do not run SQL on these rows: each keeps a [`SheetReplica`](knowhub_store::SheetReplica), a
//! local SQLite copy the follower updates with the full-text index, so the SQL tool, its
//! validation and its dialect are the same as in local mode.

use std::collections::BTreeMap;

use knowhub_parse::{Cell, Column, Table};
use knowhub_store::backend::TableStore;
use knowhub_store::{DocumentId, ReplicaTable, SheetTableRecord, StoreError, sheet_sql_name};

use crate::{PgDocuments, PgError, PgStore, Result};

type StoreResult<T> = knowhub_store::Result<T>;

/// Rows per stored part: small enough that no single value grows large, big enough that a
/// sheet of a hundred thousand rows is a hundred inserts.
const ROWS_PER_PART: usize = 1000;

/// Replaces the sheets of document `id` (inside the transaction that stores the document).
pub(crate) fn write_sheets(
    tx: &mut postgres::Transaction<'_>,
    id: i64,
    tables: &[Table],
) -> Result<()> {
    tx.execute("DELETE FROM sheet_tables WHERE document_id = $1", &[&id])?;
    for (n, table) in tables.iter().enumerate() {
        if !table.columns.is_empty() {
            insert_sheet(tx, id, n, &sheet_sql_name(&table.name, id, n), table)?;
        }
    }
    Ok(())
}

/// Stores one sheet of document `id` at `position` under `sql_name`, with its rows in parts.
pub(crate) fn insert_sheet(
    tx: &mut postgres::Transaction<'_>,
    id: i64,
    position: usize,
    sql_name: &str,
    table: &Table,
) -> Result<()> {
    let columns = serde_json::to_string(&table.columns)
        .map_err(|e| PgError::Corrupt(format!("sheet columns: {e}")))?;
    let position =
        i32::try_from(position).map_err(|_| PgError::Invalid("sheet position".into()))?;
    let table_id: i64 = tx
        .query_one(
            "INSERT INTO sheet_tables (document_id, position, sheet_name, sql_name, columns,
                 row_count)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            &[
                &id,
                &position,
                &table.name,
                &sql_name,
                &columns,
                &(table.rows.len() as i64),
            ],
        )?
        .get(0);
    let insert = tx.prepare(
        "INSERT INTO sheet_rows (table_id, part, row_count, cells) VALUES ($1, $2, $3, $4)",
    )?;
    for (part, rows) in table.rows.chunks(ROWS_PER_PART).enumerate() {
        let cells = serde_json::to_string(rows)
            .map_err(|e| PgError::Corrupt(format!("sheet cells: {e}")))?;
        tx.execute(
            &insert,
            &[&table_id, &(part as i32), &(rows.len() as i32), &cells],
        )?;
    }
    Ok(())
}

fn columns_of(json: &str) -> Result<Vec<Column>> {
    serde_json::from_str(json).map_err(|e| PgError::Corrupt(format!("sheet columns: {e}")))
}

impl PgDocuments {
    /// The current tables of `ids`, with their rows, by document.
    pub fn sheet_tables_of(&self, ids: &[DocumentId]) -> Result<Vec<(DocumentId, ReplicaTable)>> {
        let ids: Vec<i64> = ids.iter().map(|d| d.0).collect();
        let mut client = self.db.client()?;
        let tables = client.query(
            "SELECT id, document_id, sheet_name, sql_name, columns FROM sheet_tables
             WHERE document_id = ANY($1) ORDER BY document_id, position",
            &[&ids],
        )?;
        if tables.is_empty() {
            return Ok(Vec::new());
        }
        let table_ids: Vec<i64> = tables.iter().map(|r| r.get(0)).collect();
        let mut rows: BTreeMap<i64, Vec<Vec<Cell>>> = BTreeMap::new();
        for part in client.query(
            "SELECT table_id, cells FROM sheet_rows WHERE table_id = ANY($1)
             ORDER BY table_id, part",
            &[&table_ids],
        )? {
            let cells: Vec<Vec<Cell>> = serde_json::from_str(part.get(1))
                .map_err(|e| PgError::Corrupt(format!("sheet cells: {e}")))?;
            rows.entry(part.get(0)).or_default().extend(cells);
        }
        tables
            .iter()
            .map(|r| {
                let generation: i64 = r.get(0);
                Ok((
                    DocumentId(r.get(1)),
                    ReplicaTable {
                        generation,
                        sql_name: r.get(3),
                        table: Table {
                            name: r.get(2),
                            columns: columns_of(r.get(4))?,
                            rows: rows.remove(&generation).unwrap_or_default(),
                        },
                    },
                ))
            })
            .collect()
    }

    /// Every table's name, document and generation (a replica compares its copy with it).
    pub fn sheet_generations(&self) -> Result<BTreeMap<String, (DocumentId, i64)>> {
        let mut client = self.db.client()?;
        let rows = client.query("SELECT sql_name, document_id, id FROM sheet_tables", &[])?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), (DocumentId(r.get(1)), r.get(2))))
            .collect())
    }

    /// Which of `ids` have tables.
    pub fn documents_with_sheets(&self, ids: &[DocumentId]) -> Result<Vec<DocumentId>> {
        let ids: Vec<i64> = ids.iter().map(|d| d.0).collect();
        let mut client = self.db.client()?;
        let rows = client.query(
            "SELECT DISTINCT document_id FROM sheet_tables WHERE document_id = ANY($1)",
            &[&ids],
        )?;
        Ok(rows.iter().map(|r| DocumentId(r.get(0))).collect())
    }

    /// Table records, of one document or of all, by document then position.
    pub fn sheet_records(
        &self,
        document: Option<DocumentId>,
    ) -> Result<Vec<(DocumentId, SheetTableRecord)>> {
        let mut client = self.db.client()?;
        let rows = client.query(
            "SELECT document_id, sheet_name, sql_name, columns, row_count FROM sheet_tables
             WHERE $1::BIGINT IS NULL OR document_id = $1 ORDER BY document_id, position",
            &[&document.map(|d| d.0)],
        )?;
        rows.iter()
            .map(|r| {
                Ok((
                    DocumentId(r.get(0)),
                    SheetTableRecord {
                        sheet_name: r.get(1),
                        sql_name: r.get(2),
                        columns: columns_of(r.get(3))?,
                        row_count: r.get::<_, i64>(4).max(0) as u64,
                    },
                ))
            })
            .collect()
    }

    /// The rows stored for table `sql_name` (counted from its parts, not its record).
    pub fn sheet_row_count(&self, sql_name: &str) -> Result<Option<u64>> {
        let mut client = self.db.client()?;
        let row = client.query_opt(
            "SELECT COALESCE(SUM(r.row_count), 0)::BIGINT FROM sheet_tables t
             LEFT JOIN sheet_rows r ON r.table_id = t.id WHERE t.sql_name = $1 GROUP BY t.id",
            &[&sql_name],
        )?;
        Ok(row.map(|r| r.get::<_, i64>(0).max(0) as u64))
    }
}

impl TableStore for PgStore {
    fn all_sheet_tables(&self) -> StoreResult<Vec<(DocumentId, SheetTableRecord)>> {
        Ok(PgDocuments::new(&self.db).sheet_records(None)?)
    }

    fn sheet_tables(&self, id: DocumentId) -> StoreResult<Vec<SheetTableRecord>> {
        Ok(PgDocuments::new(&self.db)
            .sheet_records(Some(id))?
            .into_iter()
            .map(|(_, t)| t)
            .collect())
    }

    fn sheet_table_rows(&self, sql_name: &str) -> StoreResult<u64> {
        PgDocuments::new(&self.db)
            .sheet_row_count(sql_name)?
            .ok_or_else(|| StoreError::Corrupt(format!("no spreadsheet table {sql_name}")))
    }

    /// Sheets go with their document (foreign keys): the database has no orphans to drop.
    fn drop_orphan_sheet_tables(&self) -> StoreResult<usize> {
        Ok(0)
    }
}
