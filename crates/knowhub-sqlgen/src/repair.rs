//! Repairs: named rules that make a statement which failed run, each read from the schema
//! alone. A model's statement is parsed once ([`parse`]); when it fails validation or
//! execution, [`repair`] applies every rule of [`REPAIRS`] in order to the parsed statement
//! and reports which fired, so the trace shows exactly what was changed and why.
//!
//! A repair never touches a statement that ran: a statement that runs keeps its meaning, right
//! or wrong, and what it means is the model's (or the template's) answer, shown as written.
//! Each rule changes only what could not run (a name that does not exist, a function SQLite
//! lacks, an aggregate with no groups), so a repaired statement answers the question its
//! author wrote.

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, Ident,
    JoinConstraint, JoinOperator, ObjectNamePart, OrderByKind, Query, SelectItem, SetExpr,
    Statement, TableFactor, TableWithJoins, Visit, VisitMut, Visitor, VisitorMut,
};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

use knowhub_sql::{Schema, TableInfo};

/// One named repair.
#[derive(Debug, Clone, Copy)]
pub struct Repair {
    /// The rule's name, as the trace shows it.
    pub name: &'static str,
    /// What it mends, in one line.
    pub mends: &'static str,
    apply: fn(&mut Statement, &Schema) -> Option<()>,
}

/// Every repair, in the order they are tried.
pub const REPAIRS: &[Repair] = &[
    Repair {
        name: "drop_imagined_lookups",
        mends: "a join to a lookup table the database does not have",
        apply: crate::joins::drop_imagined_lookups,
    },
    Repair {
        name: "split_fused_names",
        mends: "a table name run into a column name (`OrderOrderId` for `Order.OrderId`)",
        apply: split_fused_names,
    },
    Repair {
        name: "rejoin_by_foreign_keys",
        mends: "a join condition on a column neither table has, joined on the declared key",
        apply: crate::joins::rejoin_by_foreign_keys,
    },
    Repair {
        name: "mend_column_references",
        mends: "a column qualified with a joined table that lacks it, when one other has it",
        apply: mend_column_references,
    },
    Repair {
        name: "group_the_ranked_rows",
        mends: "rows ordered by an aggregate without GROUP BY (\"misuse of aggregate\")",
        apply: group_the_ranked_rows,
    },
    Repair {
        name: "translate_date_functions",
        mends: "MySQL's YEAR()/MONTH()/DAY(), which SQLite does not have",
        apply: |statement, _| translate_date_functions(statement),
    },
];

/// `sql` parsed as one SQLite statement; `None` when it does not parse or holds several.
pub fn parse(sql: &str) -> Option<Statement> {
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    (statements.len() == 1).then(|| statements.remove(0))
}

/// Applies every repair of [`REPAIRS`] to `statement` in order; returns the names of those that
/// changed it. A rule that gives up half-way leaves the statement as it was.
pub fn repair(statement: &mut Statement, schema: &Schema) -> Vec<&'static str> {
    let mut fired = Vec::new();
    for rule in REPAIRS {
        let mut candidate = statement.clone();
        if (rule.apply)(&mut candidate, schema).is_some() && candidate != *statement {
            *statement = candidate;
            fired.push(rule.name);
        }
    }
    fired
}

/// The repair called `name` applied to `sql` alone (for examples and tests): the repaired
/// text, or `None` when the rule changes nothing (or there is no such rule).
///
/// ```
/// use knowhub_sql::introspect;
/// use knowhub_sqlgen::apply_repair;
/// # let dir = tempfile::tempdir().unwrap();
/// # let db = dir.path().join("school.sqlite");
/// # rusqlite::Connection::open(&db).unwrap().execute_batch(
/// #     "CREATE TABLE course (course_id INTEGER PRIMARY KEY, title TEXT, started DATE);",
/// # ).unwrap();
/// let schema = introspect(&db, 0).unwrap();
/// assert_eq!(
///     apply_repair(
///         "translate_date_functions",
///         "SELECT title FROM course WHERE YEAR(started) = 2020",
///         &schema,
///     )
///     .as_deref(),
///     Some("SELECT title FROM course WHERE CAST(strftime('%Y', started) AS INTEGER) = 2020")
/// );
/// ```
/// A rule applied to `sql` alone, for tests: the changed text, or `None`.
#[cfg(test)]
pub(crate) fn run(
    rule: fn(&mut Statement, &Schema) -> Option<()>,
    sql: &str,
    schema: &Schema,
) -> Option<String> {
    let mut statement = parse(sql)?;
    let before = statement.clone();
    rule(&mut statement, schema)?;
    (statement != before).then(|| statement.to_string())
}

