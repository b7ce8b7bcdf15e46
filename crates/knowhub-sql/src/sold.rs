//! How many were sold is a count of units, not of money. Asked for "the most purchased tracks"
//! or "the best selling artists", small models rank by `SUM(UnitPrice)` or `SUM(UnitPrice *
//! Quantity)`: that is revenue, and it ranks a $1.99 track bought once above a $0.99 track
//! bought twice. When the question asks for units and not for money, and the summed price
//! sits beside a quantity in the same row, the sum is of the quantity.

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident,
    visit_expressions_mut,
};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

use crate::rewrite::{Binding, bind_all, column_of, only_select};
use crate::schema::{Schema, TableInfo};
use crate::template::ident_words;

/// Words that ask how many were sold.
const UNIT_WORDS: &[&str] = &[
    "purchased",
    "bought",
    "sold",
    "selling",
    "sells",
    "销量",
    "卖出",
    "卖得",
    "购买次数",
    "购买最多",
    "买得最多",
];
/// Words that ask about money: with any of them, a sum of prices is what was asked.
const MONEY_WORDS: &[&str] = &[
    "revenue",
    "revenues",
    "money",
    "spent",
    "spend",
    "spending",
    "earned",
    "earn",
    "earnings",
    "income",
    "amount",
    "amounts",
    "value",
    "worth",
    "dollar",
    "dollars",
    "price",
    "prices",
    "cost",
    "costs",
    "paid",
    "pay",
    "sales",
    "total",
    "$",
    "€",
    "¥",
    "金额",
    "收入",
    "营收",
    "花费",
    "消费",
    "销售额",
    "营业额",
    "价格",
    "总价",
    "钱",
];

/// Whether `question` asks for units sold and not for money.
fn asks_for_units(question: &str) -> bool {
    let lower = question.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '$' | '€' | '¥')) || !c.is_ascii())
        .filter(|w| !w.is_empty())
        .collect();
    let has = |list: &[&str]| {
        list.iter().any(|w| {
            if w.is_ascii() && w.chars().all(char::is_alphanumeric) {
                words.contains(w)
            } else {
                lower.contains(w)
            }
        })
    };
    has(UNIT_WORDS) && !has(MONEY_WORDS)
}

fn is_price(column: &str) -> bool {
    ident_words(column).iter().any(|w| w == "price") || column.contains("单价")
}

fn quantity_of(table: &TableInfo) -> Option<String> {
    table
        .columns
        .iter()
        .find(|c| {
            ident_words(&c.name)
                .iter()
                .any(|w| w == "quantity" || w == "qty")
                || c.name.contains("数量")
        })
        .map(|c| c.name.clone())
}

