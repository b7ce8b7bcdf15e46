//! Joins a model wrote that cannot run, mended from the schema. Small models join two tables
//! on a column one of them does not have (`Staff JOIN Sale ON e.StaffId =
//! i.AccountManagerId`, where the rep is the member's) or join a lookup table the database does
//! not have (`JOIN Country c ON i.ShipCountry = c.Country`). Such statements fail; the
//! retry usually repeats the mistake. The declared foreign keys say how the tables meet.

use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, Ident, JoinConstraint, JoinOperator, ObjectNamePart, SelectItem, SetExpr, Statement,
    TableFactor, Visit, VisitMut, Visitor, VisitorMut,
};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

use crate::repair::{
    Binding, bind_all, column_of, has_subquery, on_condition, only_select, own_name,
    single_primary_key,
};
use knowhub_sql::{Schema, TableInfo};

/// One declared single-column foreign key: `child.child_column` references
/// `parent.parent_column`.
pub(crate) struct Link<'s> {
    pub(crate) child: &'s TableInfo,
    pub(crate) child_column: String,
    pub(crate) parent: &'s TableInfo,
    pub(crate) parent_column: String,
}

/// The single-column foreign keys of `schema` whose referenced table it has (a table's
/// reference to itself is no way to another table and is left out).
pub(crate) fn links(schema: &Schema) -> Vec<Link<'_>> {
    let mut out = Vec::new();
    for child in &schema.tables {
        for fk in &child.foreign_keys {
            let [column] = fk.columns.as_slice() else {
                continue;
            };
            let Some(parent) = schema.table(&fk.ref_table) else {
                continue;
            };
            if parent.name.eq_ignore_ascii_case(&child.name) {
                continue;
            }
            let parent_column = match fk.ref_columns.as_slice() {
                [one] => one.clone(),
                [] => match single_primary_key(parent) {
                    Some(key) => key,
                    None => continue,
                },
                _ => continue,
            };
            out.push(Link {
                child,
                child_column: column.clone(),
                parent,
                parent_column,
            });
        }
    }
    out
}

/// The links between tables `a` and `b` (either way).
fn links_between<'l, 's>(links: &'l [Link<'s>], a: &str, b: &str) -> Vec<&'l Link<'s>> {
    links
        .iter()
        .filter(|l| {
            (l.child.name.eq_ignore_ascii_case(a) && l.parent.name.eq_ignore_ascii_case(b))
                || (l.child.name.eq_ignore_ascii_case(b) && l.parent.name.eq_ignore_ascii_case(a))
        })
        .collect()
}

/// `x.col = y.col` for `link` between the tables bound as `x` and `y`.
fn condition(x: &Binding<'_>, y: &Binding<'_>, link: &Link<'_>) -> Expr {
    let (x_column, y_column) = if link.child.name.eq_ignore_ascii_case(&x.table.name) {
        (&link.child_column, &link.parent_column)
    } else {
        (&link.parent_column, &link.child_column)
    };
    Expr::BinaryOp {
        left: Box::new(Expr::CompoundIdentifier(vec![
            Ident::new(x.binding.clone()),
            Ident::new(x_column.clone()),
        ])),
        op: sqlparser::ast::BinaryOperator::Eq,
        right: Box::new(Expr::CompoundIdentifier(vec![
            Ident::new(y.binding.clone()),
            Ident::new(y_column.clone()),
        ])),
    }
}

/// Whether every column `e` reads resolves to a column of one of the `bound` tables.
fn resolves(e: &Expr, bound: &[Binding<'_>]) -> bool {
    struct Check<'a, 's> {
        bound: &'a [Binding<'s>],
    }
    impl Visitor for Check<'_, '_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_))
                && column_of(e, self.bound).is_none()
            {
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    e.visit(&mut Check { bound }).is_continue()
}

