//! The copilot's safe, read-only SQL tool: a question becomes SQL, the SQL becomes a checked
//! [`SafeQuery`], and the query becomes a small [`QueryResult`] that can be cited as evidence.
//!
//! * [`introspect`] → [`Schema`]: tables, views, columns, row counts and sample values of a
//!   SQLite file (opened read-only); [`Schema::prompt_text`] describes it for an LLM prompt.
//! * [`validate`]: exactly one SELECT-style query over tables of the schema, only allowlisted
//!   functions ([`ALLOWED_FUNCTIONS`]), a LIMIT forced to the [`Policy`]'s, and — with a
//!   [`TenantFilter`] — every tenant table rewritten into a subquery filtered on the caller's
//!   tenant (bound as a parameter). The result is the exact SQL that will run.
//! * [`execute`]: runs a [`SafeQuery`] on a read-only, hardened connection with SQLite's
//!   authorizer as a second gate, a deadline, and caps on rows and result bytes.
//! * [`show_ranking_measure`]: a ranking statement also selects the measure it ranks by;
//!   [`translate_date_functions`]: MySQL's `YEAR(d)`/`MONTH(d)`/`DAY(d)` in SQLite's words;
//!   [`count_every_group`]: a count per entity over an inner join keeps the entities with none;
//!   [`split_fused_names`]: `PlaylistPlaylistId` is `Playlist.PlaylistId`;
//!   [`name_the_listed_rows`]: a listing over a join shows which row each line belongs to;
//!   [`mend_join_conditions`]: `ON a.x = a.x` meant the joined table's `x`;
//!   [`mend_column_references`]: `T1.Name` meant the one joined table that has `Name`;
//!   [`show_filter_measure`]: a `HAVING` test's aggregate is shown beside the groups;
//!   [`show_the_unpinned_column`]: a listed column the filter pins to one value gives way;
//!   [`name_the_group_keys`]: groups by a foreign key show the referenced row's name;
//!   [`join_name_parts`]: first and last name selected side by side become one name;
//!   [`convert_duration_units`]: "5 minutes" against a `Milliseconds` column is 300000.
//! * [`template_sql`]: simple English/Chinese questions without an LLM (count, list, sum,
//!   average, one filter), `None` when unsure.
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
mod fanout;
mod functions;
mod glossary;
mod joins;
mod policy;
mod rewrite;
mod schema;
mod sold;
mod template;
mod units;
mod validate;
mod value;
mod values;

pub use compare::{TOLERANCE, results_match, results_match_any_column_order};
pub use error::{Result, SqlError};
pub use execute::execute;
pub use fanout::{RepeatedSum, repeated_sum};
pub use functions::{ALLOWED_FUNCTIONS, is_allowed_function};
pub use joins::{drop_imagined_lookups, mend_crossed_keys, rejoin_by_foreign_keys};
pub use policy::{
    DEFAULT_LIMIT, DEFAULT_MAX_RESULT_BYTES, DEFAULT_TIMEOUT, Param, Policy, TenantFilter,
};
pub use rewrite::{
    compare_with_every_match, count_every_group, group_by_row_key, group_the_ranked_rows,
    join_name_parts, mend_column_references, mend_join_conditions, name_the_group_keys,
    name_the_listed_rows, show_filter_measure, show_ranking_measure, show_the_named_name,
    show_the_unpinned_column, split_fused_names, translate_date_functions,
};
pub use schema::{ColumnInfo, ForeignKey, Schema, TableInfo, TableKind, introspect};
pub use sold::count_units_sold;
pub use template::template_sql;
pub use units::convert_duration_units;
pub use validate::{SafeQuery, validate};
pub use value::{MAX_TEXT_BYTES, QueryResult, Value};
pub use values::{LOOKUP_BUDGET, MAX_PHRASES, MAX_ROWS_SEARCHED, NamedValue, values_named};