pub fn apply_repair(name: &str, sql: &str, schema: &Schema) -> Option<String> {
    let rule = REPAIRS.iter().find(|r| r.name == name)?;
    let mut statement = parse(sql)?;
    let before = statement.clone();
    (rule.apply)(&mut statement, schema)?;
    (statement != before).then(|| statement.to_string())
}

/// Rows ranked by an aggregate but never grouped: `SELECT p.Name FROM ReadingList p JOIN … JOIN
/// Chapter t … ORDER BY SUM(t.DurationMs) DESC LIMIT 1` fails ("misuse of aggregate"), since
/// there are no groups to sum over. When every selected column is one joined table's, that
/// table's rows are what is ranked: the statement groups by its one-column primary key.
/// `None` when the statement is grouped or aggregated already, selects from several tables,
/// orders by no aggregate, or is not one plain SELECT over joined tables of `schema`.
///
/// ```
/// use knowhub_sql::{ColumnInfo, Schema, TableInfo, TableKind};
/// use knowhub_sqlgen::apply_repair;
/// let table = |name: &str, columns: &[&str]| TableInfo {
///     name: name.into(),
///     kind: TableKind::Table,
///     columns: columns
///         .iter()
///         .enumerate()
///         .map(|(i, c)| ColumnInfo {
///             name: (*c).into(),
///             decl_type: "TEXT".into(),
///             samples: vec![],
///             values: vec![],
///             primary_key: u32::from(i == 0),
///         })
///         .collect(),
///     foreign_keys: vec![],
///     row_count: None,
/// };
/// let schema = Schema {
///     tables: vec![
///         table("ReadingList", &["ReadingListId", "Name"]),
///         table("Song", &["SongId", "ReadingListId", "DurationMs"]),
///     ],
/// };
/// assert_eq!(
///     apply_repair(
///         "group_the_ranked_rows",
///         "SELECT p.Name FROM ReadingList p JOIN Song s ON s.ReadingListId = p.ReadingListId \
///          ORDER BY SUM(s.DurationMs) DESC LIMIT 1",
///         &schema
///     )
///     .as_deref(),
///     Some(
///         "SELECT p.Name FROM ReadingList p JOIN Song s ON s.ReadingListId = p.ReadingListId \
///          GROUP BY p.ReadingListId ORDER BY SUM(s.DurationMs) DESC LIMIT 1"
///     )
/// );
/// ```
pub(crate) fn group_the_ranked_rows(statement: &mut Statement, schema: &Schema) -> Option<()> {
    let statements = std::slice::from_mut(statement);
    let [Statement::Query(query)] = statements else {
        return None;
    };
    let OrderByKind::Expressions(order) = &query.order_by.as_ref()?.kind else {
        return None;
    };
    if !order.iter().any(|o| has_aggregate(&o.expr)) {
        return None;
    }
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    if select.distinct.is_some() || select.having.is_some() {
        return None;
    }
    match &select.group_by {
        GroupByExpr::Expressions(groups, modifiers)
            if groups.is_empty() && modifiers.is_empty() => {}
        _ => return None,
    }
    let [from] = select.from.as_slice() else {
        return None;
    };
    let bound = bind_all(from, schema)?;
    if bound.len() < 2 {
        return None;
    }
    let mut sides = Vec::new();
    for item in &select.projection {
        let (SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }) = item else {
            return None;
        };
        if has_aggregate(e) {
            return None;
        }
        let side = (0..bound.len()).find(|&s| reads_only(e, &bound, |x| x == s))?;
        sides.push(side);
    }
    sides.dedup();
    let [side] = sides.as_slice() else {
        return None;
    };
    let key = single_primary_key(bound[*side].table)?;
    select.group_by = GroupByExpr::Expressions(
        vec![Expr::CompoundIdentifier(vec![
            Ident::new(bound[*side].binding.clone()),
            Ident::new(key),
        ])],
        vec![],
    );
    Some(())
}