/// Inner joins whose ON condition reads a column none of the joined tables has, joined
/// instead on the declared foreign key between the table and the tables before it — through
/// a table the statement left out when only such a table links them. `Staff e JOIN Sale
/// i ON e.StaffId = i.AccountManagerId` (the sale has no rep; its member has) becomes
/// `Staff e JOIN Member ON Member.AccountManagerId = e.StaffId JOIN Sale i ON
/// i.MemberId = Member.MemberId`.
///
/// Conditions that run are kept, right or wrong: the rewrite mends only what would fail.
/// `None` when no condition fails, a link is not the one declared key (none, or several), a
/// join is not an inner join, or the statement is not one plain SELECT over tables of
/// `schema`.
///
/// ```
/// use knowhub_sql::{ColumnInfo, ForeignKey, Schema, TableInfo, TableKind};
/// use knowhub_sqlgen::apply_repair;
/// let table = |name: &str, columns: &[&str], fks: &[(&str, &str)]| TableInfo {
///     name: name.into(),
///     kind: TableKind::Table,
///     columns: columns
///         .iter()
///         .enumerate()
///         .map(|(i, c)| ColumnInfo {
///             name: (*c).into(),
///             decl_type: "INTEGER".into(),
///             samples: vec![],
///             values: vec![],
///             primary_key: u32::from(i == 0),
///         })
///         .collect(),
///     foreign_keys: fks
///         .iter()
///         .map(|(column, to)| ForeignKey {
///             columns: vec![(*column).into()],
///             ref_table: (*to).into(),
///             ref_columns: vec![],
///         })
///         .collect(),
///     row_count: None,
/// };
/// let schema = Schema {
///     tables: vec![
///         table("Staff", &["StaffId", "Name"], &[]),
///         table("Member", &["MemberId", "AccountManagerId"], &[("AccountManagerId", "Staff")]),
///         table("Sale", &["SaleId", "MemberId", "Total"], &[("MemberId", "Member")]),
///     ],
/// };
/// assert_eq!(
///     apply_repair(
///         "rejoin_by_foreign_keys",
///         "SELECT e.Name, SUM(i.Total) FROM Staff e JOIN Sale i \
///          ON e.StaffId = i.AccountManagerId GROUP BY e.StaffId",
///         &schema
///     )
///     .as_deref(),
///     Some(
///         "SELECT e.Name, SUM(i.Total) FROM Staff e JOIN Member ON \
///          Member.AccountManagerId = e.StaffId JOIN Sale i ON i.MemberId = \
///          Member.MemberId GROUP BY e.StaffId"
///     )
/// );
/// ```
pub(crate) fn rejoin_by_foreign_keys(statement: &mut Statement, schema: &Schema) -> Option<()> {
    let statements = std::slice::from_mut(statement);
    let select = only_select(statements)?;
    let [from] = select.from.as_mut_slice() else {
        return None;
    };
    let bound = bind_all(from, schema)?;
    let mut broken = Vec::with_capacity(from.joins.len());
    for join in &from.joins {
        let (JoinOperator::Join(JoinConstraint::On(on))
        | JoinOperator::Inner(JoinConstraint::On(on))) = &join.join_operator
        else {
            return None;
        };
        // A subquery's names are its own tables': what it reads is not checked here.
        if has_subquery(on) {
            return None;
        }
        broken.push(!resolves(on, &bound));
    }
    if !broken.contains(&true) {
        return None;
    }
    let links = links(schema);
    let mut connected: Vec<Binding<'_>> = vec![bound[0].clone()];
    let mut joins = Vec::new();
    for (i, mut join) in std::mem::take(&mut from.joins).into_iter().enumerate() {
        let joined = &bound[i + 1];
        if !broken[i] {
            connected.push(joined.clone());
            joins.push(join);
            continue;
        }
        let direct: Vec<(&Binding<'_>, &Link<'_>)> = connected
            .iter()
            .flat_map(|c| {
                links_between(&links, &joined.table.name, &c.table.name)
                    .into_iter()
                    .map(move |l| (c, l))
            })
            .collect();
        let on = match direct.as_slice() {
            [(to, link)] => condition(joined, to, link),
            [] => {
                // One table the statement left out links this table to the ones before it.
                let mut bridges = Vec::new();
                for table in &schema.tables {
                    if bound
                        .iter()
                        .any(|b| b.table.name.eq_ignore_ascii_case(&table.name))
                    {
                        continue;
                    }
                    let to_joined = links_between(&links, &table.name, &joined.table.name);
                    let to_connected: Vec<(&Binding<'_>, &Link<'_>)> = connected
                        .iter()
                        .flat_map(|c| {
                            links_between(&links, &table.name, &c.table.name)
                                .into_iter()
                                .map(move |l| (c, l))
                        })
                        .collect();
                    if let ([into], [(to, link)]) = (to_joined.as_slice(), to_connected.as_slice())
                    {
                        bridges.push((table, *into, *to, *link));
                    }
                }
                let [(table, into, to, link)] = bridges.as_slice() else {
                    return None;
                };
                if bound
                    .iter()
                    .any(|b| b.binding.eq_ignore_ascii_case(&table.name))
                {
                    return None;
                }
                let bridge = Binding {
                    table,
                    name: table.name.clone(),
                    binding: table.name.clone(),
                };
                let piece = format!(
                    "SELECT 1 FROM x JOIN {} ON {}",
                    table.name,
                    condition(&bridge, to, link)
                );
                let mut parsed = Parser::parse_sql(&SQLiteDialect {}, &piece).ok()?;
                let Some(Statement::Query(piece)) = parsed.pop() else {
                    return None;
                };
                let SetExpr::Select(piece) = *piece.body else {
                    return None;
                };
                joins.push(piece.from.into_iter().next()?.joins.into_iter().next()?);
                let on = condition(joined, &bridge, into);
                connected.push(bridge);
                on
            }
            _ => return None,
        };
        if let JoinOperator::Join(JoinConstraint::On(old))
        | JoinOperator::Inner(JoinConstraint::On(old)) = &mut join.join_operator
        {
            *old = on;
        }
        connected.push(joined.clone());
        joins.push(join);
    }
    from.joins = joins;
    Some(())
}

