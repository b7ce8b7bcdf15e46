//! Execution-accuracy comparison of two results, for text-to-SQL evaluation.
//!
//! Two results match when they hold the same rows as multisets of tuples: row order is
//! ignored (gold queries often leave it unspecified), column *names* are ignored (aliases
//! differ), column *positions* count, and numbers compare with a tolerance of 1e-6 (relative
//! for magnitudes above 1), an integer equal to a real (`3` = `3.0`). Text compares exactly,
//! NULL equals NULL, blobs compare by size. The `truncated` flags and timings are not compared:
//! evaluate with a policy whose limit is above the expected row counts.
//!
//! [`results_match_any_column_order`] also accepts the columns in another order, as the
//! test-suite execution accuracy of Spider does (Zhong, Yu and Klein, 2020): "name, count" for
//! "count, name" is the same answer.

use std::cmp::Ordering;

use crate::value::{QueryResult, Value};

/// Numeric tolerance.
pub const TOLERANCE: f64 = 1e-6;

/// Whether `got` holds the same rows as `expected`, in any order (see the module docs).
pub fn results_match(expected: &QueryResult, got: &QueryResult) -> bool {
    if expected.rows.len() != got.rows.len() {
        return false;
    }
    if expected.rows.is_empty() {
        return true;
    }
    let mut a: Vec<&Vec<Value>> = expected.rows.iter().collect();
    let mut b: Vec<&Vec<Value>> = got.rows.iter().collect();
    a.sort_by(|x, y| cmp_rows(x, y));
    b.sort_by(|x, y| cmp_rows(x, y));
    if a.iter().zip(&b).all(|(x, y)| rows_equal(x, y)) {
        return true;
    }
    // Sorting can pair rows differently when numbers differ within the tolerance; fall back to
    // an exact bipartite matching for results of modest size.
    a.len() <= 2_000 && perfect_matching(&a, &b)
}

/// Permutations of columns tried at most by [`results_match_any_column_order`].
const MAX_PERMUTATIONS: usize = 5_000;

/// [`results_match`], or the same after reordering `got`'s columns (same number of columns;
/// only orders whose every column holds the same values as the expected column it stands for
/// are tried).
pub fn results_match_any_column_order(expected: &QueryResult, got: &QueryResult) -> bool {
    if results_match(expected, got) {
        return true;
    }
    let width = expected.rows.first().map_or(0, Vec::len);
    if expected.rows.len() != got.rows.len()
        || width < 2
        || got
            .rows
            .iter()
            .chain(&expected.rows)
            .any(|r| r.len() != width)
    {
        return false;
    }
    fn column(rows: &[Vec<Value>], i: usize) -> Vec<&Value> {
        let mut c: Vec<&Value> = rows.iter().map(|r| &r[i]).collect();
        c.sort_by(|x, y| cmp_values(x, y));
        c
    }
    let same_values = |a: &[&Value], b: &[&Value]| a.iter().zip(b).all(|(x, y)| value_eq(x, y));
    let expected_cols: Vec<Vec<&Value>> = (0..width).map(|i| column(&expected.rows, i)).collect();
    let got_cols: Vec<Vec<&Value>> = (0..width).map(|i| column(&got.rows, i)).collect();
    // candidates[i]: columns of `got` that could stand for expected column i.
    let candidates: Vec<Vec<usize>> = expected_cols
        .iter()
        .map(|e| {
            (0..width)
                .filter(|&j| same_values(e, &got_cols[j]))
                .collect()
        })
        .collect();
    if candidates.iter().any(Vec::is_empty) {
        return false;
    }
    let mut order = Vec::with_capacity(width);
    let mut used = vec![false; width];
    let mut tried = 0;
    try_orders(
        expected,
        got,
        &candidates,
        &mut order,
        &mut used,
        &mut tried,
    )
}

