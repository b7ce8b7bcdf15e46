//! Rewrites of a model's statement that make its answer say more, never less. They run before
//! [`crate::validate`], which checks the result like any other statement.

use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, OrderByKind, Query,
    SelectItem, SetExpr, Statement, Visit, VisitMut, Visitor, VisitorMut,
};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

/// Aggregate functions of SQLite.
const AGGREGATES: &[&str] = &["count", "sum", "avg", "min", "max", "total", "group_concat"];

/// The measure a ranking is by, shown beside the answer: `SELECT name FROM genre … ORDER BY
/// COUNT(*) DESC LIMIT 1` answers "which genre has the most tracks?" with a name and hides the
/// count that makes it the most, so the copilot could not say "Rock, with 1,297 tracks". The
/// first ORDER BY expression is added to the selected columns when it is not shown yet and
/// the statement ranks: it orders by an aggregate, or keeps the top rows (LIMIT).
///
/// Left alone (`None`): anything but one plain SELECT, `SELECT DISTINCT` (a new column would
/// change which rows are distinct), an order by a shown column, alias or position, a plain
/// column of a grouped query (it has no single value per group), an aggregate order of a
/// statement that is not grouped or aggregated (adding it would collapse the rows to one), and
/// `SELECT *` ordered by a plain column (it is shown already).
///
/// ```
/// use knowhub_sql::show_ranking_measure;
/// assert_eq!(
///     show_ranking_measure(
///         "SELECT g.Name FROM Genre g JOIN Track t ON t.GenreId = g.GenreId \
///          GROUP BY g.GenreId ORDER BY COUNT(*) DESC LIMIT 1"
///     )
///     .as_deref(),
///     Some(
///         "SELECT g.Name, COUNT(*) FROM Genre g JOIN Track t ON t.GenreId = g.GenreId \
///          GROUP BY g.GenreId ORDER BY COUNT(*) DESC LIMIT 1"
///     )
/// );
/// assert_eq!(show_ranking_measure("SELECT Name FROM Track ORDER BY Name"), None);
/// ```
pub fn show_ranking_measure(sql: &str) -> Option<String> {
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    if statements.len() != 1 {
        return None;
    }
    let Statement::Query(query) = &mut statements[0] else {
        return None;
    };
    let limited = query.limit_clause.is_some();
    let order = match &query.order_by.as_ref()?.kind {
        OrderByKind::Expressions(exprs) => exprs.first()?.expr.clone(),
        OrderByKind::All(_) => return None,
    };
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    if select.distinct.is_some() || literal(&order) {
        return None;
    }
    let key = |e: &Expr| e.to_string().to_ascii_lowercase();
    let order_key = key(&order);
    let mut wildcard = false;
    let mut aggregated = false;
    for item in &select.projection {
        match item {
            SelectItem::UnnamedExpr(e) => {
                if key(e) == order_key {
                    return None;
                }
                aggregated |= has_aggregate(e);
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                if key(expr) == order_key || alias.value.to_ascii_lowercase() == order_key {
                    return None;
                }
                aggregated |= has_aggregate(expr);
            }
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => wildcard = true,
            // `expr AS (a, b)`: not SQLite; leave such a statement alone.
            SelectItem::ExprWithAliases { .. } => return None,
        }
    }
    let grouped = match &select.group_by {
        GroupByExpr::Expressions(exprs, _) => !exprs.is_empty(),
        GroupByExpr::All(_) => true,
    };
    let by_aggregate = has_aggregate(&order);
    let shows = if by_aggregate {
        grouped || aggregated
    } else {
        // A plain column: one value per row only outside grouping, and `*` shows it already.
        limited && !grouped && !aggregated && !wildcard
    };
    if !shows {
        return None;
    }
    select.projection.push(SelectItem::UnnamedExpr(order));
    Some(statements[0].to_string())
}

