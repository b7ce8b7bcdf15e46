//! Durations in the unit a column's name states. Asked for "tracks longer than 5 minutes"
//! against `Milliseconds`, small models write `Milliseconds > 50000` or `> 500000` even when
//! the prompt says "1 minute = 60000": the question gives the quantity and the column's name
//! gives the unit, so code converts, not the model.

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, SelectItem, SetExpr,
    Statement, Value, visit_expressions_mut,
};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

/// A unit of time, as a number of milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum TimeUnit {
    Millisecond,
    Second,
    Minute,
    Hour,
}

impl TimeUnit {
    pub(crate) fn millis(self) -> f64 {
        match self {
            TimeUnit::Millisecond => 1.0,
            TimeUnit::Second => 1_000.0,
            TimeUnit::Minute => 60_000.0,
            TimeUnit::Hour => 3_600_000.0,
        }
    }

    /// The unit a question's word names (English or Chinese).
    pub(crate) fn of_word(word: &str) -> Option<TimeUnit> {
        Some(match word {
            "ms" | "millisecond" | "milliseconds" | "毫秒" => TimeUnit::Millisecond,
            "s" | "sec" | "secs" | "second" | "seconds" | "秒" | "秒钟" => TimeUnit::Second,
            "min" | "mins" | "minute" | "minutes" | "分钟" => TimeUnit::Minute,
            "h" | "hr" | "hrs" | "hour" | "hours" | "小时" => TimeUnit::Hour,
            _ => return None,
        })
    }

    /// The unit a column's name states: `Milliseconds`, `duration_ms`, `LengthSeconds`.
    pub(crate) fn of_column(name: &str) -> Option<TimeUnit> {
        let lower = name.to_ascii_lowercase();
        let ends = |suffixes: &[&str]| suffixes.iter().any(|s| lower.ends_with(s));
        if ends(&["milliseconds", "millis", "_ms"]) || name.ends_with("Ms") {
            Some(TimeUnit::Millisecond)
        } else if ends(&["seconds", "_secs", "_sec"]) {
            Some(TimeUnit::Second)
        } else if ends(&["minutes", "_mins", "_min"]) {
            Some(TimeUnit::Minute)
        } else if ends(&["hours", "_hrs"]) {
            Some(TimeUnit::Hour)
        } else {
            None
        }
    }
}

/// What a question says about durations: the quantities it gives ("5 minutes", "3分钟") and
/// the unit it wants answers in ("in minutes", "多少分钟").
#[derive(Debug, Default, PartialEq)]
struct Asked {
    quantities: Vec<(f64, TimeUnit)>,
    answer_unit: Option<TimeUnit>,
}

fn asked(question: &str) -> Asked {
    let lower = question.to_lowercase();
    // Split into numbers, words and single CJK characters' runs, keeping their order.
    let mut tokens: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut kind = 0u8; // 1 number, 2 latin word, 3 CJK
    for c in lower.chars() {
        let k = if c.is_ascii_digit() || (c == '.' && kind == 1) {
            1
        } else if c.is_alphabetic() && c.is_ascii() {
            2
        } else if c.is_alphabetic() {
            3
        } else {
            0
        };
        if k != kind && !current.is_empty() {
            tokens.push(std::mem::take(&mut current));
        }
        kind = k;
        if k != 0 {
            current.push(c);
        }
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    let mut out = Asked::default();
    for (i, token) in tokens.iter().enumerate() {
        let next = tokens.get(i + 1).map(String::as_str).unwrap_or("");
        if let Ok(n) = token.trim_end_matches('.').parse::<f64>() {
            let unit = TimeUnit::of_word(next).or_else(|| {
                // Chinese runs: "3分钟长" starts with the unit.
                ["毫秒", "秒钟", "秒", "分钟", "小时"]
                    .iter()
                    .find(|u| next.starts_with(*u))
                    .and_then(|u| TimeUnit::of_word(u))
            });
            if let Some(unit) = unit {
                out.quantities.push((n, unit));
            }
        } else if token == "in"
            && let Some(unit) = TimeUnit::of_word(next)
            && next.ends_with('s')
        {
            out.answer_unit = Some(unit);
        } else if !token.is_ascii() {
            for (word, unit) in [("多少分钟", TimeUnit::Minute), ("多少秒", TimeUnit::Second)]
            {
                if token.contains(word) || token.contains(&format!("以{}", &word[6..])) {
                    out.answer_unit = Some(unit);
                }
            }
        }
    }
    out
}

/// The unit column `e` reads: the column itself, one aggregate of it (`SUM(Milliseconds)`),
/// either cast to a number, or either divided by a count (`CAST(SUM(Milliseconds) AS REAL) /
/// COUNT(TrackId)`, an average written out: a duration per item is still a duration).
fn unit_column(e: &Expr) -> Option<TimeUnit> {
    match e {
        Expr::Identifier(id) => TimeUnit::of_column(&id.value),
        Expr::CompoundIdentifier(parts) => TimeUnit::of_column(&parts.last()?.value),
        Expr::Nested(inner) => unit_column(inner),
        Expr::Cast {
            expr, data_type, ..
        } => {
            let target = data_type.to_string().to_ascii_uppercase();
            ["REAL", "FLOAT", "DOUBLE", "NUMERIC", "DECIMAL", "INT"]
                .iter()
                .any(|t| target.starts_with(t))
                .then(|| unit_column(expr))
                .flatten()
        }
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Divide,
            right,
        } if is_count(right) => unit_column(left),
        Expr::Function(f) => {
            let name = f.name.to_string().to_ascii_lowercase();
            if !matches!(name.as_str(), "sum" | "avg" | "min" | "max") {
                return None;
            }
            let FunctionArguments::List(list) = &f.args else {
                return None;
            };
            match list.args.as_slice() {
                [FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))] => unit_column(arg),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether `e` is a `COUNT(…)` call: a number of items, without a unit.
fn is_count(e: &Expr) -> bool {
    match e {
        Expr::Nested(inner) => is_count(inner),
        Expr::Function(f) => f.name.to_string().eq_ignore_ascii_case("count"),
        _ => false,
    }
}

fn number(e: &Expr) -> Option<f64> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

fn number_expr(n: f64) -> Expr {
    let text = if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    };
    Expr::Value(Value::Number(text, false).into())
}

fn is_comparison(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Gt
            | BinaryOperator::GtEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Eq
            | BinaryOperator::NotEq
    )
}