/// Date-part functions of other dialects in SQLite's words: `YEAR(d)`, `MONTH(d)`, `DAY(d)`
/// become `CAST(strftime('%Y', d) AS INTEGER)` and so on (integers, as those functions return,
/// so `YEAR(d) = 2012` keeps its meaning). Small models write MySQL's date functions and,
/// told they do not exist here, often write them again. `None` when there is nothing to
/// translate or the text does not parse.
///
/// ```
/// use knowhub_sqlgen::apply_repair;
/// let schema = knowhub_sql::Schema::default();
/// let sql = "SELECT SUM(Total) FROM Sale WHERE YEAR(SaleDate) = 2012";
/// assert_eq!(
///     apply_repair("translate_date_functions", sql, &schema).as_deref(),
///     Some(
///         "SELECT SUM(Total) FROM Sale WHERE CAST(strftime('%Y', SaleDate) AS INTEGER) \
///          = 2012"
///     )
/// );
/// let sql = "SELECT strftime('%Y', d) FROM t";
/// assert_eq!(apply_repair("translate_date_functions", sql, &schema), None);
/// ```
pub(crate) fn translate_date_functions(statement: &mut Statement) -> Option<()> {
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
    let mut translate = Translate { changed: false };
    let _ = statement.visit(&mut translate);
    translate.changed.then_some(())
}

/// The `AND`-ed parts of a condition.
pub(crate) fn conjuncts(e: &mut Expr) -> Vec<&mut Expr> {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            let mut out = conjuncts(left);
            out.extend(conjuncts(right));
            out
        }
        Expr::Nested(inner) => conjuncts(inner),
        other => vec![other],
    }
}

/// Column references a small model qualified with the wrong table, mended where the schema
/// leaves one reading: `T1.Name` when `T1` (`ReadingListBook`) has no `Name` but exactly one
/// other table of the same FROM clause has (or `T1` is no table of the clause at all), becomes
/// that table's `Name`; and a group by an entity's name column it does not have (`GROUP BY
/// Member.Name`, where a member's name is `GivenName` and `FamilyName`) groups by the
/// entity's primary key; a bare column two joined tables have (ambiguous to SQLite) that the
/// join conditions equate is read from the leftmost of them. Only references that would fail
/// are touched. `None` when nothing is changed.
///
/// ```
/// use knowhub_sql::{ColumnInfo, Schema, TableInfo, TableKind};
/// use knowhub_sqlgen::apply_repair;
/// let column = |name: &str, primary_key: u32| ColumnInfo {
///     name: name.into(),
///     decl_type: "TEXT".into(),
///     samples: vec![],
///     values: vec![],
///     primary_key,
/// };
/// let table = |name: &str, columns: Vec<ColumnInfo>| TableInfo {
///     name: name.into(),
///     kind: TableKind::Table,
///     columns,
///     foreign_keys: vec![],
///     row_count: None,
/// };
/// let schema = Schema {
///     tables: vec![
///         table("Member", vec![column("MemberId", 1), column("GivenName", 0)]),
///         table("Sale", vec![column("SaleId", 1), column("MemberId", 0), column("Total", 0)]),
///     ],
/// };
/// assert_eq!(
///     apply_repair(
///         "mend_column_references",
///         "SELECT c.GivenName, SUM(c.Total) FROM Member c JOIN Sale i \
///          ON c.MemberId = i.MemberId GROUP BY c.Name",
///         &schema,
///     )
///     .as_deref(),
///     Some(
///         "SELECT c.GivenName, SUM(i.Total) FROM Member c JOIN Sale i \
///          ON c.MemberId = i.MemberId GROUP BY c.MemberId"
///     )
/// );
/// ```
pub(crate) fn mend_column_references(statement: &mut Statement, schema: &Schema) -> Option<()> {
    let statements = std::slice::from_mut(statement);
    let [Statement::Query(query)] = statements else {
        return None;
    };
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    let [from] = select.from.as_slice() else {
        return None;
    };
    let bound = bind_all(from, schema)?;
    let mut changed = false;
    // A group by a name the entity does not have: by its key.
    if let GroupByExpr::Expressions(keys, _) = &mut select.group_by {
        for key in keys.iter_mut() {
            let Expr::CompoundIdentifier(parts) = key else {
                continue;
            };
            let [qualifier, column] = parts.as_slice() else {
                continue;
            };
            let Some(b) = bound_as(&bound, &qualifier.value) else {
                continue;
            };
            if b.table.column(&column.value).is_none()
                && own_name(b.table, &column.value)
                && let Some(pk) = single_primary_key(b.table)
            {
                *key =
                    Expr::CompoundIdentifier(vec![Ident::new(b.binding.clone()), Ident::new(pk)]);
                changed = true;
            }
        }
    }
    // The columns the join conditions equate (`t.FormatId = m.FormatId`): a bare
    // `FormatId` is ambiguous to SQLite, but has one value on every joined row.
    let mut equated: Vec<(usize, String)> = Vec::new();
    for join in &from.joins {
        let Some(on) = on_condition(&join.join_operator) else {
            continue;
        };
        let mut on = on.clone();
        for condition in conjuncts(&mut on) {
            if let Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } = condition
                && let (Some(l), Some(r)) = (column_of(left, &bound), column_of(right, &bound))
                && l.1.eq_ignore_ascii_case(&r.1)
            {
                equated.push(l);
                equated.push(r);
            }
        }
    }
    let aliases: Vec<String> = select
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.to_ascii_lowercase()),
            _ => None,
        })
        .collect();
    struct Requalify<'a, 's> {
        bound: &'a [Binding<'s>],
        equated: &'a [(usize, String)],
        aliases: &'a [String],
        changed: bool,
    }
    impl VisitorMut for Requalify<'_, '_> {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            if let Expr::Identifier(id) = e {
                // Ambiguous, but equal on every row: the leftmost table's (the kept side of a
                // LEFT JOIN).
                let holders: Vec<(usize, String)> = self
                    .bound
                    .iter()
                    .enumerate()
                    .filter_map(|(i, b)| b.table.column(&id.value).map(|c| (i, c.name.clone())))
                    .collect();
                if holders.len() > 1
                    && !self.aliases.contains(&id.value.to_ascii_lowercase())
                    && holders.iter().all(|h| {
                        self.equated
                            .iter()
                            .any(|q| q.0 == h.0 && q.1.eq_ignore_ascii_case(&h.1))
                    })
                {
                    let (side, column) = &holders[0];
                    *e = Expr::CompoundIdentifier(vec![
                        Ident::new(self.bound[*side].binding.clone()),
                        Ident::new(column.clone()),
                    ]);
                    self.changed = true;
                }
                return ControlFlow::Continue(());
            }
            let Expr::CompoundIdentifier(parts) = e else {
                return ControlFlow::Continue(());
            };
            let [qualifier, column] = parts.as_slice() else {
                return ControlFlow::Continue(());
            };
            // A qualifier that is no table of the FROM clause (`T1.GivenName` in `FROM Sale
            // I JOIN Member C`) fails as surely as a table without the column.
            if bound_as(self.bound, &qualifier.value)
                .is_some_and(|named| named.table.column(&column.value).is_some())
            {
                return ControlFlow::Continue(());
            }
            let holders: Vec<&Binding<'_>> = self
                .bound
                .iter()
                .filter(|b| b.table.column(&column.value).is_some())
                .collect();
            if let [holder] = holders.as_slice()
                && let Some(c) = holder.table.column(&column.value)
            {
                *e = Expr::CompoundIdentifier(vec![
                    Ident::new(holder.binding.clone()),
                    Ident::new(c.name.clone()),
                ]);
                self.changed = true;
            }
            ControlFlow::Continue(())
        }
    }
    let mut requalify = Requalify {
        bound: &bound,
        equated: &equated,
        aliases: &aliases,
        changed: false,
    };
    // Only this SELECT's own clauses: a subquery's qualifiers may name its own tables.
    let mut own: Vec<&mut Expr> = Vec::new();
    for item in select.projection.iter_mut() {
        if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
            own.push(e);
        }
    }
    if let Some(w) = select.selection.as_mut() {
        own.push(w);
    }
    if let GroupByExpr::Expressions(keys, _) = &mut select.group_by {
        own.extend(keys.iter_mut());
    }
    if let Some(h) = select.having.as_mut() {
        own.push(h);
    }
    for e in own {
        if !has_subquery(e) {
            let _ = e.visit(&mut requalify);
        }
    }
    changed |= requalify.changed;
    changed.then_some(())
}