/// Date-part functions of other dialects in SQLite's words: `YEAR(d)`, `MONTH(d)`, `DAY(d)`
/// become `CAST(strftime('%Y', d) AS INTEGER)` and so on (integers, as those functions return,
/// so `YEAR(d) = 2012` keeps its meaning). Small models write MySQL's date functions and,
/// told they do not exist here, often write them again. `None` when there is nothing to
/// translate or the text does not parse.
///
/// ```
/// use knowhub_sql::translate_date_functions;
/// assert_eq!(
///     translate_date_functions("SELECT SUM(Total) FROM Invoice WHERE YEAR(InvoiceDate) = 2012")
///         .as_deref(),
///     Some(
///         "SELECT SUM(Total) FROM Invoice WHERE CAST(strftime('%Y', InvoiceDate) AS INTEGER) \
///          = 2012"
///     )
/// );
/// assert_eq!(translate_date_functions("SELECT strftime('%Y', d) FROM t"), None);
/// ```
pub fn translate_date_functions(sql: &str) -> Option<String> {
    struct Translate {
        changed: bool,
    }
    impl VisitorMut for Translate {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            let Expr::Function(f) = e else {
                return ControlFlow::Continue(());
            };
            let format = match f.name.to_string().to_ascii_uppercase().as_str() {
                "YEAR" => "%Y",
                "MONTH" => "%m",
                "DAY" | "DAYOFMONTH" => "%d",
                _ => return ControlFlow::Continue(()),
            };
            let FunctionArguments::List(list) = &f.args else {
                return ControlFlow::Continue(());
            };
            let [FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))] = list.args.as_slice() else {
                return ControlFlow::Continue(());
            };
            let Ok(translated) = Parser::new(&SQLiteDialect {})
                .try_with_sql(&format!("CAST(strftime('{format}', {arg}) AS INTEGER)"))
                .and_then(|mut p| p.parse_expr())
            else {
                return ControlFlow::Continue(());
            };
            *e = translated;
            self.changed = true;
            ControlFlow::Continue(())
        }
    }
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    let [statement] = statements.as_mut_slice() else {
        return None;
    };
    let mut translate = Translate { changed: false };
    let _ = statement.visit(&mut translate);
    translate.changed.then(|| statement.to_string())
}

/// An integer or other literal (`ORDER BY 2` orders by the second column: shown already).
fn literal(e: &Expr) -> bool {
    matches!(e, Expr::Value(_))
}

