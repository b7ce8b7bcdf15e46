//! The allowlist of SQL functions a query may call.
//!
//! Only pure functions that compute over their arguments are listed: aggregates, window
//! functions, string/number/date helpers and JSON accessors. Everything that touches the outside
//! world or the engine is absent (so refused): `load_extension`, `readfile`, `writefile`, `edit`,
//! `fts3_tokenizer`, `zipfile`, `sqlar_*`, the `sqlite_*` introspection functions,
//! `changes`/`last_insert_rowid`, and the allocation helpers `randomblob`/`zeroblob` (a one-call
//! way to ask for a gigabyte). `random()` is allowed: it is harmless and "five random members"
//! is a fair question. The same list is enforced twice: by [`crate::validate`] on the parsed
//! query and by SQLite's authorizer in [`crate::execute`] (which also covers function calls
//! inside views).

/// Aggregate functions of SQLite, lower case.
pub const AGGREGATES: &[&str] = &["count", "sum", "avg", "min", "max", "total", "group_concat"];

/// Whether `name` (any case, unquoted) is one of [`AGGREGATES`].
pub fn is_aggregate(name: &str) -> bool {
    AGGREGATES.iter().any(|a| name.eq_ignore_ascii_case(a))
}

/// Function names that may be called, lower case, sorted.
pub const ALLOWED_FUNCTIONS: &[&str] = &[
    "->",
    "->>",
    "abs",
    "acos",
    "asin",
    "atan",
    "atan2",
    "avg",
    "ceil",
    "ceiling",
    "char",
    "coalesce",
    "concat",
    "concat_ws",
    "cos",
    "count",
    "cume_dist",
    "current_date",
    "current_time",
    "current_timestamp",
    "date",
    "datetime",
    "degrees",
    "dense_rank",
    "exp",
    "first_value",
    "floor",
    "format",
    "glob",
    "group_concat",
    "hex",
    "ifnull",
    "iif",
    "instr",
    "json",
    "json_array",
    "json_array_length",
    "json_extract",
    "json_group_array",
    "json_group_object",
    "json_object",
    "json_quote",
    "json_type",
    "json_valid",
    "julianday",
    "lag",
    "last_value",
    "lead",
    "length",
    "like",
    "likelihood",
    "likely",
    "ln",
    "log",
    "log10",
    "log2",
    "lower",
    "ltrim",
    "max",
    "min",
    "mod",
    "nth_value",
    "ntile",
    "nullif",
    "octet_length",
    "percent_rank",
    "pi",
    "pow",
    "power",
    "printf",
    "quote",
    "radians",
    "random",
    "rank",
    "replace",
    "round",
    "row_number",
    "rtrim",
    "sign",
    "sin",
    "sqrt",
    "strftime",
    "string_agg",
    "substr",
    "substring",
    "sum",
    "tan",
    "time",
    "timediff",
    "total",
    "trim",
    "trunc",
    "typeof",
    "unhex",
    "unicode",
    "unixepoch",
    "unlikely",
    "upper",
];

/// Whether `name` (any case) may be called.
pub fn is_allowed_function(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ALLOWED_FUNCTIONS.binary_search(&lower.as_str()).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_is_sorted_and_unique() {
        assert!(ALLOWED_FUNCTIONS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn allowlist_decisions() {
        for (name, allowed) in [
            ("count", true),
            ("COUNT", true),
            ("Group_Concat", true),
            ("strftime", true),
            ("random", true),
            ("load_extension", false),
            ("readfile", false),
            ("writefile", false),
            ("edit", false),
            ("fts3_tokenizer", false),
            ("zipfile", false),
            ("sqlar_uncompress", false),
            ("randomblob", false),
            ("zeroblob", false),
            ("sqlite_version", false),
            ("last_insert_rowid", false),
            ("", false),
        ] {
            assert_eq!(is_allowed_function(name), allowed, "{name}");
        }
    }
}