/// The ON condition of an inner or left join (`None` for other joins and `USING`).
pub(crate) fn on_condition(op: &JoinOperator) -> Option<&Expr> {
    match op {
        JoinOperator::Join(JoinConstraint::On(on))
        | JoinOperator::Inner(JoinConstraint::On(on))
        | JoinOperator::Left(JoinConstraint::On(on))
        | JoinOperator::LeftOuter(JoinConstraint::On(on)) => Some(on),
        _ => None,
    }
}

/// Whether `e` contains a subquery.
pub(crate) fn has_subquery(e: &Expr) -> bool {
    struct Finder;
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            ControlFlow::Break(())
        }
    }
    e.visit(&mut Finder).is_break()
}

/// A table's name run into one of its columns, written apart: small models write
/// `ReadingListReadingListId` for `ReadingList.ReadingListId` and `TrackName` for `Chapter.Name` when the
/// statement joins `ReadingList` or `Chapter`. A bare name that is no column of the statement's
/// tables nor an alias it defines, but is a joined table's name followed by one of that table's
/// columns, becomes the qualified column. `None` when nothing is changed.
///
/// ```
/// use knowhub_sql::{ColumnInfo, Schema, TableInfo, TableKind};
/// use knowhub_sqlgen::apply_repair;
/// let column = |name: &str| ColumnInfo {
///     name: name.into(),
///     decl_type: "INTEGER".into(),
///     samples: vec![],
///     values: vec![],
///     primary_key: 0,
/// };
/// let schema = Schema {
///     tables: vec![TableInfo {
///         name: "ReadingList".into(),
///         kind: TableKind::Table,
///         columns: vec![column("ReadingListId"), column("Name")],
///         foreign_keys: vec![],
///         row_count: None,
///     }],
/// };
/// assert_eq!(
///     apply_repair(
///         "split_fused_names",
///         "SELECT p.Name FROM ReadingList p ORDER BY ReadingListReadingListId",
///         &schema
///     )
///     .as_deref(),
///     Some("SELECT p.Name FROM ReadingList p ORDER BY p.ReadingListId")
/// );
/// ```
pub(crate) fn split_fused_names(statement: &mut Statement, schema: &Schema) -> Option<()> {
    struct Names<'s> {
        schema: &'s Schema,
        bound: Vec<(String, &'s TableInfo)>,
        aliases: Vec<String>,
    }
    impl<'s> Visitor for Names<'s> {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            if let Some(b) = Binding::of(factor, self.schema) {
                self.bound.push((b.binding, b.table));
            } else if let TableFactor::Derived {
                alias: Some(alias), ..
            } = factor
            {
                self.aliases.push(alias.name.value.to_ascii_lowercase());
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_select(&mut self, select: &sqlparser::ast::Select) -> ControlFlow<()> {
            for item in &select.projection {
                if let SelectItem::ExprWithAlias { alias, .. } = item {
                    self.aliases.push(alias.value.to_ascii_lowercase());
                }
            }
            ControlFlow::Continue(())
        }
    }
    struct Split<'a, 's> {
        names: &'a Names<'s>,
        changed: bool,
    }
    impl Split<'_, '_> {
        fn qualified(&self, name: &str) -> Option<(String, String)> {
            let lower = name.to_ascii_lowercase();
            let bound = &self.names.bound;
            if self.names.aliases.contains(&lower)
                || bound.iter().any(|(_, t)| t.column(name).is_some())
            {
                return None;
            }
            let mut found = bound.iter().filter_map(|(binding, t)| {
                let rest = lower.strip_prefix(&t.name.to_ascii_lowercase())?;
                let rest = rest.strip_prefix('_').unwrap_or(rest);
                t.column(rest).map(|c| (binding.clone(), c.name.clone()))
            });
            let first = found.next()?;
            found.next().is_none().then_some(first)
        }
    }
    impl VisitorMut for Split<'_, '_> {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            if let Expr::Identifier(ident) = e
                && ident.quote_style.is_none()
                && let Some((binding, column)) = self.qualified(&ident.value)
            {
                *e = Expr::CompoundIdentifier(vec![Ident::new(binding), Ident::new(column)]);
                self.changed = true;
            }
            ControlFlow::Continue(())
        }
    }
    let mut names = Names {
        schema,
        bound: Vec::new(),
        aliases: Vec::new(),
    };
    let _ = Visit::visit(&*statement, &mut names);
    // A table joined twice: which of its bindings was meant is unknown.
    let mut tables: Vec<String> = names
        .bound
        .iter()
        .map(|(_, t)| t.name.to_ascii_lowercase())
        .collect();
    tables.sort();
    tables.dedup();
    if tables.len() != names.bound.len() {
        return None;
    }
    let mut split = Split {
        names: &names,
        changed: false,
    };
    let _ = statement.visit(&mut split);
    split.changed.then_some(())
}

