//! What a caller may run: the row limit, time budget, result size cap and the tenant filter.
//!
//! One [`Policy`] value is passed to both [`crate::validate`] (which rewrites the query: LIMIT,
//! tenant restriction) and [`crate::execute`] (which enforces the budgets while it runs), so the
//! two halves cannot disagree.

use std::time::Duration;

use rusqlite::types::{ToSql, ToSqlOutput};
use serde::{Deserialize, Serialize};

use crate::error::{Result, SqlError};

/// Default cap on returned rows (and the LIMIT forced onto every query).
pub const DEFAULT_LIMIT: usize = 50;
/// Default wall-clock budget for one query (prepare + all steps).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
/// Default cap on the total size of the returned values.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 256 * 1024;

/// A value bound to a statement parameter (the tenant value); never spliced into SQL text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Param {
    /// An integer.
    Integer(i64),
    /// A floating-point number.
    Real(f64),
    /// A text value.
    Text(String),
}

impl From<&str> for Param {
    fn from(v: &str) -> Self {
        Param::Text(v.to_owned())
    }
}

impl From<String> for Param {
    fn from(v: String) -> Self {
        Param::Text(v)
    }
}

impl From<i64> for Param {
    fn from(v: i64) -> Self {
        Param::Integer(v)
    }
}

impl ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Param::Integer(v) => ToSqlOutput::from(*v),
            Param::Real(v) => ToSqlOutput::from(*v),
            Param::Text(v) => ToSqlOutput::from(v.as_str()),
        })
    }
}

/// Row-level tenant isolation: every table or view that has `column` is only ever read through
/// `column = value`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantFilter {
    /// The column that names the tenant (matched ASCII-case-insensitively, like SQLite does).
    pub column: String,
    /// The caller's tenant; bound as a parameter.
    pub value: Param,
}

impl TenantFilter {
    /// A filter on `column = value`.
    pub fn new(column: impl Into<String>, value: impl Into<Param>) -> Self {
        TenantFilter {
            column: column.into(),
            value: value.into(),
        }
    }
}

/// The rules one query runs under. `Policy::default()` is the copilot's: LIMIT 50, 2 s,
/// 256 KiB, no tenant filter.
///
/// With a tenant filter set, a table or view is readable only when it has the tenant column
/// (then it is filtered) or when it is listed in `shared_tables` (reference data that belongs to
/// no tenant, read unfiltered). Anything else is refused, so forgetting to add a tenant column to
/// a new table fails closed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// Maximum rows returned; queries without a LIMIT, or with a larger one, get `LIMIT limit`.
    pub limit: usize,
    /// Wall-clock budget for preparing and running the query.
    pub timeout: Duration,
    /// Cap on the total size of returned values; past it the result is cut and marked truncated.
    pub max_result_bytes: usize,
    /// Optional row-level tenant restriction.
    pub tenant: Option<TenantFilter>,
    /// Tables and views without the tenant column that may still be read (unfiltered) while a
    /// tenant filter is configured. Matched ASCII-case-insensitively.
    pub shared_tables: Vec<String>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            limit: DEFAULT_LIMIT,
            timeout: DEFAULT_TIMEOUT,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            tenant: None,
            shared_tables: Vec::new(),
        }
    }
}

impl Policy {
    /// The default policy restricted to one tenant.
    pub fn for_tenant(tenant: TenantFilter) -> Self {
        Policy {
            tenant: Some(tenant),
            ..Policy::default()
        }
    }

    /// Adds shared (tenant-less) tables.
    pub fn with_shared_tables<I, S>(mut self, tables: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.shared_tables
            .extend(tables.into_iter().map(Into::into));
        self
    }

    /// Whether `table` is listed as shared.
    pub fn is_shared(&self, table: &str) -> bool {
        self.shared_tables
            .iter()
            .any(|t| t.eq_ignore_ascii_case(table))
    }

    /// Checks that the numbers make sense.
    pub fn check(&self) -> Result<()> {
        if self.limit == 0 {
            return Err(SqlError::InvalidPolicy(
                "the row limit must be at least 1".into(),
            ));
        }
        if self.timeout.is_zero() {
            return Err(SqlError::InvalidPolicy(
                "the timeout must be positive".into(),
            ));
        }
        if self.max_result_bytes == 0 {
            return Err(SqlError::InvalidPolicy(
                "the result size cap must be positive".into(),
            ));
        }
        if let Some(t) = &self.tenant
            && t.column.trim().is_empty()
        {
            return Err(SqlError::InvalidPolicy(
                "the tenant column name is empty".into(),
            ));
        }
        Ok(())
    }
}
