//! The crate's single error type.
//!
//! Refusals ([`SqlError::is_refusal`]) say in plain words *why* a query was not run, so the
//! agent can show the reason or rephrase; the other variants are run-time failures.

use std::time::Duration;

/// Everything that can go wrong between a piece of SQL text and its result rows.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// The database file could not be opened read-only.
    #[error("cannot open the database {path} read-only: {reason}")]
    Open {
        /// The path as given.
        path: String,
        /// What SQLite or the file system said.
        reason: String,
    },
    /// The query text was empty (or only comments).
    #[error("the query is empty")]
    Empty,
    /// The query text was longer than the validator accepts.
    #[error("the query is {len} bytes long; at most {max} bytes are accepted")]
    TooLong {
        /// Length of the text in bytes.
        len: usize,
        /// The accepted maximum.
        max: usize,
    },
    /// The text is not valid SQL (for the SQLite dialect).
    #[error("the query could not be parsed: {0}")]
    Parse(String),
    /// More than one statement was given.
    #[error("only one statement is allowed, but the text contains {0}")]
    MultipleStatements(usize),
    /// The statement is not a read-only query.
    #[error("only read-only SELECT queries are allowed; {0} statements are refused")]
    NotAQuery(String),
    /// A FROM item names a table or view that the schema does not have.
    #[error("unknown table or view `{0}`")]
    UnknownTable(String),
    /// A FROM item names SQLite's internal tables (`sqlite_master`, `sqlite_%`, `pragma_%`).
    #[error("`{0}` is an internal SQLite object and may not be queried")]
    InternalTable(String),
    /// A function outside the allowlist of pure functions was called.
    #[error("the function `{0}` is not allowed (only pure functions on the allowlist are)")]
    FunctionNotAllowed(String),
    /// A tenant filter is configured and the query reads a table that cannot be filtered.
    #[error(
        "`{table}` has no `{column}` column to restrict it to your tenant and is not a shared table"
    )]
    NotTenantScoped {
        /// The table or view as named in the schema.
        table: String,
        /// The configured tenant column.
        column: String,
    },
    /// A syntax form that is valid SQL but outside what this tool runs.
    #[error("{0} is not supported")]
    Unsupported(String),
    /// The policy itself is unusable (for example a zero row limit).
    #[error("invalid SQL policy: {0}")]
    InvalidPolicy(String),
    /// The run exceeded the policy's time budget and was stopped.
    #[error("the query ran longer than {0:?} and was stopped")]
    Timeout(Duration),
    /// SQLite's authorizer refused an operation while preparing the statement.
    #[error("the database refused the query: {0}")]
    Denied(String),
    /// Any other SQLite error (no such column, type errors, a result value over the size cap…).
    #[error("the database reported an error: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

impl SqlError {
    /// True when the query was refused by policy (as opposed to failing while it ran): what the
    /// agent should report as "not allowed" rather than "went wrong".
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            SqlError::Empty
                | SqlError::TooLong { .. }
                | SqlError::MultipleStatements(_)
                | SqlError::NotAQuery(_)
                | SqlError::UnknownTable(_)
                | SqlError::InternalTable(_)
                | SqlError::FunctionNotAllowed(_)
                | SqlError::NotTenantScoped { .. }
                | SqlError::Unsupported(_)
                | SqlError::Denied(_)
        )
    }
}

/// The crate's result type.
pub type Result<T, E = SqlError> = std::result::Result<T, E>;