/// Lookup tables the database does not have, joined only to compare a value the statement has
/// in hand: `Sale i JOIN Country c ON i.ShipCountry = c.Country WHERE c.Country =
/// 'Brazil'` (there is no `Country` table) reads `i.ShipCountry` wherever it read
/// `c.Country`, and the join goes. Only when the made-up table is joined by one equality with
/// a column of a real table and nothing reads any other of its columns. When the equality is
/// made up on both sides (`Member c JOIN Address a ON c.AddressId = a.AddressId`), the
/// made-up table stands for a part of the real one: its columns are read from the real table
/// (`a.Country` → `c.Country`) when it has them all, none being what names or identifies the
/// real row (its key, name or title), and the made-up table's name is no real table's
/// misspelling. `None` when nothing changes.
///
/// ```
/// use knowhub_sql::{ColumnInfo, Schema, TableInfo, TableKind};
/// use knowhub_sqlgen::apply_repair;
/// let schema = Schema {
///     tables: vec![TableInfo {
///         name: "Sale".into(),
///         kind: TableKind::Table,
///         columns: ["SaleId", "ShipCountry"]
///             .iter()
///             .map(|c| ColumnInfo {
///                 name: (*c).into(),
///                 decl_type: "TEXT".into(),
///                 samples: vec![],
///                 values: vec![],
///                 primary_key: 0,
///             })
///             .collect(),
///         foreign_keys: vec![],
///         row_count: None,
///     }],
/// };
/// assert_eq!(
///     apply_repair(
///         "drop_imagined_lookups",
///         "SELECT i.SaleId, c.Country FROM Sale i JOIN Country c \
///          ON i.ShipCountry = c.Country WHERE c.Country = 'Brazil'",
///         &schema
///     )
///     .as_deref(),
///     Some(
///         "SELECT i.SaleId, i.ShipCountry FROM Sale i \
///          WHERE i.ShipCountry = 'Brazil'"
///     )
/// );
/// ```
pub(crate) fn drop_imagined_lookups(statement: &mut Statement, schema: &Schema) -> Option<()> {
    let statements = std::slice::from_mut(statement);
    // Tables the statement defines itself (`WITH Country AS (…)`) are not made up.
    let defined: Vec<String> = match &*statements {
        [Statement::Query(q)] => q
            .with
            .iter()
            .flat_map(|w| &w.cte_tables)
            .map(|cte| cte.alias.name.value.to_ascii_lowercase())
            .collect(),
        _ => return None,
    };
    let mut changed = false;
    loop {
        let select = only_select(statements)?;
        let [from] = select.from.as_mut_slice() else {
            return None;
        };
        let known: Vec<Binding<'_>> = std::iter::once(&from.relation)
            .chain(from.joins.iter().map(|j| &j.relation))
            .filter_map(|r| Binding::of(r, schema))
            .collect();
        // The first join of a table the schema does not have, and what it compares.
        let mut found = None;
        for (i, join) in from.joins.iter().enumerate() {
            let TableFactor::Table {
                name, alias, args, ..
            } = &join.relation
            else {
                continue;
            };
            let [ObjectNamePart::Identifier(table)] = name.0.as_slice() else {
                continue;
            };
            if args.is_some()
                || schema.table(&table.value).is_some()
                || defined.contains(&table.value.to_ascii_lowercase())
            {
                continue;
            }
            let binding = alias
                .as_ref()
                .map_or_else(|| table.value.clone(), |a| a.name.value.clone());
            let on = on_condition(&join.join_operator)?;
            let Expr::BinaryOp {
                left,
                op: sqlparser::ast::BinaryOperator::Eq,
                right,
            } = on
            else {
                return None;
            };
            let of_imagined = |e: &Expr| match e {
                Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                    [q, c] if q.value.eq_ignore_ascii_case(&binding) => Some(c.value.clone()),
                    _ => None,
                },
                _ => None,
            };
            let (imagined, real) = match (of_imagined(left), of_imagined(right)) {
                (Some(c), None) => (c, right.as_ref()),
                (None, Some(c)) => (c, left.as_ref()),
                _ => return None,
            };
            let stands_in = match column_of(real, &known) {
                Some((side, column)) => StandsIn::Column(
                    imagined,
                    Expr::CompoundIdentifier(vec![
                        Ident::new(known[side].binding.clone()),
                        Ident::new(column),
                    ]),
                ),
                // Made up on both sides (`Member c JOIN Address a ON c.AddressId =
                // a.AddressId`): the made-up table is a part of the real one, whose columns
                // it reads (`a.Country` is the member's `Country`).
                None => {
                    // A misspelt real table (`Artists`) is not a part of another one.
                    let fold = |n: &str| crate::template::singular(&n.to_ascii_lowercase());
                    if schema
                        .tables
                        .iter()
                        .any(|t| fold(&t.name) == fold(&table.value))
                    {
                        return None;
                    }
                    let Expr::CompoundIdentifier(parts) = real else {
                        return None;
                    };
                    let [q, _] = parts.as_slice() else {
                        return None;
                    };
                    let owner = known
                        .iter()
                        .find(|b| b.binding.eq_ignore_ascii_case(&q.value))?;
                    StandsIn::Table(owner.clone())
                }
            };
            found = Some((i, binding, stands_in));
            break;
        }
        let Some((i, binding, stands_in)) = found else {
            break;
        };
        from.joins.remove(i);
        // Every other reference to the made-up table must be the compared column.
        if select.projection.iter().any(|item| match item {
            SelectItem::QualifiedWildcard(kind, _) => kind
                .to_string()
                .trim_end_matches(".*")
                .trim_matches('"')
                .eq_ignore_ascii_case(&binding),
            _ => false,
        }) {
            return None;
        }
        struct Replace<'a, 's> {
            binding: &'a str,
            stands_in: &'a StandsIn<'s>,
            other: bool,
            replaced: usize,
        }
        impl VisitorMut for Replace<'_, '_> {
            type Break = ();
            fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
                if let Expr::CompoundIdentifier(parts) = e
                    && let [q, c] = parts.as_slice()
                    && q.value.eq_ignore_ascii_case(self.binding)
                {
                    match self.stands_in.column(&c.value) {
                        Some(real) => {
                            *e = real;
                            self.replaced += 1;
                        }
                        None => {
                            self.other = true;
                            return ControlFlow::Break(());
                        }
                    }
                }
                ControlFlow::Continue(())
            }
        }
        let mut replace = Replace {
            binding: &binding,
            stands_in: &stands_in,
            other: false,
            replaced: 0,
        };
        for statement in statements.iter_mut() {
            let _ = VisitMut::visit(statement, &mut replace);
        }
        // A part of a real table that nothing reads is a join not understood: left alone.
        if replace.other || (replace.replaced == 0 && matches!(stands_in, StandsIn::Table(_))) {
            return None;
        }
        changed = true;
    }
    changed.then_some(())
}