/// `sql` with the durations the question gives compared in the unit the compared column's
/// name states, and answers asked "in minutes" shown in minutes.
///
/// A comparison of a duration column (or its `SUM`/`AVG`/`MIN`/`MAX`) with a number takes the
/// question's quantity converted to the column's unit, when the question gives exactly as many
/// durations as the statement compares (in order). A selected duration column, its aggregate,
/// or either divided by a number, is shown in the unit the question asks for ("in minutes",
/// "多少分钟"). `None` when nothing changes or the text does not parse.
///
/// ```
/// use knowhub_sql::convert_duration_units;
/// assert_eq!(
///     convert_duration_units(
///         "SELECT * FROM Track WHERE Milliseconds > 50000",
///         "Find all tracks longer than 5 minutes."
///     )
///     .as_deref(),
///     Some("SELECT * FROM Track WHERE Milliseconds > 300000")
/// );
/// assert_eq!(
///     convert_duration_units(
///         "SELECT AVG(Milliseconds) / 1000 AS Length FROM Track",
///         "What is the average track length in minutes?"
///     )
///     .as_deref(),
///     Some("SELECT AVG(Milliseconds) / 60000.0 AS Length FROM Track")
/// );
/// ```
pub fn convert_duration_units(sql: &str, question: &str) -> Option<String> {
    let asked = asked(question);
    if asked.quantities.is_empty() && asked.answer_unit.is_none() {
        return None;
    }
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    if statements.len() != 1 {
        return None;
    }
    let mut changed = false;
    // Comparisons, in the order they are written.
    if !asked.quantities.is_empty() {
        let mut compared = 0usize;
        let _ = visit_expressions_mut(&mut statements, |e| {
            if let Expr::BinaryOp { left, op, right } = e
                && is_comparison(op)
            {
                let (column, literal) = if number(right).is_some() {
                    (left.as_ref(), right.as_mut())
                } else if number(left).is_some() {
                    (right.as_ref(), left.as_mut())
                } else {
                    return ControlFlow::<()>::Continue(());
                };
                if let Some(unit) = unit_column(column) {
                    if let Some(&(n, given)) = asked.quantities.get(compared) {
                        let want = n * given.millis() / unit.millis();
                        if number(literal) != Some(want) {
                            *literal = number_expr(want);
                            changed = true;
                        }
                    }
                    compared += 1;
                }
            }
            ControlFlow::Continue(())
        });
        if compared != asked.quantities.len() && changed {
            // Not one quantity per comparison: the pairing is a guess, so change nothing.
            return None;
        }
    }
    if let Some(want) = asked.answer_unit
        && let Statement::Query(query) = &mut statements[0]
        && let SetExpr::Select(select) = query.body.as_mut()
    {
        for item in &mut select.projection {
            let expr = match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
                _ => continue,
            };
            let (column, divisor) = match &*expr {
                Expr::BinaryOp {
                    left,
                    op: BinaryOperator::Divide,
                    right,
                } if number(right).is_some() => ((**left).clone(), number(right)),
                other => (other.clone(), None),
            };
            let Some(unit) = unit_column(&column) else {
                continue;
            };
            let factor = want.millis() / unit.millis();
            if divisor == Some(factor) || (divisor.is_none() && factor == 1.0) {
                continue;
            }
            let mut text = number_expr(factor).to_string();
            if !text.contains('.') {
                // A float, so SQLite does not divide integers (90000 / 60000 = 1).
                text.push_str(".0");
            }
            *expr = Expr::BinaryOp {
                left: Box::new(column),
                op: BinaryOperator::Divide,
                right: Box::new(Expr::Value(Value::Number(text, false).into())),
            };
            changed = true;
        }
    }
    changed.then(|| statements[0].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_give_durations_and_answer_units() {
        for (question, quantities, unit) in [
            (
                "Find all tracks longer than 5 minutes.",
                vec![(5.0, TimeUnit::Minute)],
                None,
            ),
            (
                "Tracks between 2.5 and 4 minutes",
                vec![(4.0, TimeUnit::Minute)],
                None,
            ),
            (
                "songs over 90 seconds, length in minutes",
                vec![(90.0, TimeUnit::Second)],
                Some(TimeUnit::Minute),
            ),
            ("超过3分钟的曲目", vec![(3.0, TimeUnit::Minute)], None),
            ("平均每首歌多少分钟？", vec![], Some(TimeUnit::Minute)),
            (
                "What is the average track length in minutes?",
                vec![],
                Some(TimeUnit::Minute),
            ),
            ("Show the 5 longest tracks", vec![], None),
            ("customers in Brazil", vec![], None),
        ] {
            let a = asked(question);
            assert_eq!(a.answer_unit, unit, "{question}");
            // "2.5 and 4 minutes": only the number before the unit word has a unit.
            assert_eq!(a.quantities, quantities, "{question}");
        }
    }

    #[test]
    fn durations_take_the_column_unit() {
        for (sql, question, expected) in [
            (
                "SELECT * FROM Track WHERE Milliseconds > 500000",
                "Find all tracks longer than 5 minutes.",
                Some("SELECT * FROM Track WHERE Milliseconds > 300000"),
            ),
            // Right already.
            (
                "SELECT * FROM Track WHERE t.Milliseconds > 300000",
                "Find all tracks longer than 5 minutes.",
                None,
            ),
            // The literal on the left; an aggregate in HAVING; a seconds column.
            (
                "SELECT p.Name FROM Playlist p JOIN Song s ON s.p = p.id GROUP BY p.id HAVING \
                 60 < SUM(s.length_seconds)",
                "Which playlists run over 2 hours?",
                Some(
                    "SELECT p.Name FROM Playlist p JOIN Song s ON s.p = p.id GROUP BY p.id \
                     HAVING 7200 < SUM(s.length_seconds)",
                ),
            ),
            // Chinese.
            (
                "SELECT Name FROM Track WHERE Milliseconds >= 3",
                "超过3分钟的曲目有哪些",
                Some("SELECT Name FROM Track WHERE Milliseconds >= 180000"),
            ),
            // A column without a unit in its name: left alone.
            (
                "SELECT * FROM Track WHERE Length > 5",
                "Find all tracks longer than 5 minutes.",
                None,
            ),
            // Two comparisons, one quantity: no guess.
            (
                "SELECT * FROM Track WHERE Milliseconds > 5 AND Milliseconds < 9",
                "tracks longer than 5 minutes",
                None,
            ),
            // Answers in the asked unit: a bare column, an aggregate, a wrong divisor.
            (
                "SELECT Name, Milliseconds FROM Track ORDER BY Milliseconds DESC LIMIT 3",
                "The 3 longest tracks, in minutes",
                Some(
                    "SELECT Name, Milliseconds / 60000.0 FROM Track ORDER BY Milliseconds DESC \
                     LIMIT 3",
                ),
            ),
            (
                "SELECT AVG(Milliseconds) AS avg_len FROM Track",
                "average track length in seconds",
                Some("SELECT AVG(Milliseconds) / 1000.0 AS avg_len FROM Track"),
            ),
            (
                "SELECT AVG(Milliseconds) / 60000.0 FROM Track",
                "average track length in minutes",
                None,
            ),
            // An average written out as a ratio of aggregates, shown and compared.
            (
                "SELECT CAST(SUM(T1.Milliseconds) AS REAL) / COUNT(T1.TrackId) FROM Track AS T1",
                "What is the average track length in minutes?",
                Some(
                    "SELECT CAST(SUM(T1.Milliseconds) AS REAL) / COUNT(T1.TrackId) / 60000.0 \
                     FROM Track AS T1",
                ),
            ),
            (
                "SELECT AlbumId FROM Track GROUP BY AlbumId HAVING SUM(Milliseconds) / \
                 COUNT(*) > 4",
                "albums whose tracks average more than 4 minutes",
                Some(
                    "SELECT AlbumId FROM Track GROUP BY AlbumId HAVING SUM(Milliseconds) / \
                     COUNT(*) > 240000",
                ),
            ),
            // A duration divided by something other than a count, or cast to text: no unit.
            (
                "SELECT SUM(Milliseconds) / SUM(Bytes) FROM Track",
                "speed in minutes",
                None,
            ),
            (
                "SELECT CAST(Milliseconds AS TEXT) FROM Track",
                "length in minutes",
                None,
            ),
            // No durations in the question.
            (
                "SELECT * FROM Track WHERE Milliseconds > 5",
                "tracks in the Rock genre",
                None,
            ),
            ("not sql", "longer than 5 minutes", None),
        ] {
            assert_eq!(
                convert_duration_units(sql, question).as_deref(),
                expected,
                "{sql} / {question}"
            );
        }
    }
}