/// The tables of one FROM item (`a JOIN b … JOIN c`), each a different table of `schema`;
/// `None` when one is not a table of the schema (a subquery, a function) or one is joined
/// twice (which binding a name meant is then unknown).
pub(crate) fn bind_all<'s>(from: &TableWithJoins, schema: &'s Schema) -> Option<Vec<Binding<'s>>> {
    let mut bound = vec![Binding::of(&from.relation, schema)?];
    for join in &from.joins {
        bound.push(Binding::of(&join.relation, schema)?);
    }
    let mut names: Vec<String> = bound.iter().map(|b| b.name.to_ascii_lowercase()).collect();
    names.sort();
    names.dedup();
    (names.len() == bound.len()).then_some(bound)
}

/// A table of the FROM clause: the schema's table and the name the statement calls it by.
#[derive(Clone)]
pub(crate) struct Binding<'s> {
    pub(crate) table: &'s TableInfo,
    pub(crate) name: String,
    pub(crate) binding: String,
}

impl<'s> Binding<'s> {
    pub(crate) fn of(factor: &TableFactor, schema: &'s Schema) -> Option<Binding<'s>> {
        let TableFactor::Table {
            name, alias, args, ..
        } = factor
        else {
            return None;
        };
        if args.is_some() {
            return None;
        }
        let [ObjectNamePart::Identifier(table_name)] = name.0.as_slice() else {
            return None;
        };
        let table = schema.table(&table_name.value)?;
        Some(Binding {
            table,
            name: table_name.value.clone(),
            binding: alias
                .as_ref()
                .map_or_else(|| table_name.value.clone(), |a| a.name.value.clone()),
        })
    }
}

/// The bound table a statement calls `qualifier` (alias or name, ASCII-case-insensitive).
fn bound_as<'a, 's>(bound: &'a [Binding<'s>], qualifier: &str) -> Option<&'a Binding<'s>> {
    bound
        .iter()
        .find(|b| b.binding.eq_ignore_ascii_case(qualifier))
}