fn try_orders(
    expected: &QueryResult,
    got: &QueryResult,
    candidates: &[Vec<usize>],
    order: &mut Vec<usize>,
    used: &mut [bool],
    tried: &mut usize,
) -> bool {
    if order.len() == candidates.len() {
        *tried += 1;
        let reordered = QueryResult {
            columns: order
                .iter()
                .map(|&j| got.columns.get(j).cloned().unwrap_or_default())
                .collect(),
            rows: got
                .rows
                .iter()
                .map(|r| order.iter().map(|&j| r[j].clone()).collect())
                .collect(),
            truncated: got.truncated,
            elapsed: got.elapsed,
        };
        return results_match(expected, &reordered);
    }
    for &j in &candidates[order.len()] {
        if used[j] || *tried >= MAX_PERMUTATIONS {
            continue;
        }
        used[j] = true;
        order.push(j);
        let found = try_orders(expected, got, candidates, order, used, tried);
        order.pop();
        used[j] = false;
        if found {
            return true;
        }
    }
    false
}

fn value_eq(x: &Value, y: &Value) -> bool {
    match (x.as_f64(), y.as_f64()) {
        (Some(p), Some(q)) => (p - q).abs() <= TOLERANCE * p.abs().max(q.abs()).max(1.0),
        _ => match (x, y) {
            (Value::Null, Value::Null) => true,
            (Value::Text(p), Value::Text(q)) => p == q,
            (Value::Blob { blob_bytes: p }, Value::Blob { blob_bytes: q }) => p == q,
            _ => false,
        },
    }
}

fn rows_equal(x: &[Value], y: &[Value]) -> bool {
    x.len() == y.len() && x.iter().zip(y).all(|(p, q)| value_eq(p, q))
}

fn rank(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Integer(_) | Value::Real(_) => 1,
        Value::Text(_) => 2,
        Value::Blob { .. } => 3,
    }
}

fn cmp_values(x: &Value, y: &Value) -> Ordering {
    rank(x).cmp(&rank(y)).then_with(|| match (x, y) {
        (Value::Text(p), Value::Text(q)) => p.cmp(q),
        (Value::Blob { blob_bytes: p }, Value::Blob { blob_bytes: q }) => p.cmp(q),
        _ => match (x.as_f64(), y.as_f64()) {
            (Some(p), Some(q)) => p.total_cmp(&q),
            _ => Ordering::Equal,
        },
    })
}

fn cmp_rows(x: &[Value], y: &[Value]) -> Ordering {
    x.iter()
        .zip(y)
        .map(|(p, q)| cmp_values(p, q))
        .find(|o| o.is_ne())
        .unwrap_or_else(|| x.len().cmp(&y.len()))
}

/// Kuhn's augmenting-path matching: is there a pairing of every row of `a` with an equal,
/// distinct row of `b`?
fn perfect_matching(a: &[&Vec<Value>], b: &[&Vec<Value>]) -> bool {
    let n = a.len();
    let adj: Vec<Vec<usize>> = a
        .iter()
        .map(|x| (0..n).filter(|&j| rows_equal(x, b[j])).collect())
        .collect();
    if adj.iter().any(Vec::is_empty) {
        return false;
    }
    let mut owner: Vec<Option<usize>> = vec![None; n];
    for i in 0..n {
        let mut seen = vec![false; n];
        if !augment(i, &adj, &mut owner, &mut seen) {
            return false;
        }
    }
    true
}