/// What a made-up table's columns read in [`drop_imagined_lookups`].
enum StandsIn<'s> {
    /// Only the compared column (`c.Country`), which is the real side's column.
    Column(String, Expr),
    /// Any column the real table has, read from it.
    Table(Binding<'s>),
}

impl StandsIn<'_> {
    /// The real column for the made-up table's `column`, if there is one.
    fn column(&self, column: &str) -> Option<Expr> {
        match self {
            StandsIn::Column(imagined, real) => {
                column.eq_ignore_ascii_case(imagined).then(|| real.clone())
            }
            StandsIn::Table(owner) => {
                let c = owner.table.column(column)?;
                // What names or identifies the real row is not the made-up thing's: an invented
                // `Singer` joined to `Chapter` does not make the chapter's name a singer's.
                let title = crate::template::ident_words(&c.name)
                    .iter()
                    .any(|w| w == "title");
                if c.primary_key > 0 || title || own_name(owner.table, &c.name) {
                    return None;
                }
                Some(Expr::CompoundIdentifier(vec![
                    Ident::new(owner.binding.clone()),
                    Ident::new(c.name.clone()),
                ]))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use knowhub_sql::{ColumnInfo, ForeignKey, TableKind};

    /// Employees look after customers, who have invoices of tracks on albums in genres.
    fn store() -> Schema {
        let table = |name: &str, columns: &[&str], fks: &[(&str, &str)]| TableInfo {
            name: name.into(),
            kind: TableKind::Table,
            columns: columns
                .iter()
                .enumerate()
                .map(|(i, c)| ColumnInfo {
                    name: (*c).into(),
                    decl_type: "TEXT".into(),
                    samples: vec![],
                    values: vec![],
                    primary_key: u32::from(i == 0),
                })
                .collect(),
            foreign_keys: fks
                .iter()
                .map(|(column, to)| ForeignKey {
                    columns: vec![(*column).into()],
                    ref_table: (*to).into(),
                    ref_columns: vec![],
                })
                .collect(),
            row_count: None,
        };
        Schema {
            tables: vec![
                table(
                    "Employee",
                    &["EmployeeId", "Name", "ReportsTo"],
                    &[("ReportsTo", "Employee")],
                ),
                table(
                    "Customer",
                    &["CustomerId", "Name", "Country", "SupportRepId"],
                    &[("SupportRepId", "Employee")],
                ),
                table(
                    "Invoice",
                    &["InvoiceId", "CustomerId", "Total", "BillingCountry"],
                    &[("CustomerId", "Customer")],
                ),
                table("Genre", &["GenreId", "Name"], &[]),
                table("Album", &["AlbumId", "Title"], &[]),
                table(
                    "Track",
                    &["TrackId", "Name", "AlbumId", "GenreId"],
                    &[("AlbumId", "Album"), ("GenreId", "Genre")],
                ),
                table(
                    "InvoiceLine",
                    &["InvoiceLineId", "InvoiceId", "TrackId"],
                    &[("InvoiceId", "Invoice"), ("TrackId", "Track")],
                ),
            ],
        }
    }

    #[test]
    fn broken_joins_follow_foreign_keys() {
        let schema = store();
        for (sql, expected) in [
            // Through the table that links them.
            (
                "SELECT T1.Name, SUM(T2.Total) FROM Employee AS T1 JOIN Invoice AS T2 ON \
                 T1.EmployeeId = T2.SupportRepId GROUP BY T1.EmployeeId",
                Some(
                    "SELECT T1.Name, SUM(T2.Total) FROM Employee AS T1 JOIN Customer ON \
                     Customer.SupportRepId = T1.EmployeeId JOIN Invoice AS T2 ON \
                     T2.CustomerId = Customer.CustomerId GROUP BY T1.EmployeeId",
                ),
            ),
            // Directly, on the declared key; a working join after it stays.
            (
                "SELECT g.Name, COUNT(*) FROM Genre g JOIN Track t ON g.GenreId = t.Genre \
                 JOIN Album a ON a.AlbumId = t.AlbumId GROUP BY g.GenreId",
                Some(
                    "SELECT g.Name, COUNT(*) FROM Genre g JOIN Track t ON t.GenreId = \
                     g.GenreId JOIN Album a ON a.AlbumId = t.AlbumId GROUP BY g.GenreId",
                ),
            ),
            // Conditions that run stay, even when they are not the declared key.
            (
                "SELECT * FROM Customer c JOIN Invoice i ON c.SupportRepId = i.CustomerId",
                None,
            ),
            // A condition with a subquery is not second-guessed.
            (
                "SELECT * FROM Customer c JOIN Invoice i ON i.Total = (SELECT MAX(x.Total) FROM \
                 Invoice x)",
                None,
            ),
            // The only table that would link them is joined later: no guess.
            (
                "SELECT g.Name FROM Genre g JOIN Album a ON g.GenreId = a.GenreId JOIN Track t \
                 ON a.AlbumId = t.AlbumId",
                None,
            ),
            // No link at all; a LEFT join; not one SELECT.
            (
                "SELECT * FROM Genre g JOIN Employee e ON g.GenreId = e.GenreId",
                None,
            ),
            (
                "SELECT * FROM Employee e LEFT JOIN Invoice i ON e.EmployeeId = i.SupportRepId",
                None,
            ),
            ("SELECT 1; SELECT 2", None),
            ("not sql", None),
        ] {
            assert_eq!(
                crate::repair::run(rejoin_by_foreign_keys, sql, &schema).as_deref(),
                expected,
                "{sql}"
            );
        }
    }

    #[test]
    fn imagined_lookup_tables_are_dropped() {
        let schema = store();
        for (sql, expected) in [
            (
                "SELECT T1.Name, T2.InvoiceId, T3.Country FROM Customer AS T1 JOIN Invoice AS \
                 T2 ON T1.CustomerId = T2.CustomerId JOIN Country AS T3 ON T2.BillingCountry = \
                 T3.Country WHERE T3.Country = 'Brazil'",
                Some(
                    "SELECT T1.Name, T2.InvoiceId, T2.BillingCountry FROM Customer AS T1 JOIN \
                     Invoice AS T2 ON T1.CustomerId = T2.CustomerId WHERE T2.BillingCountry = \
                     'Brazil'",
                ),
            ),
            // Another column of the made-up table is read: it is more than a lookup.
            (
                "SELECT c.Name, k.Population FROM Customer c JOIN Country k ON c.Country = \
                 k.Name",
                None,
            ),
            (
                "SELECT k.* FROM Customer c JOIN Country k ON c.Country = k.Name",
                None,
            ),
            // Joined on something other than one equality with a real column.
            (
                "SELECT c.Name FROM Customer c JOIN Country k ON c.Country = k.Name AND \
                 k.Region = 'EU'",
                None,
            ),
            (
                "SELECT c.Name FROM Customer c JOIN Country k ON c.Planet = k.Name",
                None,
            ),
            // Made up on both sides: a part of the real table, read from it.
            (
                "SELECT T1.Name, T3.Country FROM Customer AS T1 JOIN Invoice AS T2 ON \
                 T1.CustomerId = T2.CustomerId JOIN Address AS T3 ON T1.AddressId = \
                 T3.AddressId WHERE T3.Country = 'Brazil'",
                Some(
                    "SELECT T1.Name, T1.Country FROM Customer AS T1 JOIN Invoice AS T2 ON \
                     T1.CustomerId = T2.CustomerId WHERE T1.Country = 'Brazil'",
                ),
            ),
            // … but not the real row's name or key, a column it lacks, a misspelt real table.
            (
                "SELECT s.Name FROM Track t JOIN Singer s ON t.SingerId = s.SingerId",
                None,
            ),
            (
                "SELECT s.TrackId FROM Track t JOIN Singer s ON t.SingerId = s.SingerId",
                None,
            ),
            (
                "SELECT a.Street FROM Customer c JOIN Address a ON c.AddressId = a.AddressId",
                None,
            ),
            (
                "SELECT a.Country FROM Customer c JOIN Customers a ON c.Cid = a.Cid",
                None,
            ),
            // A table the statement defines itself.
            (
                "WITH Country AS (SELECT 'Brazil' AS Name) SELECT c.Name FROM Customer c JOIN \
                 Country k ON c.Country = k.Name",
                None,
            ),
            // Every table is real.
            (
                "SELECT c.Name FROM Customer c JOIN Invoice i ON c.CustomerId = i.CustomerId",
                None,
            ),
            ("not sql", None),
        ] {
            assert_eq!(
                crate::repair::run(drop_imagined_lookups, sql, &schema).as_deref(),
                expected,
                "{sql}"
            );
        }
    }
}
