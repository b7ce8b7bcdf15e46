//! Sums that count a row many times. Joined to its children, a parent row is repeated once per
//! child: `SUM(i.Total)` over `Sale JOIN SaleLine` adds each sale's total once for
//! every line of it. Small models write this for "total revenue per author" (the author is
//! reached through the lines), and the statement runs and prints a number several times too
//! large. Nothing in the statement says which measure was meant, so it is not rewritten: it is
//! refused with a reason the model's retry can act on, and a wrong number is never shown.
//!
//! A link table (one whose primary key is its references, like `ReadingListBook`) is not a
//! repetition: each chapter is in a reading list once, so summing a chapter's length per reading list is
//! right. Nor is a child whose reference is its own key (one child per parent).

use std::fmt;
use std::ops::ControlFlow;

use knowhub_sql::{Schema, TableInfo};
use sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Statement, Visit,
    Visitor,
};

use crate::joins::{Link, links};
use crate::repair::{Binding, bind_all, column_of, conjuncts, on_condition, only_select};
/// A sum of a parent's column over a join that repeats the parent once per child row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepeatedSum {
    /// The summed expression as written (`SUM(i.Total)`).
    pub sum: String,
    /// The table whose rows are repeated (`Sale`).
    pub parent: String,
    /// The joined table with many rows per parent row (`SaleLine`).
    pub child: String,
    /// The child's own number columns (not keys or references): what could be summed instead.
    pub child_measures: Vec<String>,
}

impl fmt::Display for RepeatedSum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} adds each {parent} row once for every {child} row joined to it ({child} has many \
             rows per {parent}), so the sum is too large",
            self.sum,
            parent = self.parent,
            child = self.child,
        )?;
        if self.child_measures.is_empty() {
            write!(f, "; leave {} out of the join", self.child)
        } else {
            write!(
                f,
                "; sum {}'s own columns ({}) instead, or leave {} out of the join",
                self.child,
                self.child_measures.join(", "),
                self.child
            )
        }
    }
}

/// The first `SUM` (or `TOTAL`) of `sql` that reads a table whose rows its joins repeat (see
/// the module documentation), or `None`. Only joins on declared foreign keys are followed, so a
/// statement whose joins the schema does not explain is never refused here.
///
/// ```
/// use knowhub_sql::{ColumnInfo, ForeignKey, Schema, TableInfo, TableKind};
/// use knowhub_sqlgen::{parse, repeated_sum};
/// let column = |name: &str, key: u32| ColumnInfo {
///     name: name.into(),
///     decl_type: "NUMERIC".into(),
///     samples: vec![],
///     values: vec![],
///     primary_key: key,
/// };
/// let schema = Schema {
///     tables: vec![
///         TableInfo {
///             name: "Sale".into(),
///             kind: TableKind::Table,
///             columns: vec![column("SaleId", 1), column("Total", 0)],
///             foreign_keys: vec![],
///             row_count: None,
///         },
///         TableInfo {
///             name: "SaleLine".into(),
///             kind: TableKind::Table,
///             columns: vec![
///                 column("SaleLineId", 1),
///                 column("SaleId", 0),
///                 column("ItemPrice", 0),
///             ],
///             foreign_keys: vec![ForeignKey {
///                 columns: vec!["SaleId".into()],
///                 ref_table: "Sale".into(),
///                 ref_columns: vec!["SaleId".into()],
///             }],
///             row_count: None,
///         },
///     ],
/// };
/// let sql = "SELECT SUM(i.Total) FROM Sale i JOIN SaleLine il ON il.SaleId = i.SaleId";
/// let found = repeated_sum(&parse(sql).unwrap(), &schema).unwrap();
/// assert_eq!((found.parent.as_str(), found.child.as_str()), ("Sale", "SaleLine"));
/// assert_eq!(found.child_measures, ["ItemPrice"]);
/// // The lines' own amounts are summed once each.
/// assert_eq!(
///     repeated_sum(
///         &parse("SELECT SUM(il.ItemPrice) FROM Sale i JOIN SaleLine il ON il.SaleId = i.SaleId")
///             .unwrap(),
///         &schema,
///     ),
///     None
/// );
/// ```
pub fn repeated_sum(statement: &Statement, schema: &Schema) -> Option<RepeatedSum> {
    let mut statements = [statement.clone()];
    let select = only_select(&mut statements)?;
    let [from] = select.from.as_slice() else {
        return None;
    };
    if from.joins.is_empty() {
        return None;
    }
    let bound = bind_all(from, schema)?;
    let links = links(schema);
    let edges = joined_edges(from, &bound, &links);
    // The sums of the statement's own SELECT (its subqueries have their own FROM).
    struct Sums(Vec<Expr>, usize);
    impl Visitor for Sums {
        type Break = ();
        fn pre_visit_query(&mut self, _: &sqlparser::ast::Query) -> ControlFlow<()> {
            self.1 += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &sqlparser::ast::Query) -> ControlFlow<()> {
            self.1 -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if self.1 == 1
                && let Expr::Function(f) = e
                && ["sum", "total"]
                    .iter()
                    .any(|n| f.name.to_string().eq_ignore_ascii_case(n))
            {
                self.0.push(e.clone());
            }
            ControlFlow::Continue(())
        }
    }
    let mut sums = Sums(Vec::new(), 0);
    let _ = statements[0].visit(&mut sums);
    for sum in sums.0 {
        let Expr::Function(f) = &sum else { continue };
        let FunctionArguments::List(list) = &f.args else {
            continue;
        };
        if list.duplicate_treatment.is_some() {
            // `SUM(DISTINCT …)` already counts each value once.
            continue;
        }
        let [FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))] = list.args.as_slice() else {
            continue;
        };
        for side in sides_read(arg, &bound) {
            if let Some(child) = repeating_child(side, &edges, &bound) {
                return Some(RepeatedSum {
                    sum: sum.to_string(),
                    parent: bound[side].table.name.clone(),
                    child: bound[child].table.name.clone(),
                    child_measures: measures(bound[child].table, &links),
                });
            }
        }
    }
    None
}