fn augment(i: usize, adj: &[Vec<usize>], owner: &mut [Option<usize>], seen: &mut [bool]) -> bool {
    for &j in &adj[i] {
        if seen[j] {
            continue;
        }
        seen[j] = true;
        let free = match owner[j] {
            None => true,
            Some(k) => augment(k, adj, owner, seen),
        };
        if free {
            owner[j] = Some(i);
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use Value::{Integer as I, Null, Real as R, Text as T};

    fn result(columns: &[&str], rows: Vec<Vec<Value>>) -> QueryResult {
        QueryResult {
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            rows,
            truncated: false,
            elapsed: Duration::ZERO,
        }
    }

    #[test]
    fn table_of_cases() {
        let t = |s: &str| T(s.to_owned());
        type Rows = Vec<Vec<Value>>;
        let cases: Vec<(&str, Rows, Rows, bool)> = vec![
            (
                "identical",
                vec![vec![I(1), t("a")]],
                vec![vec![I(1), t("a")]],
                true,
            ),
            (
                "order ignored",
                vec![vec![I(1)], vec![I(2)], vec![I(2)]],
                vec![vec![I(2)], vec![I(1)], vec![I(2)]],
                true,
            ),
            (
                "multiplicity counts",
                vec![vec![I(1)], vec![I(2)], vec![I(2)]],
                vec![vec![I(1)], vec![I(1)], vec![I(2)]],
                false,
            ),
            (
                "int equals real",
                vec![vec![I(3)]],
                vec![vec![R(3.0)]],
                true,
            ),
            (
                "within tolerance",
                vec![vec![R(0.1 + 0.2)]],
                vec![vec![R(0.3)]],
                true,
            ),
            (
                "large relative",
                vec![vec![R(2_328.600_000_1)]],
                vec![vec![R(2_328.6)]],
                true,
            ),
            (
                "outside tolerance",
                vec![vec![R(1.0)]],
                vec![vec![R(1.001)]],
                false,
            ),
            (
                "text vs number",
                vec![vec![t("3")]],
                vec![vec![I(3)]],
                false,
            ),
            ("null equals null", vec![vec![Null]], vec![vec![Null]], true),
            ("null vs zero", vec![vec![Null]], vec![vec![I(0)]], false),
            ("row count differs", vec![vec![I(1)]], vec![], false),
            (
                "arity differs",
                vec![vec![I(1), I(2)]],
                vec![vec![I(1)]],
                false,
            ),
            ("both empty", vec![], vec![], true),
            (
                "column order counts",
                vec![vec![I(1), t("a")]],
                vec![vec![t("a"), I(1)]],
                false,
            ),
            (
                "tolerance across sort order",
                vec![vec![R(1.000_000_01), t("b")], vec![R(1.0), t("a")]],
                vec![vec![R(1.0), t("b")], vec![R(1.000_000_01), t("a")]],
                true,
            ),
        ];
        for (name, a, b, want) in cases {
            let a = result(&["x", "y"], a);
            let b = result(&["other", "names"], b);
            assert_eq!(results_match(&a, &b), want, "{name}");
            assert_eq!(results_match(&b, &a), want, "{name} (swapped)");
            let any_order = want || name == "column order counts";
            assert_eq!(results_match_any_column_order(&a, &b), any_order, "{name}");
            assert_eq!(
                results_match_any_column_order(&b, &a),
                any_order,
                "{name} (swapped)"
            );
        }
    }

    #[test]
    fn columns_in_another_order() {
        let t = |s: &str| T(s.to_owned());
        type Rows = Vec<Vec<Value>>;
        let cases: Vec<(&str, Rows, Rows, bool)> = vec![
            (
                "name and count swapped",
                vec![vec![t("Rock"), I(3)], vec![t("Jazz"), I(1)]],
                vec![vec![I(1), t("Jazz")], vec![I(3), t("Rock")]],
                true,
            ),
            (
                "each column right, rows paired differently",
                vec![vec![t("Rock"), I(3)], vec![t("Jazz"), I(1)]],
                vec![vec![I(3), t("Jazz")], vec![I(1), t("Rock")]],
                false,
            ),
            (
                "two columns with the same values",
                vec![vec![I(1), I(1), t("a")], vec![I(2), I(2), t("b")]],
                vec![vec![t("b"), I(2), I(2)], vec![t("a"), I(1), I(1)]],
                true,
            ),
            (
                "a column more",
                vec![vec![t("Rock")]],
                vec![vec![I(3), t("Rock")]],
                false,
            ),
        ];
        for (name, a, b, want) in cases {
            let a = result(&["x", "y", "z"], a);
            let b = result(&["p", "q", "r"], b);
            assert_eq!(results_match_any_column_order(&a, &b), want, "{name}");
            assert_eq!(
                results_match_any_column_order(&b, &a),
                want,
                "{name} (swapped)"
            );
        }
    }
}
