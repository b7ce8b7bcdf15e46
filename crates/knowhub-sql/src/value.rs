//! Result values and the result set: small, serialisable, and printable as evidence.
//!
//! Blobs are never returned, only their size: the copilot cites rows to people, and raw bytes
//! are neither readable nor safe to paste into a prompt.

use std::fmt;
use std::time::Duration;

use rusqlite::types::ValueRef;
use serde::{Deserialize, Serialize};

/// Longest text value kept in a result, in bytes; longer ones are cut at a character boundary
/// and end with `…`.
pub const MAX_TEXT_BYTES: usize = 8 * 1024;

/// One result cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A 64-bit integer.
    Integer(i64),
    /// A floating-point number.
    Real(f64),
    /// Text (cut to [`MAX_TEXT_BYTES`]).
    Text(String),
    /// A blob, summarised by its size.
    Blob {
        /// Size of the blob in bytes.
        blob_bytes: usize,
    },
}

impl Value {
    /// Converts a SQLite value, cutting long text.
    pub(crate) fn from_sqlite(v: ValueRef<'_>) -> Value {
        match v {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(i) => Value::Integer(i),
            ValueRef::Real(r) => Value::Real(r),
            ValueRef::Text(t) => Value::Text(cut(&String::from_utf8_lossy(t), MAX_TEXT_BYTES)),
            ValueRef::Blob(b) => Value::Blob {
                blob_bytes: b.len(),
            },
        }
    }

    /// Approximate size counted against the policy's result cap.
    pub(crate) fn size(&self) -> usize {
        match self {
            Value::Null => 1,
            Value::Integer(_) | Value::Real(_) => 8,
            Value::Text(s) => s.len(),
            Value::Blob { .. } => 16,
        }
    }

    /// The value as a number, when it is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Integer(i) => Some(*i as f64),
            Value::Real(r) => Some(*r),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Integer(i) => write!(f, "{i}"),
            Value::Real(r) => write!(f, "{r}"),
            Value::Text(s) => f.write_str(s),
            Value::Blob { blob_bytes } => write!(f, "<blob {blob_bytes} bytes>"),
        }
    }
}

/// Cuts `s` to at most `max` bytes at a character boundary, marking the cut with `…`.
pub(crate) fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The rows a query returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryResult {
    /// Column names as SQLite reports them.
    pub columns: Vec<String>,
    /// The rows, each as long as `columns`.
    pub rows: Vec<Vec<Value>>,
    /// True when the policy cut the result: the result size cap was reached, or the LIMIT that
    /// validation forced was reached (so more rows may exist).
    pub truncated: bool,
    /// Time spent preparing and running the query.
    pub elapsed: Duration,
}

impl QueryResult {
    /// A short text of the first `max_rows` rows for evidence: one `col=val, …` line per row,
    /// each value cut to 80 characters, then a line saying what was left out.
    pub fn preview(&self, max_rows: usize) -> String {
        let mut out = String::new();
        for row in self.rows.iter().take(max_rows) {
            let cells: Vec<String> = self
                .columns
                .iter()
                .zip(row)
                .map(|(c, v)| format!("{c}={}", cut_chars(&v.to_string(), 80)))
                .collect();
            out.push_str(&cells.join(", "));
            out.push('\n');
        }
        if self.rows.is_empty() {
            out.push_str("(no rows)\n");
        } else if self.rows.len() > max_rows {
            out.push_str(&format!(
                "… {} more row(s) not shown\n",
                self.rows.len() - max_rows
            ));
        }
        if self.truncated {
            out.push_str(&format!(
                "(result cut at {} row(s) by the query policy; more rows may exist)\n",
                self.rows.len()
            ));
        }
        out
    }
}

fn cut_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_respects_char_boundaries() {
        for (input, max, want) in [
            ("abc", 5, "abc"),
            ("abcdef", 3, "abc…"),
            ("客户名单", 4, "客…"),
            ("客户名单", 6, "客户…"),
            ("", 0, ""),
        ] {
            assert_eq!(cut(input, max), want, "{input} {max}");
        }
    }

    #[test]
    fn preview_lists_rows_and_notes() {
        let r = QueryResult {
            columns: vec!["id".into(), "name".into(), "data".into()],
            rows: vec![
                vec![
                    Value::Integer(1),
                    Value::Text("巴西".into()),
                    Value::Blob { blob_bytes: 3 },
                ],
                vec![Value::Integer(2), Value::Null, Value::Real(1.5)],
            ],
            truncated: true,
            elapsed: Duration::ZERO,
        };
        let p = r.preview(1);
        assert_eq!(
            p,
            "id=1, name=巴西, data=<blob 3 bytes>\n… 1 more row(s) not shown\n\
             (result cut at 2 row(s) by the query policy; more rows may exist)\n"
        );
        let empty = QueryResult {
            rows: vec![],
            truncated: false,
            ..r
        };
        assert_eq!(empty.preview(5), "(no rows)\n");
    }

    #[test]
    fn values_serialise_compactly() {
        let row = vec![
            Value::Null,
            Value::Integer(3),
            Value::Real(2.5),
            Value::Text("x".into()),
            Value::Blob { blob_bytes: 9 },
        ];
        let json = serde_json::to_string(&row).unwrap_or_default();
        assert_eq!(json, r#"[null,3,2.5,"x",{"blob_bytes":9}]"#);
        let back: Vec<Value> = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(back, row);
    }
}