/// Whether `e` calls an aggregate function outside subqueries (a subquery's aggregate is one
/// value per row of the outer query).
fn has_aggregate(e: &Expr) -> bool {
    struct Finder {
        subqueries: usize,
    }
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.subqueries += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.subqueries -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if self.subqueries == 0
                && let Expr::Function(f) = e
                && let [name] = f.name.0.as_slice()
                && AGGREGATES
                    .iter()
                    .any(|a| name.to_string().trim_matches('"').eq_ignore_ascii_case(a))
            {
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    e.visit(&mut Finder { subqueries: 0 }).is_break()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rankings_show_their_measure() {
        for (sql, expected) in [
            // Which genre has the most tracks: the count beside the name.
            (
                "SELECT Genre.Name FROM Genre JOIN Track ON Genre.GenreId = Track.GenreId \
                 GROUP BY Genre.Name ORDER BY count(*) DESC LIMIT 1",
                Some(
                    "SELECT Genre.Name, count(*) FROM Genre JOIN Track ON Genre.GenreId = \
                     Track.GenreId GROUP BY Genre.Name ORDER BY count(*) DESC LIMIT 1",
                ),
            ),
            // Top rows by a plain column: the column beside them.
            (
                "SELECT Name FROM Track ORDER BY Milliseconds DESC LIMIT 10",
                Some("SELECT Name, Milliseconds FROM Track ORDER BY Milliseconds DESC LIMIT 10"),
            ),
            // An aggregate over a whole-table aggregate query.
            (
                "SELECT COUNT(*) FROM Invoice ORDER BY SUM(Total) DESC",
                Some("SELECT COUNT(*), SUM(Total) FROM Invoice ORDER BY SUM(Total) DESC"),
            ),
            // Shown already: by expression, alias (any case), position.
            (
                "SELECT Name, SUM(Total) FROM Invoice GROUP BY Name ORDER BY sum(total) DESC \
                 LIMIT 3",
                None,
            ),
            (
                "SELECT Name, COUNT(*) AS n FROM Track GROUP BY Name ORDER BY N DESC LIMIT 3",
                None,
            ),
            (
                "SELECT Name, COUNT(*) FROM Track GROUP BY Name ORDER BY 2 DESC",
                None,
            ),
            (
                "SELECT * FROM Track ORDER BY Milliseconds DESC LIMIT 5",
                None,
            ),
            // A listing in some order, not a ranking.
            ("SELECT Name FROM Track ORDER BY Milliseconds", None),
            // DISTINCT: a new column would change the rows.
            (
                "SELECT DISTINCT Country FROM Customer ORDER BY CustomerId LIMIT 3",
                None,
            ),
            // A plain column of a grouped query has no single value per group.
            (
                "SELECT Country, COUNT(*) FROM Customer GROUP BY Country ORDER BY City LIMIT 3",
                None,
            ),
            // An aggregate order on an ungrouped, unaggregated query would collapse its rows.
            ("SELECT Name FROM Track ORDER BY COUNT(*) LIMIT 3", None),
            // Not one plain SELECT.
            (
                "SELECT Name FROM Artist UNION SELECT Name FROM Genre ORDER BY 1 LIMIT 3",
                None,
            ),
            // An aggregate inside a subquery is one value per row.
            (
                "SELECT Name FROM Track ORDER BY (SELECT COUNT(*) FROM PlaylistTrack p WHERE \
                 p.TrackId = Track.TrackId) DESC LIMIT 3",
                Some(
                    "SELECT Name, (SELECT COUNT(*) FROM PlaylistTrack p WHERE p.TrackId = \
                     Track.TrackId) FROM Track ORDER BY (SELECT COUNT(*) FROM PlaylistTrack p \
                     WHERE p.TrackId = Track.TrackId) DESC LIMIT 3",
                ),
            ),
            ("SELECT 1; SELECT 2", None),
            ("not sql at all", None),
        ] {
            assert_eq!(show_ranking_measure(sql).as_deref(), expected, "{sql}");
        }
    }

    #[test]
    fn date_functions_of_other_dialects_are_translated() {
        for (sql, expected) in [
            (
                "SELECT MONTH(i.InvoiceDate) AS m, SUM(Total) FROM Invoice i WHERE \
                 year(i.InvoiceDate) = 2012 GROUP BY MONTH(i.InvoiceDate)",
                Some(
                    "SELECT CAST(strftime('%m', i.InvoiceDate) AS INTEGER) AS m, SUM(Total) FROM \
                     Invoice i WHERE CAST(strftime('%Y', i.InvoiceDate) AS INTEGER) = 2012 GROUP \
                     BY CAST(strftime('%m', i.InvoiceDate) AS INTEGER)",
                ),
            ),
            // Inside a subquery too.
            (
                "SELECT * FROM t WHERE id IN (SELECT id FROM u WHERE DAY(d) = 1)",
                Some(
                    "SELECT * FROM t WHERE id IN (SELECT id FROM u WHERE CAST(strftime('%d', d) \
                     AS INTEGER) = 1)",
                ),
            ),
            // Two arguments is not the date-part function.
            ("SELECT YEAR(a, b) FROM t", None),
            ("SELECT strftime('%Y', d) FROM t", None),
            ("SELECT YEAR(d) FROM t; SELECT 1", None),
            ("not sql", None),
        ] {
            assert_eq!(translate_date_functions(sql).as_deref(), expected, "{sql}");
        }
    }
}
