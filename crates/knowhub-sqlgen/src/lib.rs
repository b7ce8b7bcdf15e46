//! Question → SQL for the KnowHub copilot. Everything here proposes statements; nothing here
//! decides what may run: every statement goes through `knowhub_sql::validate` (one SELECT over
//! allow-listed tables and functions, tenant filter, forced LIMIT) and runs through
//! `knowhub_sql::execute` (read-only, deadline, caps).
//!
//! * [`nl2sql()`]: the whole path for one question: template first, else the model's
//!   statement, run as written, repaired only when it fails, retried with the error and a hint.
//! * [`template_sql`]: simple English/Chinese questions without a model (count, list, sum,
//!   average, groups, top N, a few filters), answered only when *every* word of the question is
//!   explained by the schema or the general word list (`data/words.toml`); `None` otherwise.
//! * [`SchemaPrompt`]: a schema as a model reads it (compact lines or SQLite DDL, fitted to a
//!   budget); [`sql_prompt`] the text-to-SQL prompt.
//! * [`REPAIRS`]: the named rules that make a failing statement run ([`repair()`] applies
//!   them and reports which fired); none touches a statement that ran.
//! * [`repeated_sum`]: the check that refuses a sum that counts a parent row once per child.
//! * [`values_named`]: which of a question's phrases are stored values (lookups under the
//!   caller's policy), shown to the model among the samples.
//!
//! ```
//! use knowhub_sql::{Policy, introspect};
//! use knowhub_sqlgen::nl2sql;
//! # let dir = tempfile::tempdir().unwrap();
//! # let db = dir.path().join("school.sqlite");
//! # rusqlite::Connection::open(&db).unwrap().execute_batch(
//! #     "CREATE TABLE course (course_id INTEGER PRIMARY KEY, title TEXT, credits INTEGER);
//! #      INSERT INTO course (title, credits) VALUES ('Algebra', 3), ('Poetry', 2);",
//! # ).unwrap();
//! let schema = introspect(&db, 3).unwrap();
//! // No model: the template answers a question it understands whole…
//! let out = nl2sql(None, &schema, &db, &Policy::default(), "How many courses are there?", 1, 6_000);
//! let answer = out.answer.unwrap();
//! assert_eq!(answer.by, "template");
//! assert_eq!(answer.result.rows[0][0], knowhub_sql::Value::Integer(2));
//! // …and says nothing about one it does not.
//! let out = nl2sql(None, &schema, &db, &Policy::default(), "Which course is the hardest?", 1, 6_000);
//! assert!(out.answer.is_none());
//! ```

mod fanout;
mod hint;
mod joins;
mod nl2sql;
mod prompt;
mod repair;
mod template;
mod text;
mod units;
mod values;
mod words;

pub use fanout::{RepeatedSum, repeated_sum};
pub use hint::{Hint, for_error};
pub use nl2sql::{
    Answer, Attempt, Feedback, Nl2Sql, extract_sql, nl2sql, sql_prompt, template_for,
};
pub use prompt::SchemaPrompt;
pub use repair::{REPAIRS, Repair, apply_repair, parse, repair};
pub use template::template_sql;
pub use text::questions;
pub use values::{LOOKUP_BUDGET, MAX_PHRASES, MAX_ROWS_SEARCHED, NamedValue, values_named};
