//! The copilot's safe, read-only SQL core: what a statement may read, how it runs, and how
//! two results compare. It holds no knowledge of questions or wording: turning a question into
//! SQL (prompts, templates, repairs) is `knowhub-sqlgen`'s job, and whatever that crate (or a
//! model, or a person) writes passes through here before it touches a database.
//!
//! * [`introspect`] → [`Schema`]: tables, views, columns, keys, row counts and sample values
//!   of a SQLite file (opened read-only).
//! * [`validate`]: exactly one SELECT-style query over tables of the schema, only allowlisted
//!   functions ([`ALLOWED_FUNCTIONS`]), a LIMIT forced to the [`Policy`]'s, and — with a
//!   [`TenantFilter`] — every tenant table rewritten into a subquery filtered on the caller's
//!   tenant (bound as a parameter). The result is the exact SQL that will run.
//! * [`execute`]: runs a [`SafeQuery`] on a read-only, hardened connection with SQLite's
//!   authorizer as a second gate, a deadline, and caps on rows and result bytes.
//! * [`results_match`], [`results_match_any_column_order`]: order-insensitive result comparison
//!   for execution-accuracy evaluation.
//!
//! Nothing here can change the database: the file is opened read-only and `query_only`, the
//! validator refuses every non-query, and the authorizer denies every write, pragma and attach
//! that would somehow reach SQLite.
//!
//! ```
//! use knowhub_sql::{Policy, TenantFilter, Value, execute, introspect, validate};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("shop.sqlite");
//! # rusqlite::Connection::open(&path)?.execute_batch(
//! #     "CREATE TABLE orders (id INTEGER, tenant TEXT, total REAL);
//! #      INSERT INTO orders VALUES (1, 'acme', 10.0), (2, 'acme', 5.5), (3, 'globex', 99.0);",
//! # )?;
//! let schema = introspect(&path, 3)?;
//! let policy = Policy::for_tenant(TenantFilter::new("tenant", "acme"));
//!
//! // Even an attempt to read another tenant's rows only sees the caller's.
//! let query = validate(
//!     "SELECT sum(total) FROM orders WHERE 1 = 1 OR tenant = 'globex'",
//!     &schema,
//!     &policy,
//! )?;
//! assert_eq!(
//!     query.sql(),
//!     "SELECT sum(total) FROM (SELECT * FROM \"orders\" WHERE \"tenant\" = ?1) AS orders \
//!      WHERE 1 = 1 OR tenant = 'globex' LIMIT 50"
//! );
//! let result = execute(&path, &query, &policy)?;
//! assert_eq!(result.rows, vec![vec![Value::Real(15.5)]]);
//!
//! // Anything but one read-only query is refused with a reason.
//! let err = validate("SELECT 1; DROP TABLE orders", &schema, &policy).unwrap_err();
//! assert_eq!(err.to_string(), "only one statement is allowed, but the text contains 2");
//! # Ok(())
//! # }
//! ```

mod compare;
mod conn;
mod error;
mod execute;
mod functions;
mod policy;
mod schema;
mod validate;
mod value;

pub use compare::{TOLERANCE, results_match, results_match_any_column_order};
pub use conn::quote_ident;
pub use error::{Result, SqlError};
pub use execute::execute;
pub use functions::{AGGREGATES, ALLOWED_FUNCTIONS, is_aggregate, is_allowed_function};
pub use policy::{
    DEFAULT_LIMIT, DEFAULT_MAX_RESULT_BYTES, DEFAULT_TIMEOUT, Param, Policy, TenantFilter,
};
pub use schema::{ColumnInfo, ForeignKey, Schema, TableInfo, TableKind, introspect};
pub use validate::{SafeQuery, changes_data, validate};
pub use value::{MAX_TEXT_BYTES, QueryResult, Value};