/// Which bound table (its position) `e` is a column of (`t.c`, or a bare `c` only one of
/// them has), and the column's name as declared.
pub(crate) fn column_of(e: &Expr, bound: &[Binding<'_>]) -> Option<(usize, String)> {
    match e {
        Expr::CompoundIdentifier(parts) => {
            let [qualifier, column] = parts.as_slice() else {
                return None;
            };
            let side = bound
                .iter()
                .position(|b| b.binding.eq_ignore_ascii_case(&qualifier.value))?;
            let c = bound[side].table.column(&column.value)?;
            Some((side, c.name.clone()))
        }
        Expr::Identifier(column) => {
            let found: Vec<(usize, String)> = bound
                .iter()
                .enumerate()
                .filter_map(|(i, b)| b.table.column(&column.value).map(|c| (i, c.name.clone())))
                .collect();
            match found.as_slice() {
                [one] => Some(one.clone()),
                _ => None,
            }
        }
        Expr::Nested(inner) => column_of(inner, bound),
        _ => None,
    }
}

/// Whether every column `e` reads is a column of a bound table whose position `side_ok`
/// accepts. An expression with a subquery does not qualify (a subquery may be correlated:
/// what it reads is not resolved here), nor does a name no bound table resolves.
fn reads_only(e: &Expr, bound: &[Binding<'_>], side_ok: impl Fn(usize) -> bool) -> bool {
    struct Refs(Vec<Expr>);
    impl Visitor for Refs {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            ControlFlow::Break(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) {
                self.0.push(e.clone());
            }
            ControlFlow::Continue(())
        }
    }
    let mut refs = Refs(Vec::new());
    if e.visit(&mut refs).is_break() {
        return false;
    }
    refs.0
        .iter()
        .all(|c| column_of(c, bound).is_some_and(|(side, _)| side_ok(side)))
}

/// Whether `column` is `table`'s own name: `Name`, or the table's name followed by `Name`
/// (`ArtistName` in `Author`, `artist_name` in `authors`).
pub(crate) fn own_name(table: &TableInfo, column: &str) -> bool {
    let words = crate::template::ident_words(column);
    let table_words = crate::template::ident_words(&table.name);
    match words.split_last() {
        Some((last, [])) => last == "name",
        Some((last, rest)) => {
            last == "name"
                && rest.len() == table_words.len()
                && rest
                    .iter()
                    .zip(&table_words)
                    .all(|(w, t)| w == t || format!("{w}s") == *t || format!("{w}es") == *t)
        }
        None => false,
    }
}

/// The column of a one-column primary key.
pub(crate) fn single_primary_key(table: &TableInfo) -> Option<String> {
    let mut keys = table.columns.iter().filter(|c| c.primary_key > 0);
    let key = keys.next()?;
    keys.next().is_none().then(|| key.name.clone())
}

/// The one plain SELECT of a single-statement query (not a set operation); `None` otherwise.
pub(crate) fn only_select(statements: &mut [Statement]) -> Option<&mut sqlparser::ast::Select> {
    let [Statement::Query(query)] = statements else {
        return None;
    };
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    Some(select)
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
                && knowhub_sql::is_aggregate(name.to_string().trim_matches('"'))
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

    fn music() -> Schema {
        use knowhub_sql::{ColumnInfo, TableKind};
        let table = |name: &str, columns: &[(&str, u32)]| TableInfo {
            name: name.into(),
            kind: TableKind::Table,
            columns: columns
                .iter()
                .map(|(c, pk)| ColumnInfo {
                    name: (*c).into(),
                    decl_type: "TEXT".into(),
                    samples: vec![],
                    values: vec![],
                    primary_key: *pk,
                })
                .collect(),
            foreign_keys: vec![],
            row_count: None,
        };
        Schema {
            tables: vec![
                table("Album", &[("AlbumId", 1), ("Title", 0), ("ArtistId", 0)]),
                table("Artist", &[("ArtistId", 1), ("Name", 0)]),
                table("Playlist", &[("PlaylistId", 1), ("Name", 0)]),
                table("PlaylistTrack", &[("PlaylistId", 1), ("TrackId", 2)]),
                table(
                    "Customer",
                    &[
                        ("CustomerId", 1),
                        ("FirstName", 0),
                        ("LastName", 0),
                        ("Country", 0),
                        ("SupportRepId", 0),
                    ],
                ),
                table(
                    "Employee",
                    &[("EmployeeId", 1), ("FirstName", 0), ("LastName", 0)],
                ),
                table(
                    "Invoice",
                    &[("InvoiceId", 1), ("CustomerId", 0), ("Total", 0)],
                ),
                table(
                    "InvoiceLine",
                    &[
                        ("InvoiceLineId", 1),
                        ("InvoiceId", 0),
                        ("TrackId", 0),
                        ("UnitPrice", 0),
                    ],
                ),
                table("Track", &[("TrackId", 1), ("Name", 0), ("AlbumId", 0)]),
            ],
        }
    }

    #[test]
    fn fused_table_and_column_names_are_split() {
        let schema = music();
        for (sql, expected) in [
            (
                "SELECT Playlist.Name, COUNT(*) FROM Playlist JOIN PlaylistTrack ON \
                 PlaylistPlaylistId = PlaylistTrack.PlaylistId GROUP BY PlaylistPlaylistId",
                Some(
                    "SELECT Playlist.Name, COUNT(*) FROM Playlist JOIN PlaylistTrack ON \
                     Playlist.PlaylistId = PlaylistTrack.PlaylistId GROUP BY Playlist.PlaylistId",
                ),
            ),
            // An alias binding, and a snake_case join of the two names.
            (
                "SELECT artist_name FROM Artist a",
                Some("SELECT a.Name FROM Artist a"),
            ),
            // Real columns and aliases the statement defines stay.
            (
                "SELECT Name AS ArtistName FROM Artist ORDER BY ArtistName",
                None,
            ),
            ("SELECT PlaylistId FROM PlaylistTrack", None),
            (
                "SELECT n.ArtistName FROM (SELECT Name AS ArtistName FROM Artist) AS n",
                None,
            ),
            // A table joined twice: which one is unknown.
            (
                "SELECT ArtistName FROM Artist a JOIN Artist b ON a.ArtistId = b.ArtistId",
                None,
            ),
            // The table is not in the statement.
            ("SELECT AlbumTitle FROM Artist", None),
            ("not sql", None),
        ] {
            assert_eq!(
                run(split_fused_names, sql, &schema).as_deref(),
                expected,
                "{sql}"
            );
        }
    }

    #[test]
    fn misqualified_columns_are_mended() {
        let schema = music();
        for (sql, expected) in [
            // The one other table with the column.
            (
                "SELECT T2.Country, SUM(T1.Total) FROM Invoice AS T1 JOIN Customer AS T2 ON \
                 T1.CustomerId = T2.CustomerId WHERE T1.Country = 'Brazil' GROUP BY T2.Country",
                Some(
                    "SELECT T2.Country, SUM(T1.Total) FROM Invoice AS T1 JOIN Customer AS T2 ON \
                     T1.CustomerId = T2.CustomerId WHERE T2.Country = 'Brazil' GROUP BY \
                     T2.Country",
                ),
            ),
            // Grouped by a name the entity does not have.
            (
                "SELECT Customer.FirstName, SUM(Invoice.Total) FROM Invoice JOIN Customer ON \
                 Invoice.CustomerId = Customer.CustomerId GROUP BY Customer.Name",
                Some(
                    "SELECT Customer.FirstName, SUM(Invoice.Total) FROM Invoice JOIN Customer ON \
                     Invoice.CustomerId = Customer.CustomerId GROUP BY Customer.CustomerId",
                ),
            ),
            // A qualifier that is no table of the FROM clause.
            (
                "SELECT T1.FirstName, SUM(I.Total) FROM Invoice I JOIN Customer C ON \
                 I.CustomerId = C.CustomerId GROUP BY C.CustomerId",
                Some(
                    "SELECT C.FirstName, SUM(I.Total) FROM Invoice I JOIN Customer C ON \
                     I.CustomerId = C.CustomerId GROUP BY C.CustomerId",
                ),
            ),
            (
                "SELECT Customer.FirstName FROM Customer c",
                Some("SELECT c.FirstName FROM Customer c"),
            ),
            // A bare column two joined tables have, equal on every row by the join.
            (
                "SELECT a.Name, COUNT(*) FROM Album b LEFT JOIN Artist a ON b.ArtistId = \
                 a.ArtistId GROUP BY ArtistId",
                Some(
                    "SELECT a.Name, COUNT(*) FROM Album b LEFT JOIN Artist a ON b.ArtistId = \
                     a.ArtistId GROUP BY b.ArtistId",
                ),
            ),
            // … but not when the join does not equate them, or the name is an alias.
            (
                "SELECT Name FROM Artist a JOIN Playlist p ON a.ArtistId = p.PlaylistId",
                None,
            ),
            (
                "SELECT b.ArtistId AS ArtistId, COUNT(*) FROM Album b JOIN Artist a ON \
                 b.ArtistId = a.ArtistId GROUP BY ArtistId",
                None,
            ),
            // Both tables have it, or neither: left for the retry's hint.
            (
                "SELECT a.Title FROM Artist a JOIN Playlist p ON a.ArtistId = p.PlaylistId",
                None,
            ),
            (
                "SELECT pt.Name FROM PlaylistTrack pt JOIN Playlist p ON pt.PlaylistId = \
                 p.PlaylistId JOIN Artist a ON a.ArtistId = pt.TrackId",
                None,
            ),
            // Correct references, and expressions with subqueries, stay.
            (
                "SELECT c.FirstName FROM Customer c JOIN Invoice i ON c.CustomerId = \
                 i.CustomerId",
                None,
            ),
            (
                "SELECT c.FirstName FROM Customer c JOIN Invoice i ON c.CustomerId = \
                 i.CustomerId WHERE c.Total > (SELECT AVG(x.Total) FROM Invoice x)",
                None,
            ),
            ("not sql", None),
        ] {
            assert_eq!(
                run(mend_column_references, sql, &schema).as_deref(),
                expected,
                "{sql}"
            );
        }
    }

    #[test]
    fn own_name_columns() {
        let schema = music();
        let artist = schema.table("Artist").unwrap();
        for (column, expected) in [
            ("Name", true),
            ("ArtistName", true),
            ("artist_name", true),
            ("FirstName", false),
            ("Title", false),
        ] {
            assert_eq!(own_name(artist, column), expected, "{column}");
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
            assert_eq!(
                run(|s, _| translate_date_functions(s), sql, &Schema::default()).as_deref(),
                expected,
                "{sql}"
            );
        }
    }

    #[test]
    fn ranked_rows_are_grouped() {
        let schema = music();
        for (sql, expected) in [
            (
                "SELECT Playlist.Name FROM Playlist JOIN PlaylistTrack ON Playlist.PlaylistId = \
                 PlaylistTrack.PlaylistId ORDER BY COUNT(PlaylistTrack.TrackId) DESC LIMIT 1",
                Some(
                    "SELECT Playlist.Name FROM Playlist JOIN PlaylistTrack ON \
                     Playlist.PlaylistId = PlaylistTrack.PlaylistId GROUP BY \
                     Playlist.PlaylistId ORDER BY COUNT(PlaylistTrack.TrackId) DESC LIMIT 1",
                ),
            ),
            // Grouped or aggregated already; columns of two tables; no aggregate order.
            (
                "SELECT a.Name FROM Artist a JOIN Album b ON a.ArtistId = b.ArtistId GROUP BY \
                 a.ArtistId ORDER BY COUNT(*) DESC",
                None,
            ),
            (
                "SELECT COUNT(*) FROM Artist a JOIN Album b ON a.ArtistId = b.ArtistId ORDER BY \
                 COUNT(*) DESC",
                None,
            ),
            (
                "SELECT a.Name, b.Title FROM Artist a JOIN Album b ON a.ArtistId = b.ArtistId \
                 ORDER BY COUNT(*) DESC",
                None,
            ),
            (
                "SELECT a.Name FROM Artist a JOIN Album b ON a.ArtistId = b.ArtistId ORDER BY \
                 a.Name",
                None,
            ),
            // One table: nothing joined to aggregate over.
            ("SELECT Name FROM Artist ORDER BY COUNT(*) DESC", None),
            ("not sql", None),
        ] {
            assert_eq!(
                run(group_the_ranked_rows, sql, &schema).as_deref(),
                expected,
                "{sql}"
            );
        }
    }
}