/// `SUM` of a price becomes the `SUM` of the quantity beside it when the question asks how
/// many were sold (see the module documentation). `None` when nothing changes.
///
/// ```
/// use knowhub_sql::{ColumnInfo, Schema, TableInfo, TableKind, count_units_sold};
/// let column = |name: &str| ColumnInfo {
///     name: name.into(),
///     decl_type: "NUMERIC".into(),
///     samples: vec![],
///     values: vec![],
///     primary_key: 0,
/// };
/// let schema = Schema {
///     tables: vec![TableInfo {
///         name: "InvoiceLine".into(),
///         kind: TableKind::Table,
///         columns: ["TrackId", "UnitPrice", "Quantity"].map(column).to_vec(),
///         foreign_keys: vec![],
///         row_count: None,
///     }],
/// };
/// let sql = "SELECT il.TrackId, SUM(il.UnitPrice) FROM InvoiceLine il GROUP BY il.TrackId \
///            ORDER BY SUM(il.UnitPrice) DESC LIMIT 5";
/// assert_eq!(
///     count_units_sold(sql, &schema, "The 5 most purchased tracks").as_deref(),
///     Some(
///         "SELECT il.TrackId, SUM(il.Quantity) FROM InvoiceLine il GROUP BY il.TrackId \
///          ORDER BY SUM(il.Quantity) DESC LIMIT 5"
///     )
/// );
/// // Asked for money, the price is what is summed.
/// assert_eq!(count_units_sold(sql, &schema, "Revenue of the best selling tracks"), None);
/// ```
pub fn count_units_sold(sql: &str, schema: &Schema, question: &str) -> Option<String> {
    if !asks_for_units(question) {
        return None;
    }
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    let select = only_select(&mut statements)?;
    let [from] = select.from.as_slice() else {
        return None;
    };
    let bound: Vec<Binding<'_>> = bind_all(from, schema)?;
    // The quantity beside `e` when `e` is a price column of a table that has one.
    let quantity_beside = |e: &Expr| {
        let (side, column) = column_of(e, &bound)?;
        if !is_price(&column) {
            return None;
        }
        let quantity = quantity_of(bound[side].table)?;
        Some((side, quantity))
    };
    let is_column = |e: &Expr, side: usize, name: &str| {
        column_of(e, &bound).is_some_and(|(s, c)| s == side && c.eq_ignore_ascii_case(name))
    };
    let mut changed = false;
    let _ = visit_expressions_mut(&mut statements, |e| {
        let Expr::Function(f) = e else {
            return ControlFlow::<()>::Continue(());
        };
        if !f.name.to_string().eq_ignore_ascii_case("sum") {
            return ControlFlow::Continue(());
        }
        let FunctionArguments::List(list) = &mut f.args else {
            return ControlFlow::Continue(());
        };
        let [FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))] = list.args.as_mut_slice() else {
            return ControlFlow::Continue(());
        };
        let replacement = match &*arg {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Multiply,
                right,
            } => [(left, right), (right, left)]
                .into_iter()
                .find_map(|(p, q)| {
                    let (side, quantity) = quantity_beside(p)?;
                    is_column(q, side, &quantity).then_some((side, quantity))
                }),
            other => quantity_beside(other),
        };
        if let Some((side, quantity)) = replacement {
            *arg = Expr::CompoundIdentifier(vec![
                Ident::new(bound[side].binding.clone()),
                Ident::new(quantity),
            ]);
            changed = true;
        }
        ControlFlow::Continue(())
    });
    changed.then(|| statements[0].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_or_money() {
        for (question, units) in [
            (
                "Provide a query that shows the top 5 most purchased tracks over all.",
                true,
            ),
            (
                "Provide a query that shows the top 3 best selling artists.",
                true,
            ),
            ("哪种类型的销量最高？", true),
            ("Show total revenue per artist.", false),
            (
                "Who are the top 5 customers by total purchase amount?",
                false,
            ),
            ("What were the total sales for each month?", false),
            ("Which genre earned the most?", false),
            ("List the tracks never purchased for more than $1", false),
            ("哪种类型的销售额最高？", false),
            ("How many tracks are there?", false),
        ] {
            assert_eq!(asks_for_units(question), units, "{question}");
        }
    }

    #[test]
    fn summed_prices_become_quantities() {
        use crate::schema::{ColumnInfo, TableKind};
        let table = |name: &str, columns: &[&str]| TableInfo {
            name: name.into(),
            kind: TableKind::Table,
            columns: columns
                .iter()
                .map(|c| ColumnInfo {
                    name: (*c).into(),
                    decl_type: "NUMERIC".into(),
                    samples: vec![],
                    values: vec![],
                    primary_key: 0,
                })
                .collect(),
            foreign_keys: vec![],
            row_count: None,
        };
        let schema = Schema {
            tables: vec![
                table("Track", &["TrackId", "Name", "UnitPrice"]),
                table("InvoiceLine", &["TrackId", "UnitPrice", "Quantity"]),
            ],
        };
        let q = "the best selling tracks";
        for (sql, want) in [
            (
                "SELECT t.Name, SUM(il.UnitPrice * il.Quantity) FROM Track t JOIN InvoiceLine il \
                 ON t.TrackId = il.TrackId GROUP BY t.TrackId",
                Some(
                    "SELECT t.Name, SUM(il.Quantity) FROM Track t JOIN InvoiceLine il ON \
                     t.TrackId = il.TrackId GROUP BY t.TrackId",
                ),
            ),
            (
                "SELECT TrackId, SUM(Quantity * UnitPrice) AS n FROM InvoiceLine GROUP BY TrackId",
                Some(
                    "SELECT TrackId, SUM(InvoiceLine.Quantity) AS n FROM InvoiceLine GROUP BY TrackId",
                ),
            ),
            // The catalogue's price has no quantity beside it; a count is already units.
            (
                "SELECT t.Name, SUM(t.UnitPrice) FROM Track t GROUP BY t.TrackId",
                None,
            ),
            (
                "SELECT TrackId, COUNT(*) FROM InvoiceLine GROUP BY TrackId",
                None,
            ),
            // A price times another table's quantity is left as written.
            (
                "SELECT t.Name, SUM(t.UnitPrice * il.Quantity) FROM Track t JOIN InvoiceLine il \
                 ON t.TrackId = il.TrackId GROUP BY t.TrackId",
                None,
            ),
            ("SELECT 1; SELECT 2", None),
        ] {
            assert_eq!(count_units_sold(sql, &schema, q).as_deref(), want, "{sql}");
        }
    }
}
