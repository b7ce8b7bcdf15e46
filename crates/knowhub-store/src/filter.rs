//! The WHERE-clause builder shared by the knowledge and resource queries, so the visibility
//! rule (`scopes` ∩ the reader's scopes, or the reader owns it) is written once; and the JSON
//! column helpers of both tables.

use std::collections::BTreeMap;

use rusqlite::types::Value;
use serde::{Deserialize, Serialize};

use crate::{Result, StoreError};

/// Clauses on one table alias joined by `AND`, with their positional parameters.
pub(crate) struct Where {
    alias: &'static str,
    clauses: Vec<String>,
    args: Vec<Value>,
}

fn json_list(v: &[String]) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "[]".into())
}

impl Where {
    pub(crate) fn new(alias: &'static str) -> Self {
        Where {
            alias,
            clauses: vec!["1".to_owned()],
            args: Vec::new(),
        }
    }

    /// Adds a parameter; returns its `?N` number.
    pub(crate) fn arg(&mut self, value: Value) -> usize {
        self.args.push(value);
        self.args.len()
    }

    pub(crate) fn clause(&mut self, sql: String) {
        self.clauses.push(sql);
    }

    /// Visible to `reader` = (visible scopes, user id): a scope in common, or owned by them.
    /// `None` (administrators): no restriction.
    pub(crate) fn readable_by(&mut self, reader: &Option<(Vec<String>, String)>) {
        if let Some((visible, me)) = reader {
            let a = self.alias;
            let scopes = self.arg(Value::Text(json_list(visible)));
            let owner = self.arg(Value::Text(me.clone()));
            self.clause(format!(
                "(EXISTS (SELECT 1 FROM json_each({a}.scopes) s WHERE s.value IN \
                   (SELECT value FROM json_each(?{scopes}))) OR {a}.owner = ?{owner})"
            ));
        }
    }

    /// The JSON array `column` holds at least one of `values` (no narrowing when empty).
    pub(crate) fn array_has_any(&mut self, column: &str, values: &[String]) {
        if values.is_empty() {
            return;
        }
        let a = self.alias;
        let n = self.arg(Value::Text(json_list(values)));
        self.clause(format!(
            "EXISTS (SELECT 1 FROM json_each({a}.{column}) x WHERE x.value IN \
               (SELECT value FROM json_each(?{n})))"
        ));
    }

    /// The scalar `column` is one of `values` (no narrowing when empty).
    pub(crate) fn column_in(&mut self, column: &str, values: &[String]) {
        if values.is_empty() {
            return;
        }
        let a = self.alias;
        let n = self.arg(Value::Text(json_list(values)));
        self.clause(format!(
            "{a}.{column} IN (SELECT value FROM json_each(?{n}))"
        ));
    }

    /// Every tag with exactly this value (the `tags` JSON object column).
    pub(crate) fn tags(&mut self, tags: &BTreeMap<String, String>) {
        for (key, value) in tags {
            let a = self.alias;
            let path = self.arg(Value::Text(format!("$.\"{}\"", key.replace('"', ""))));
            let v = self.arg(Value::Text(value.clone()));
            self.clause(format!("json_extract({a}.tags, ?{path}) = ?{v}"));
        }
    }

    pub(crate) fn owner(&mut self, owner: &Option<String>) {
        if let Some(owner) = owner {
            let a = self.alias;
            let n = self.arg(Value::Text(owner.clone()));
            self.clause(format!("{a}.owner = ?{n}"));
        }
    }

    pub(crate) fn finish(self) -> (String, Vec<Value>) {
        (self.clauses.join(" AND "), self.args)
    }
}

pub(crate) fn to_json<T: Serialize>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|e| StoreError::Corrupt(e.to_string()))
}

pub(crate) fn from_json<T: for<'de> Deserialize<'de>>(
    text: &str,
    idx: usize,
) -> rusqlite::Result<T> {
    serde_json::from_str(text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
    })
}