/// A join between two bound tables on a declared foreign key: `(parent, child, one_to_one)`.
type Edge = (usize, usize, bool);

/// The joins of `from` whose conditions follow a declared foreign key.
fn joined_edges(
    from: &sqlparser::ast::TableWithJoins,
    bound: &[Binding<'_>],
    links: &[Link<'_>],
) -> Vec<Edge> {
    let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    let mut edges = Vec::new();
    for (j, join) in from.joins.iter().enumerate() {
        let Some(on) = on_condition(&join.join_operator) else {
            continue;
        };
        let known = &bound[..j + 2];
        // `conjuncts` splits in place; the condition is only read here.
        let mut on = on.clone();
        for condition in conjuncts(&mut on) {
            let Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } = condition
            else {
                continue;
            };
            let (Some(l), Some(r)) = (column_of(left, known), column_of(right, known)) else {
                continue;
            };
            for ((child, child_column), (parent, parent_column)) in [(&l, &r), (&r, &l)] {
                let followed = links.iter().any(|k| {
                    same(&k.child.name, &known[*child].table.name)
                        && same(&k.child_column, child_column)
                        && same(&k.parent.name, &known[*parent].table.name)
                        && same(&k.parent_column, parent_column)
                });
                if followed && child != parent {
                    let child_table = known[*child].table;
                    // A reference that is the child's whole key: one child per parent.
                    let one_to_one = child_table
                        .columns
                        .iter()
                        .filter(|c| c.primary_key > 0)
                        .map(|c| c.name.as_str())
                        .eq([child_column.as_str()]);
                    edges.push((*parent, *child, one_to_one));
                }
            }
        }
    }
    edges
}

/// The bound tables (positions) whose columns `e` reads.
fn sides_read(e: &Expr, bound: &[Binding<'_>]) -> Vec<usize> {
    struct Reads<'a, 's>(&'a [Binding<'s>], Vec<usize>);
    impl Visitor for Reads<'_, '_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_))
                && let Some((side, _)) = column_of(e, self.0)
                && !self.1.contains(&side)
            {
                self.1.push(side);
            }
            ControlFlow::Continue(())
        }
    }
    let mut reads = Reads(bound, Vec::new());
    let _ = e.visit(&mut reads);
    reads.1
}

/// A table joined (directly or through others) to `start` as a child of the one before it on
/// the way, with many rows per parent row: the first such one found, walking the joins out from
/// `start`.
fn repeating_child(start: usize, edges: &[Edge], bound: &[Binding<'_>]) -> Option<usize> {
    let mut seen = vec![start];
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(at) = queue.pop_front() {
        for &(parent, child, one_to_one) in edges {
            let next = if parent == at {
                child
            } else if child == at {
                parent
            } else {
                continue;
            };
            if seen.contains(&next) {
                continue;
            }
            if next == child && !one_to_one && !is_link_table(bound[child].table) {
                return Some(child);
            }
            seen.push(next);
            queue.push_back(next);
        }
    }
    None
}

/// A table whose primary key is two or more columns, each a declared reference: it pairs rows
/// of other tables, each pair once.
fn is_link_table(table: &TableInfo) -> bool {
    let keys: Vec<&str> = table
        .columns
        .iter()
        .filter(|c| c.primary_key > 0)
        .map(|c| c.name.as_str())
        .collect();
    keys.len() >= 2
        && keys.iter().all(|k| {
            table
                .foreign_keys
                .iter()
                .any(|fk| fk.columns.iter().any(|c| c.eq_ignore_ascii_case(k)))
        })
}

/// The number columns of `table` that are neither its key nor a reference (nor named as an id).
fn measures(table: &TableInfo, links: &[Link<'_>]) -> Vec<String> {
    table
        .columns
        .iter()
        .filter(|c| c.is_numeric() && c.primary_key == 0)
        .filter(|c| {
            !links.iter().any(|l| {
                l.child.name.eq_ignore_ascii_case(&table.name)
                    && l.child_column.eq_ignore_ascii_case(&c.name)
            })
        })
        .filter(|c| {
            let words = crate::template::ident_words(&c.name);
            words.last().is_none_or(|w| w != "id")
        })
        .map(|c| c.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use knowhub_sql::{ColumnInfo, ForeignKey, TableKind};

    fn table(name: &str, columns: &[(&str, u32)], refs: &[(&str, &str, &str)]) -> TableInfo {
        TableInfo {
            name: name.into(),
            kind: TableKind::Table,
            columns: columns
                .iter()
                .map(|(c, key)| ColumnInfo {
                    name: (*c).into(),
                    decl_type: if c.ends_with("Name") || c.ends_with("Title") {
                        "TEXT".into()
                    } else {
                        "NUMERIC".into()
                    },
                    samples: vec![],
                    values: vec![],
                    primary_key: *key,
                })
                .collect(),
            foreign_keys: refs
                .iter()
                .map(|(c, t, rc)| ForeignKey {
                    columns: vec![(*c).into()],
                    ref_table: (*t).into(),
                    ref_columns: vec![(*rc).into()],
                })
                .collect(),
            row_count: None,
        }
    }

    /// A store: artists, albums, tracks, playlists (through a link table), customers and their
    /// invoices with lines.
    fn store() -> Schema {
        Schema {
            tables: vec![
                table("Artist", &[("ArtistId", 1), ("Name", 0)], &[]),
                table(
                    "Album",
                    &[("AlbumId", 1), ("Title", 0), ("ArtistId", 0)],
                    &[("ArtistId", "Artist", "ArtistId")],
                ),
                table(
                    "Track",
                    &[
                        ("TrackId", 1),
                        ("Name", 0),
                        ("AlbumId", 0),
                        ("Milliseconds", 0),
                        ("UnitPrice", 0),
                    ],
                    &[("AlbumId", "Album", "AlbumId")],
                ),
                table("Playlist", &[("PlaylistId", 1), ("Name", 0)], &[]),
                table(
                    "PlaylistTrack",
                    &[("PlaylistId", 1), ("TrackId", 2)],
                    &[
                        ("PlaylistId", "Playlist", "PlaylistId"),
                        ("TrackId", "Track", "TrackId"),
                    ],
                ),
                table(
                    "Customer",
                    &[("CustomerId", 1), ("LastName", 0), ("CreditLimit", 0)],
                    &[],
                ),
                table(
                    "Invoice",
                    &[("InvoiceId", 1), ("CustomerId", 0), ("Total", 0)],
                    &[("CustomerId", "Customer", "CustomerId")],
                ),
                table(
                    "InvoiceLine",
                    &[
                        ("InvoiceLineId", 1),
                        ("InvoiceId", 0),
                        ("TrackId", 0),
                        ("UnitPrice", 0),
                        ("Quantity", 0),
                    ],
                    &[
                        ("InvoiceId", "Invoice", "InvoiceId"),
                        ("TrackId", "Track", "TrackId"),
                    ],
                ),
                table(
                    "InvoiceNote",
                    &[("InvoiceId", 1), ("Discount", 0)],
                    &[("InvoiceId", "Invoice", "InvoiceId")],
                ),
            ],
        }
    }

    #[test]
    fn sums_over_repeating_joins_are_found() {
        // (statement, the repeated table and its child, or None when every row counts once)
        let rows: &[(&str, Option<(&str, &str)>)] = &[
            // The invoice's total once per line, lines reached on the way to the artist.
            (
                "SELECT ar.Name, SUM(i.Total) FROM Invoice i \
                 JOIN InvoiceLine il ON i.InvoiceId = il.InvoiceId \
                 JOIN Track t ON il.TrackId = t.TrackId JOIN Album al ON t.AlbumId = al.AlbumId \
                 JOIN Artist ar ON al.ArtistId = ar.ArtistId GROUP BY ar.ArtistId",
                Some(("Invoice", "InvoiceLine")),
            ),
            // The same joins written from the artist's end, the lines' amounts summed: right.
            (
                "SELECT ar.Name, SUM(il.UnitPrice * il.Quantity) FROM Artist ar \
                 JOIN Album al ON al.ArtistId = ar.ArtistId JOIN Track t ON t.AlbumId = al.AlbumId \
                 JOIN InvoiceLine il ON il.TrackId = t.TrackId GROUP BY ar.ArtistId",
                None,
            ),
            // A customer's credit limit once per invoice.
            (
                "SELECT SUM(c.CreditLimit) FROM Customer c JOIN Invoice i \
                 ON c.CustomerId = i.CustomerId",
                Some(("Customer", "Invoice")),
            ),
            // Sales per customer: the invoices' totals, each once.
            (
                "SELECT c.LastName, SUM(i.Total) FROM Invoice i JOIN Customer c \
                 ON c.CustomerId = i.CustomerId GROUP BY c.CustomerId",
                None,
            ),
            // A join by `USING` is not followed: not judged.
            (
                "SELECT TOTAL(c.CreditLimit) FROM Customer c JOIN Invoice i USING (CustomerId) \
                 JOIN InvoiceLine il ON il.InvoiceId = i.InvoiceId",
                None,
            ),
            // Repeated two steps away: the customer's credit limit once per invoice line.
            (
                "SELECT SUM(c.CreditLimit) FROM InvoiceLine il \
                 JOIN Invoice i ON il.InvoiceId = i.InvoiceId \
                 JOIN Customer c ON i.CustomerId = c.CustomerId",
                Some(("Customer", "Invoice")),
            ),
            // A track's length per playlist: the link table pairs each track with a playlist once.
            (
                "SELECT p.Name, SUM(t.Milliseconds) FROM Playlist p \
                 JOIN PlaylistTrack pt ON p.PlaylistId = pt.PlaylistId \
                 JOIN Track t ON pt.TrackId = t.TrackId GROUP BY p.PlaylistId",
                None,
            ),
            // One note per invoice: not a repetition.
            (
                "SELECT SUM(i.Total) FROM Invoice i JOIN InvoiceNote n ON n.InvoiceId = i.InvoiceId",
                None,
            ),
            // Each value once already.
            (
                "SELECT SUM(DISTINCT i.Total) FROM Invoice i \
                 JOIN InvoiceLine il ON i.InvoiceId = il.InvoiceId",
                None,
            ),
            // Joined on something the schema does not declare: not judged.
            (
                "SELECT SUM(i.Total) FROM Invoice i JOIN InvoiceLine il ON i.Total = il.UnitPrice",
                None,
            ),
            // A subquery's own sum over its own table.
            (
                "SELECT t.Name, (SELECT SUM(i.Total) FROM Invoice i) FROM Track t \
                 JOIN Album al ON t.AlbumId = al.AlbumId",
                None,
            ),
            // The sum of the album's tracks per album: children summed, not repeated.
            (
                "SELECT al.Title, SUM(t.Milliseconds) FROM Album al \
                 JOIN Track t ON t.AlbumId = al.AlbumId GROUP BY al.AlbumId",
                None,
            ),
            // An unqualified column only the parent has, in an expression.
            (
                "SELECT SUM(Total * 1.2) FROM Invoice JOIN InvoiceLine \
                 ON InvoiceLine.InvoiceId = Invoice.InvoiceId",
                Some(("Invoice", "InvoiceLine")),
            ),
        ];
        let schema = store();
        for (sql, want) in rows {
            let got = repeated_sum(&crate::parse(sql).unwrap(), &schema);
            assert_eq!(
                got.as_ref().map(|r| (r.parent.as_str(), r.child.as_str())),
                *want,
                "{sql}"
            );
        }
    }

    #[test]
    fn the_reason_names_what_to_sum_instead() {
        let found = repeated_sum(&crate::parse("SELECT SUM(i.Total) FROM Invoice i JOIN InvoiceLine il ON i.InvoiceId = il.InvoiceId").unwrap(), &store())
        .unwrap();
        assert_eq!(found.child_measures, ["UnitPrice", "Quantity"]);
        let text = found.to_string();
        assert!(
            text.starts_with("SUM(i.Total) adds each Invoice row once"),
            "{text}"
        );
        assert!(
            text.contains("sum InvoiceLine's own columns (UnitPrice, Quantity)"),
            "{text}"
        );
        let found = repeated_sum(&crate::parse("SELECT SUM(c.CreditLimit) FROM Customer c JOIN Invoice i ON c.CustomerId = i.CustomerId").unwrap(), &store())
        .unwrap();
        assert_eq!(found.child_measures, ["Total"]);
    }
}
