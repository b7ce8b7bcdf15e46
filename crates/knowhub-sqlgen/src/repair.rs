//! Rewrites of a model's statement that make its answer say more, never less. They run before
//! [`crate::validate`], which checks the result like any other statement.

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, Ident,
    JoinConstraint, JoinOperator, ObjectNamePart, OrderByKind, Query, SelectItem, SetExpr,
    Statement, TableFactor, TableWithJoins, Visit, VisitMut, Visitor, VisitorMut,
};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

use crate::schema::{Schema, TableInfo};

/// Aggregate functions of SQLite.
pub(crate) const AGGREGATES: &[&str] =
    &["count", "sum", "avg", "min", "max", "total", "group_concat"];

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

/// The measure a group filter tests, shown beside the groups that pass it: `SELECT t.Name …
/// GROUP BY t.TrackId HAVING COUNT(pt.PlaylistId) > 1` answers "tracks in more than one
/// playlist" with names only, and the reader cannot see that one is in five playlists. Each
/// aggregate a `HAVING` comparison tests (its aggregate side, not a subquery it is compared
/// with) is added to the selected columns when it is not shown yet, by expression or alias.
///
/// Left alone (`None`): anything but one plain grouped SELECT with a `HAVING`, `SELECT
/// DISTINCT` (a new column would change which rows are distinct), and a `HAVING` that is not
/// comparisons joined by `AND`.
///
/// ```
/// use knowhub_sql::show_filter_measure;
/// assert_eq!(
///     show_filter_measure(
///         "SELECT a.Title FROM Album a JOIN Track t ON t.AlbumId = a.AlbumId \
///          GROUP BY a.AlbumId HAVING COUNT(t.TrackId) > 20"
///     )
///     .as_deref(),
///     Some(
///         "SELECT a.Title, COUNT(t.TrackId) FROM Album a JOIN Track t ON t.AlbumId = a.AlbumId \
///          GROUP BY a.AlbumId HAVING COUNT(t.TrackId) > 20"
///     )
/// );
/// assert_eq!(show_filter_measure("SELECT Name FROM Track WHERE Milliseconds > 1000"), None);
/// ```
pub fn show_filter_measure(sql: &str) -> Option<String> {
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    let select = only_select(&mut statements)?;
    if select.distinct.is_some() {
        return None;
    }
    let mut measures = Vec::new();
    tested_aggregates(select.having.as_ref()?, &mut measures)?;
    let key = |e: &Expr| e.to_string().to_ascii_lowercase();
    let mut shown: Vec<String> = Vec::new();
    for item in &select.projection {
        match item {
            SelectItem::UnnamedExpr(e) => shown.push(key(e)),
            SelectItem::ExprWithAlias { expr, alias } => {
                shown.push(key(expr));
                shown.push(alias.value.to_ascii_lowercase());
            }
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {}
            SelectItem::ExprWithAliases { .. } => return None,
        }
    }
    let mut added = false;
    for measure in measures {
        let k = key(&measure);
        if !shown.contains(&k) {
            shown.push(k);
            select.projection.push(SelectItem::UnnamedExpr(measure));
            added = true;
        }
    }
    added.then(|| statements[0].to_string())
}

/// The aggregate sides of the comparisons in `having` (comparisons joined by `AND`), into
/// `out`; `None` for any other shape.
fn tested_aggregates(having: &Expr, out: &mut Vec<Expr>) -> Option<()> {
    match having {
        Expr::Nested(inner) => tested_aggregates(inner, out),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            tested_aggregates(left, out)?;
            tested_aggregates(right, out)
        }
        Expr::BinaryOp {
            left,
            op:
                BinaryOperator::Gt
                | BinaryOperator::GtEq
                | BinaryOperator::Lt
                | BinaryOperator::LtEq
                | BinaryOperator::Eq
                | BinaryOperator::NotEq,
            right,
        } => {
            for side in [left, right] {
                if has_aggregate(side) {
                    out.push(side.as_ref().clone());
                }
            }
            Some(())
        }
        Expr::Between { expr, .. } if has_aggregate(expr) => {
            out.push(expr.as_ref().clone());
            Some(())
        }
        _ => None,
    }
}

/// A person's name shown as one column: `SELECT c.FirstName, c.LastName, SUM(i.Total) …`
/// becomes `SELECT c.FirstName || ' ' || c.LastName AS CustomerName, SUM(i.Total) …`, the way
/// a person's name is read (and written in the prompt's worked examples). Two selected
/// columns side by side, of the same table, named first and last (or given and family) name,
/// become one; the alias is the table's name and "name" in the schema's style.
///
/// Left alone (`None`): anything but one plain SELECT, `SELECT DISTINCT` with other columns,
/// parts in the other order or apart, and names not resolved against `schema`. The caller
/// decides whether the question asked for the parts ("first and last names").
///
/// ```
/// use knowhub_sql::{ColumnInfo, Schema, TableInfo, TableKind, join_name_parts};
/// let column = |name: &str| ColumnInfo {
///     name: name.into(),
///     decl_type: "TEXT".into(),
///     samples: vec![],
///     values: vec![],
///     primary_key: 0,
/// };
/// let schema = Schema {
///     tables: vec![TableInfo {
///         name: "Customer".into(),
///         kind: TableKind::Table,
///         columns: vec![column("FirstName"), column("LastName"), column("Country")],
///         foreign_keys: vec![],
///         row_count: None,
///     }],
/// };
/// assert_eq!(
///     join_name_parts("SELECT FirstName, LastName, Country FROM Customer", &schema).as_deref(),
///     Some("SELECT FirstName || ' ' || LastName AS CustomerName, Country FROM Customer")
/// );
/// ```
pub fn join_name_parts(sql: &str, schema: &Schema) -> Option<String> {
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    let select = only_select(&mut statements)?;
    let [from] = select.from.as_slice() else {
        return None;
    };
    let bound = bind_all(from, schema)?;
    let flat = |c: &str| c.replace('_', "").to_ascii_lowercase();
    let part = |item: &SelectItem| match item {
        SelectItem::UnnamedExpr(e) => column_of(e, &bound).map(|(side, c)| (side, c, e.clone())),
        _ => None,
    };
    let mut changed = false;
    let mut i = 0;
    while i + 1 < select.projection.len() {
        let (Some((a_side, a_col, a)), Some((b_side, b_col, b))) =
            (part(&select.projection[i]), part(&select.projection[i + 1]))
        else {
            i += 1;
            continue;
        };
        let pair = (flat(&a_col), flat(&b_col));
        let is_name = matches!(
            (pair.0.as_str(), pair.1.as_str()),
            ("firstname", "lastname")
                | ("givenname", "familyname")
                | ("givenname", "surname")
                | ("firstname", "surname")
        );
        if a_side != b_side || !is_name {
            i += 1;
            continue;
        }
        let table = &bound[a_side].name;
        let alias = if a_col.contains('_') {
            format!("{}_name", table.to_ascii_lowercase())
        } else {
            format!("{table}Name")
        };
        let joined = Expr::BinaryOp {
            left: Box::new(Expr::BinaryOp {
                left: Box::new(a),
                op: BinaryOperator::StringConcat,
                right: Box::new(Expr::Value(
                    sqlparser::ast::Value::SingleQuotedString(" ".into()).into(),
                )),
            }),
            op: BinaryOperator::StringConcat,
            right: Box::new(b),
        };
        select.projection[i] = SelectItem::ExprWithAlias {
            expr: joined,
            alias: Ident::new(alias),
        };
        select.projection.remove(i + 1);
        changed = true;
        i += 1;
    }
    if changed && select.distinct.is_some() && select.projection.len() > 1 {
        return None;
    }
    changed.then(|| statements[0].to_string())
}

/// A listed column the statement's own filter pins to one value says nothing: "Show all
/// tracks in the 'Music' playlist" answered with `SELECT p.Name FROM Playlist p JOIN … Track t
/// … WHERE p.Name = 'Music'` lists "Music" once per track. When the one selected column is
/// compared for equality with a constant in the `WHERE` (at its top level, under `AND`), and
/// exactly one other joined table among `asked` (the tables the question names, by name) has a
/// column of the same name, that table's column is shown instead.
///
/// Left alone (`None`): anything but one plain SELECT over joined tables resolved against
/// `schema`, more than one selected column, and no single table to show instead.
///
/// ```
/// use knowhub_sql::{ColumnInfo, Schema, TableInfo, TableKind, show_the_unpinned_column};
/// let column = |name: &str| ColumnInfo {
///     name: name.into(),
///     decl_type: "TEXT".into(),
///     samples: vec![],
///     values: vec![],
///     primary_key: 0,
/// };
/// let table = |name: &str, columns: &[&str]| TableInfo {
///     name: name.into(),
///     kind: TableKind::Table,
///     columns: columns.iter().map(|c| column(c)).collect(),
///     foreign_keys: vec![],
///     row_count: None,
/// };
/// let schema = Schema {
///     tables: vec![
///         table("Playlist", &["PlaylistId", "Name"]),
///         table("Track", &["TrackId", "PlaylistId", "Name"]),
///     ],
/// };
/// assert_eq!(
///     show_the_unpinned_column(
///         "SELECT p.Name FROM Playlist p JOIN Track t ON t.PlaylistId = p.PlaylistId \
///          WHERE p.Name = 'Music'",
///         &schema,
///         &["Track", "Playlist"],
///     )
///     .as_deref(),
///     Some(
///         "SELECT t.Name FROM Playlist p JOIN Track t ON t.PlaylistId = p.PlaylistId \
///          WHERE p.Name = 'Music'"
///     )
/// );
/// ```
pub fn show_the_unpinned_column(sql: &str, schema: &Schema, asked: &[&str]) -> Option<String> {
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    let select = only_select(&mut statements)?;
    let [from] = select.from.as_slice() else {
        return None;
    };
    if from.joins.is_empty() {
        return None;
    }
    let bound = bind_all(from, schema)?;
    let [SelectItem::UnnamedExpr(shown) | SelectItem::ExprWithAlias { expr: shown, .. }] =
        select.projection.as_slice()
    else {
        return None;
    };
    let (side, column) = column_of(shown, &bound)?;
    let mut filter = select.selection.clone()?;
    let pinned = conjuncts(&mut filter).into_iter().any(|c| match c {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } => {
            let is_shown = |e: &Expr| column_of(e, &bound) == Some((side, column.clone()));
            (is_shown(left) && literal(right)) || (is_shown(right) && literal(left))
        }
        _ => false,
    });
    if !pinned {
        return None;
    }
    let others: Vec<&Binding<'_>> = bound
        .iter()
        .enumerate()
        .filter(|(i, b)| {
            *i != side
                && asked.iter().any(|a| a.eq_ignore_ascii_case(&b.name))
                && b.table.column(&column).is_some()
        })
        .map(|(_, b)| b)
        .collect();
    let [other] = others.as_slice() else {
        return None;
    };
    let replacement =
        Expr::CompoundIdentifier(vec![Ident::new(other.binding.clone()), Ident::new(column)]);
    match &mut select.projection[0] {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
            *e = replacement;
        }
        _ => return None,
    }
    Some(statements[0].to_string())
}

/// Groups labelled by what they are, not by a key: "total sales made by each sales agent"
/// answered with `SELECT c.SupportRepId, SUM(i.Total) … GROUP BY c.SupportRepId` shows 3, 4, 5
/// where the reader wants the agents' names. When a statement groups by one column that is a
/// declared foreign key and shows it, the referenced table is joined (outer, so a group with
/// no reference stays) and its name is shown instead: its own name column (`Name`,
/// `ArtistName`), else its first and last name joined. The grouping stays by the key, so two
/// agents of the same name stay apart.
///
/// Left alone (`None`): anything but one plain SELECT resolved against `schema`, `DISTINCT`,
/// other groupings, a referenced table joined already, and a table without a name column.
///
/// ```
/// use knowhub_sql::{ColumnInfo, ForeignKey, Schema, TableInfo, TableKind, name_the_group_keys};
/// let column = |name: &str, primary_key: u32| ColumnInfo {
///     name: name.into(),
///     decl_type: "TEXT".into(),
///     samples: vec![],
///     values: vec![],
///     primary_key,
/// };
/// let schema = Schema {
///     tables: vec![
///         TableInfo {
///             name: "Artist".into(),
///             kind: TableKind::Table,
///             columns: vec![column("ArtistId", 1), column("Name", 0)],
///             foreign_keys: vec![],
///             row_count: None,
///         },
///         TableInfo {
///             name: "Album".into(),
///             kind: TableKind::Table,
///             columns: vec![column("AlbumId", 1), column("ArtistId", 0)],
///             foreign_keys: vec![ForeignKey {
///                 columns: vec!["ArtistId".into()],
///                 ref_table: "Artist".into(),
///                 ref_columns: vec!["ArtistId".into()],
///             }],
///             row_count: None,
///         },
///     ],
/// };
/// assert_eq!(
///     name_the_group_keys(
///         "SELECT ArtistId, COUNT(*) FROM Album GROUP BY ArtistId",
///         &schema
///     )
///     .as_deref(),
///     Some(
///         "SELECT Artist.Name AS ArtistName, COUNT(*) FROM Album LEFT JOIN Artist ON \
///          Album.ArtistId = Artist.ArtistId GROUP BY ArtistId"
///     )
/// );
/// ```
pub fn name_the_group_keys(sql: &str, schema: &Schema) -> Option<String> {
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    let select = only_select(&mut statements)?;
    if select.distinct.is_some() {
        return None;
    }
    let [from] = select.from.as_slice() else {
        return None;
    };
    let bound = bind_all(from, schema)?;
    let GroupByExpr::Expressions(groups, _) = &select.group_by else {
        return None;
    };
    let [group] = groups.as_slice() else {
        return None;
    };
    let (side, column) = column_of(group, &bound)?;
    let holder = &bound[side];
    let fk = holder
        .table
        .foreign_keys
        .iter()
        .find(|fk| fk.columns.len() == 1 && fk.columns[0].eq_ignore_ascii_case(&column))?;
    let target = schema.table(&fk.ref_table)?;
    if bound.iter().any(|b| {
        b.name.eq_ignore_ascii_case(&target.name) || b.binding.eq_ignore_ascii_case(&target.name)
    }) {
        return None;
    }
    let target_key = match fk.ref_columns.as_slice() {
        [one] => one.clone(),
        _ => single_primary_key(target)?,
    };
    let position = select.projection.iter().position(|item| match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
            column_of(e, &bound) == Some((side, column.clone()))
        }
        _ => false,
    })?;
    let t = &target.name;
    let snake = target.columns.iter().any(|c| c.name.contains('_'));
    let name_sql = name_expression(target, t)?;
    let alias = if snake {
        format!("{}_name", t.to_ascii_lowercase())
    } else {
        format!("{t}Name")
    };
    // Parse the new pieces rather than build sqlparser's structs field by field.
    let holder_ref = format!("{}.{}", holder.binding, column);
    let piece = format!(
        "SELECT {name_sql} AS {alias} FROM x LEFT JOIN {t} ON {holder_ref} = {t}.{target_key}"
    );
    let mut parsed = Parser::parse_sql(&SQLiteDialect {}, &piece).ok()?;
    let Some(Statement::Query(piece)) = parsed.pop() else {
        return None;
    };
    let SetExpr::Select(piece) = *piece.body else {
        return None;
    };
    let item = piece.projection.into_iter().next()?;
    let join = piece.from.into_iter().next()?.joins.into_iter().next()?;
    select.projection[position] = item;
    select.from[0].joins.push(join);
    Some(statements[0].to_string())
}

/// Groups by the rows' key, not their name: `GROUP BY t.Name` of a joined table puts different
/// rows that share a name (two tracks called "Untitled", two albums called "Greatest Hits")
/// into one group, so "the 5 most purchased tracks" adds up the sales of every track with the
/// same title. The name (`Name` or `<Table>Name`) of a table with a one-column primary key
/// gives way to that key in the GROUP BY; the name stays shown (SQLite takes a grouped
/// row's column as it is). Only over joins: grouping one table's own rows by their name is a
/// question about the names.
///
/// `None` when nothing changes: the key is grouped already, the name is an alias of the
/// selected columns, or the statement is not one plain SELECT over tables of `schema`.
///
/// ```
/// use knowhub_sql::{ColumnInfo, Schema, TableInfo, TableKind, group_by_row_key};
/// let table = |name: &str, columns: &[(&str, u32)]| TableInfo {
///     name: name.into(),
///     kind: TableKind::Table,
///     columns: columns
///         .iter()
///         .map(|(c, pk)| ColumnInfo {
///             name: (*c).into(),
///             decl_type: "TEXT".into(),
///             samples: vec![],
///             values: vec![],
///             primary_key: *pk,
///         })
///         .collect(),
///     foreign_keys: vec![],
///     row_count: None,
/// };
/// let schema = Schema {
///     tables: vec![
///         table("Track", &[("TrackId", 1), ("Name", 0)]),
///         table("Sale", &[("SaleId", 1), ("TrackId", 0), ("Quantity", 0)]),
///     ],
/// };
/// assert_eq!(
///     group_by_row_key(
///         "SELECT t.Name, SUM(s.Quantity) FROM Track t JOIN Sale s ON s.TrackId = t.TrackId \
///          GROUP BY t.Name ORDER BY 2 DESC LIMIT 5",
///         &schema
///     )
///     .as_deref(),
///     Some(
///         "SELECT t.Name, SUM(s.Quantity) FROM Track t JOIN Sale s ON s.TrackId = t.TrackId \
///          GROUP BY t.TrackId ORDER BY 2 DESC LIMIT 5"
///     )
/// );
/// ```
pub fn group_by_row_key(sql: &str, schema: &Schema) -> Option<String> {
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    let select = only_select(&mut statements)?;
    let [from] = select.from.as_slice() else {
        return None;
    };
    let bound = bind_all(from, schema)?;
    if bound.len() < 2 {
        return None;
    }
    let aliases: Vec<String> = select
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.to_ascii_lowercase()),
            _ => None,
        })
        .collect();
    let GroupByExpr::Expressions(groups, _) = &mut select.group_by else {
        return None;
    };
    let grouped: Vec<Option<(usize, String)>> =
        groups.iter().map(|g| column_of(g, &bound)).collect();
    let mut changed = false;
    for (group, resolved) in groups.iter_mut().zip(&grouped) {
        let Some((side, column)) = resolved else {
            continue;
        };
        if let Expr::Identifier(id) = &*group
            && aliases.contains(&id.value.to_ascii_lowercase())
        {
            continue;
        }
        let table = bound[*side].table;
        // Not a bare `Title`: an employee's title is a job title, shared on purpose.
        if !own_name(table, column) {
            continue;
        }
        let Some(key) = single_primary_key(table) else {
            continue;
        };
        if grouped
            .iter()
            .flatten()
            .any(|(s, c)| s == side && c.eq_ignore_ascii_case(&key))
        {
            continue;
        }
        *group = Expr::CompoundIdentifier(vec![
            Ident::new(bound[*side].binding.clone()),
            Ident::new(key),
        ]);
        changed = true;
    }
    changed.then(|| statements[0].to_string())
}

/// Rows ranked by an aggregate but never grouped: `SELECT p.Name FROM Playlist p JOIN … JOIN
/// Track t … ORDER BY SUM(t.Milliseconds) DESC LIMIT 1` fails ("misuse of aggregate"), since
/// there are no groups to sum over. When every selected column is one joined table's, that
/// table's rows are what is ranked: the statement groups by its one-column primary key.
/// `None` when the statement is grouped or aggregated already, selects from several tables,
/// orders by no aggregate, or is not one plain SELECT over joined tables of `schema`.
///
/// ```
/// use knowhub_sql::{ColumnInfo, Schema, TableInfo, TableKind, group_the_ranked_rows};
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
///         table("Playlist", &["PlaylistId", "Name"]),
///         table("Song", &["SongId", "PlaylistId", "Milliseconds"]),
///     ],
/// };
/// assert_eq!(
///     group_the_ranked_rows(
///         "SELECT p.Name FROM Playlist p JOIN Song s ON s.PlaylistId = p.PlaylistId \
///          ORDER BY SUM(s.Milliseconds) DESC LIMIT 1",
///         &schema
///     )
///     .as_deref(),
///     Some(
///         "SELECT p.Name FROM Playlist p JOIN Song s ON s.PlaylistId = p.PlaylistId \
///          GROUP BY p.PlaylistId ORDER BY SUM(s.Milliseconds) DESC LIMIT 1"
///     )
/// );
/// ```
pub fn group_the_ranked_rows(sql: &str, schema: &Schema) -> Option<String> {
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    let [Statement::Query(query)] = statements.as_mut_slice() else {
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
    Some(statements[0].to_string())
}

/// A comparison with a subquery's rows, not its first row: `WHERE PlaylistId = (SELECT
/// PlaylistId FROM Playlist WHERE Name = 'Music')` keeps the tracks of one of the two "Music"
/// playlists, since SQLite takes the first row of a scalar subquery and drops the rest. `=`
/// becomes `IN` and `<>` `NOT IN`, which mean the same for a subquery of one row or none and
/// keep every match otherwise. Left alone: a subquery that keeps one row itself (`LIMIT 1`),
/// or one that aggregates without grouping (one row always). `None` when nothing changes.
///
/// ```
/// use knowhub_sql::compare_with_every_match;
/// assert_eq!(
///     compare_with_every_match(
///         "SELECT * FROM PlaylistTrack WHERE PlaylistId = \
///          (SELECT PlaylistId FROM Playlist WHERE Name = 'Music')"
///     )
///     .as_deref(),
///     Some(
///         "SELECT * FROM PlaylistTrack WHERE PlaylistId IN \
///          (SELECT PlaylistId FROM Playlist WHERE Name = 'Music')"
///     )
/// );
/// assert_eq!(
///     compare_with_every_match("SELECT * FROM Track WHERE Milliseconds = (SELECT MAX(Milliseconds) FROM Track)"),
///     None
/// );
/// ```
pub fn compare_with_every_match(sql: &str) -> Option<String> {
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    if statements.len() != 1 {
        return None;
    }
    /// Whether the subquery can return more than one row.
    fn many_rows(q: &Query) -> bool {
        if q.limit_clause.is_some() {
            return false;
        }
        let SetExpr::Select(select) = q.body.as_ref() else {
            return true;
        };
        let grouped = !matches!(&select.group_by, GroupByExpr::Expressions(g, _) if g.is_empty());
        let aggregated = select.projection.iter().any(|item| match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                has_aggregate(e)
            }
            _ => false,
        });
        grouped || !aggregated
    }
    let mut changed = false;
    let _ = sqlparser::ast::visit_expressions_mut(&mut statements, |e| {
        if let Expr::BinaryOp { left, op, right } = e
            && matches!(op, BinaryOperator::Eq | BinaryOperator::NotEq)
        {
            let negated = matches!(op, BinaryOperator::NotEq);
            let (value, query) = match (left.as_ref(), right.as_ref()) {
                (v, Expr::Subquery(q)) if !matches!(v, Expr::Subquery(_)) => (v.clone(), q.clone()),
                (Expr::Subquery(q), v) if !matches!(v, Expr::Subquery(_)) => (v.clone(), q.clone()),
                _ => return ControlFlow::<()>::Continue(()),
            };
            if many_rows(&query) {
                *e = Expr::InSubquery {
                    expr: Box::new(value),
                    subquery: query,
                    negated,
                };
                changed = true;
            }
        }
        ControlFlow::Continue(())
    });
    changed.then(|| statements[0].to_string())
}

/// A name shown under an alias that says so, read from a column that is not one: `SELECT
/// c.Company AS CustomerName` (the customer's company for the customer's name). When the alias
/// is the table's name followed by `Name` (`CustomerName` for `Customer`; a bare `Name` may
/// mean the column's own: `Composer AS Name`) and the column is none of the table's names, the table's name is shown instead: its own `Name`/`<Table>Name` column,
/// or its first and last names joined. `None` when nothing changes or the statement is not
/// one plain SELECT over tables of `schema`.
///
/// ```
/// use knowhub_sql::{ColumnInfo, Schema, TableInfo, TableKind, show_the_named_name};
/// let table = |name: &str, columns: &[&str]| TableInfo {
///     name: name.into(),
///     kind: TableKind::Table,
///     columns: columns
///         .iter()
///         .map(|c| ColumnInfo {
///             name: (*c).into(),
///             decl_type: "TEXT".into(),
///             samples: vec![],
///             values: vec![],
///             primary_key: u32::from(c.ends_with("Id")),
///         })
///         .collect(),
///     foreign_keys: vec![],
///     row_count: None,
/// };
/// let schema = Schema {
///     tables: vec![table(
///         "Customer",
///         &["CustomerId", "FirstName", "LastName", "Company"],
///     )],
/// };
/// assert_eq!(
///     show_the_named_name("SELECT c.Company AS CustomerName FROM Customer c", &schema)
///         .as_deref(),
///     Some("SELECT c.FirstName || ' ' || c.LastName AS CustomerName FROM Customer c")
/// );
/// assert_eq!(
///     show_the_named_name("SELECT c.Company AS Employer FROM Customer c", &schema),
///     None
/// );
/// ```
pub fn show_the_named_name(sql: &str, schema: &Schema) -> Option<String> {
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    let select = only_select(&mut statements)?;
    let [from] = select.from.as_slice() else {
        return None;
    };
    let bound = bind_all(from, schema)?;
    let mut changed = false;
    for item in &mut select.projection {
        let SelectItem::ExprWithAlias { expr, alias } = item else {
            continue;
        };
        let Some((side, column)) = column_of(expr, &bound) else {
            continue;
        };
        let b = &bound[side];
        // `<Table>Name`, not a bare `Name`: `Composer AS Name` may well mean the composer's.
        if !own_name(b.table, &alias.value)
            || crate::template::ident_words(&alias.value).len() < 2
            || is_a_name(&column)
        {
            continue;
        }
        let Some(name) = name_expression(b.table, &b.binding) else {
            continue;
        };
        let mut parsed = Parser::new(&SQLiteDialect {})
            .try_with_sql(&name)
            .ok()?
            .parse_expr()
            .ok()?;
        std::mem::swap(expr, &mut parsed);
        changed = true;
    }
    changed.then(|| statements[0].to_string())
}

/// Whether a column's name says it holds a name or part of one (`Name`, `FirstName`,
/// `last_name`, `Title`).
fn is_a_name(column: &str) -> bool {
    crate::template::ident_words(column)
        .last()
        .is_some_and(|w| w == "name" || w == "title")
}

/// The SQL that shows a row of `table` (called `binding`) by name: its own name column, or
/// its first and last names joined with a space.
fn name_expression(table: &TableInfo, binding: &str) -> Option<String> {
    if let Some(c) = table.columns.iter().find(|c| own_name(table, &c.name)) {
        return Some(format!("{binding}.{}", c.name));
    }
    let flat = |c: &str| c.replace('_', "").to_ascii_lowercase();
    let first = table
        .columns
        .iter()
        .find(|c| flat(&c.name) == "firstname")?;
    let last = table.columns.iter().find(|c| flat(&c.name) == "lastname")?;
    Some(format!(
        "{binding}.{} || ' ' || {binding}.{}",
        first.name, last.name
    ))
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

/// Counts per entity that keep the entities with none, and count per entity rather than per
/// name. Asked "how many albums does each artist have?", small models write `FROM Artist JOIN
/// Album … GROUP BY Artist.Name`: the inner join drops the artists with no album (whose answer
/// is 0) and grouping by name merges two playlists both called "Music". A statement of that
/// shape — one plain SELECT over two tables joined on one equality, grouped by columns of one
/// of them (the entity), showing that table's columns and `COUNT` of the other's rows — becomes
/// a `LEFT JOIN` from the entity's table, `COUNT(*)` counts the joined table's join column (so an
/// entity with no rows counts 0, not 1), and a group by the entity's own name column (`Name`,
/// `ArtistName` in `Artist`) becomes a group by its primary key. Through a chain of more
/// tables (`Playlist JOIN PlaylistTrack … JOIN Track`, counting `Track.TrackId`) every join
/// becomes a `LEFT JOIN` when the entity leads the chain and the counts name their column.
///
/// Left alone (`None`): other aggregates (a sum over no rows is NULL, not 0), a count of the
/// entity's own column (`COUNT(DISTINCT c.CustomerId)` counts entities, which the outer join
/// would change), a WHERE that reads a joined table (it filters on the joined rows), a chain
/// the entity does not lead or that counts `*`, outer or self joins, and anything not resolved
/// against `schema`.
///
/// ```
/// use knowhub_sql::{ColumnInfo, Schema, TableInfo, TableKind, count_every_group};
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
///         table("Album", vec![column("AlbumId", 1), column("Title", 0), column("ArtistId", 0)]),
///         table("Artist", vec![column("ArtistId", 1), column("Name", 0)]),
///     ],
/// };
/// assert_eq!(
///     count_every_group(
///         "SELECT ar.Name, COUNT(*) FROM Album al JOIN Artist ar ON al.ArtistId = ar.ArtistId \
///          GROUP BY ar.Name",
///         &schema,
///     )
///     .as_deref(),
///     Some(
///         "SELECT ar.Name, COUNT(al.ArtistId) FROM Artist ar LEFT JOIN Album al ON al.ArtistId = \
///          ar.ArtistId GROUP BY ar.ArtistId"
///     )
/// );
/// ```
pub fn count_every_group(sql: &str, schema: &Schema) -> Option<String> {
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    let [Statement::Query(query)] = statements.as_mut_slice() else {
        return None;
    };
    if query.with.is_some() {
        return None;
    }
    let order_by = query.order_by.as_mut();
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    let [from] = select.from.as_mut_slice() else {
        return None;
    };
    let mut conditions = Vec::new();
    for join in &from.joins {
        match &join.join_operator {
            JoinOperator::Join(JoinConstraint::On(on))
            | JoinOperator::Inner(JoinConstraint::On(on)) => conditions.push(on.clone()),
            _ => return None,
        }
    }
    let bound = bind_all(from, schema)?;
    if bound.len() < 2 {
        return None;
    }
    let resolve = |e: &Expr| column_of(e, &bound);
    // The entity: the one table every GROUP BY expression is a column of.
    let GroupByExpr::Expressions(keys, modifiers) = &select.group_by else {
        return None;
    };
    if keys.is_empty() || !modifiers.is_empty() {
        return None;
    }
    let entity = {
        let sides: Vec<usize> = keys
            .iter()
            .map(|k| resolve(k).map(|(side, _)| side))
            .collect::<Option<_>>()?;
        let first = *sides.first()?;
        sides.iter().all(|&s| s == first).then_some(first)?
    };
    // Through more than two tables the entity must lead the chain already (reordering a
    // chain of joins is not attempted).
    if bound.len() > 2 && entity != 0 {
        return None;
    }
    let counted = |e: &Expr| resolve(e).is_some_and(|(side, _)| side != entity);
    // What `COUNT(*)` becomes: the joined table's join column. Two tables joined on one
    // equality only; through a chain, `COUNT(*)` is left alone (which table's rows it meant is
    // not clear).
    let rows_column = match conditions.as_slice() {
        [
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            },
        ] => {
            let (l, r) = (resolve(left)?, resolve(right)?);
            let column = match (l.0 == entity, r.0 == entity) {
                (false, true) => l.1,
                (true, false) => r.1,
                _ => return None,
            };
            Some(Expr::CompoundIdentifier(vec![
                Ident::new(bound[1 - entity].binding.clone()),
                Ident::new(column),
            ]))
        }
        [_] => return None,
        _ => None,
    };
    if let Some(filter) = &select.selection
        && !reads_only(filter, &bound, |side| side == entity)
    {
        return None;
    }
    // Shown: the entity's columns and counts of the other tables' rows.
    let mut counts = 0;
    for item in &select.projection {
        let e = match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
            _ => return None,
        };
        match count_argument(e) {
            Some(CountOf::Rows) if rows_column.is_some() => counts += 1,
            Some(CountOf::Column(c)) if counted(&c) => counts += 1,
            Some(_) => return None,
            None if has_aggregate(e) => return None,
            None if !reads_only(e, &bound, |side| side == entity) => return None,
            None => {}
        }
    }
    if counts == 0 {
        return None;
    }
    // The other places an aggregate may stand: only counts there too.
    let mut others: Vec<&mut Expr> = Vec::new();
    if let Some(having) = select.having.as_mut() {
        others.push(having);
    }
    if let Some(order) = order_by {
        let OrderByKind::Expressions(exprs) = &mut order.kind else {
            return None;
        };
        others.extend(exprs.iter_mut().map(|o| &mut o.expr));
    }
    for e in &others {
        if !only_counts(e, rows_column.is_some(), &counted) {
            return None;
        }
    }
    if let Some(rows_column) = &rows_column {
        for e in others {
            count_column_not_rows(e, rows_column);
        }
        for item in select.projection.iter_mut() {
            if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
                count_column_not_rows(e, rows_column);
            }
        }
    }
    // Grouped by the entity's name: by its key instead.
    if let GroupByExpr::Expressions(keys, _) = &mut select.group_by
        && let [key] = keys.as_mut_slice()
        && let Some((_, column)) = column_of(key, &bound)
        && own_name(bound[entity].table, &column)
        && let Some(pk) = single_primary_key(bound[entity].table)
    {
        *key = Expr::CompoundIdentifier(vec![
            Ident::new(bound[entity].binding.clone()),
            Ident::new(pk),
        ]);
    }
    if entity == 1
        && let [join] = from.joins.as_mut_slice()
    {
        std::mem::swap(&mut from.relation, &mut join.relation);
    }
    for (join, on) in from.joins.iter_mut().zip(conditions) {
        join.join_operator = JoinOperator::Left(JoinConstraint::On(on));
    }
    Some(statements[0].to_string())
}

/// A join condition that compares a column with itself (`JOIN PlaylistTrack ON
/// Playlist.PlaylistId = Playlist.PlaylistId`) is always true: the join becomes a cross join
/// and every count is multiplied. When the joined table has that column too, the condition
/// meant it: one side becomes the joined table's column. A side that is a bound table's name
/// rather than a column (`ON PlaylistTrack.TrackId = Track`) means that table's column of the
/// same name. `None` when there is no such condition.
///
/// ```
/// use knowhub_sql::{ColumnInfo, Schema, TableInfo, TableKind, mend_join_conditions};
/// let column = |name: &str| ColumnInfo {
///     name: name.into(),
///     decl_type: "INTEGER".into(),
///     samples: vec![],
///     values: vec![],
///     primary_key: 0,
/// };
/// let table = |name: &str, columns: &[&str]| TableInfo {
///     name: name.into(),
///     kind: TableKind::Table,
///     columns: columns.iter().map(|c| column(c)).collect(),
///     foreign_keys: vec![],
///     row_count: None,
/// };
/// let schema = Schema {
///     tables: vec![
///         table("Playlist", &["PlaylistId", "Name"]),
///         table("PlaylistTrack", &["PlaylistId", "TrackId"]),
///     ],
/// };
/// assert_eq!(
///     mend_join_conditions(
///         "SELECT COUNT(*) FROM Playlist p JOIN PlaylistTrack pt ON p.PlaylistId = p.PlaylistId",
///         &schema,
///     )
///     .as_deref(),
///     Some("SELECT COUNT(*) FROM Playlist p JOIN PlaylistTrack pt ON p.PlaylistId = pt.PlaylistId")
/// );
/// ```
pub fn mend_join_conditions(sql: &str, schema: &Schema) -> Option<String> {
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    let [Statement::Query(query)] = statements.as_mut_slice() else {
        return None;
    };
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    let mut changed = false;
    for from in select.from.iter_mut() {
        let mut bound = vec![Binding::of(&from.relation, schema)];
        for join in from.joins.iter_mut() {
            let joined = Binding::of(&join.relation, schema);
            bound.push(joined.clone());
            let Some(joined) = joined else { continue };
            let (JoinOperator::Join(JoinConstraint::On(on))
            | JoinOperator::Inner(JoinConstraint::On(on))
            | JoinOperator::Left(JoinConstraint::On(on))
            | JoinOperator::LeftOuter(JoinConstraint::On(on))) = &mut join.join_operator
            else {
                continue;
            };
            let known: Vec<Binding<'_>> = bound.iter().flatten().cloned().collect();
            for condition in conjuncts(on) {
                let Expr::BinaryOp {
                    left,
                    op: BinaryOperator::Eq,
                    right,
                } = condition
                else {
                    continue;
                };
                // `= Track`: a table where a column belongs, the other side's column of it.
                let as_column = |table_side: &Expr, column_side: &Expr| {
                    let Expr::Identifier(id) = table_side else {
                        return None;
                    };
                    if column_of(table_side, &known).is_some() {
                        return None;
                    }
                    let named = bound_as(&known, &id.value)?;
                    let (_, column) = column_of(column_side, &known)?;
                    let c = named.table.column(&column)?;
                    Some(Expr::CompoundIdentifier(vec![
                        Ident::new(named.binding.clone()),
                        Ident::new(c.name.clone()),
                    ]))
                };
                if let Some(e) = as_column(left, right) {
                    **left = e;
                    changed = true;
                } else if let Some(e) = as_column(right, left) {
                    **right = e;
                    changed = true;
                }
                let (Some(l), Some(r)) = (column_of(left, &known), column_of(right, &known)) else {
                    continue;
                };
                let joined_side = known.len() - 1;
                if l != r || l.0 == joined_side {
                    continue;
                }
                let Some(c) = joined.table.column(&l.1) else {
                    continue;
                };
                **right = Expr::CompoundIdentifier(vec![
                    Ident::new(joined.binding.clone()),
                    Ident::new(c.name.clone()),
                ]);
                changed = true;
            }
        }
    }
    changed.then(|| statements[0].to_string())
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
/// leaves one reading: `T1.Name` when `T1` (`PlaylistTrack`) has no `Name` but exactly one
/// other table of the same FROM clause has (or `T1` is no table of the clause at all), becomes
/// that table's `Name`; and a group by an entity's name column it does not have (`GROUP BY
/// Customer.Name`, where a customer's name is `FirstName` and `LastName`) groups by the
/// entity's primary key; a bare column two joined tables have (ambiguous to SQLite) that the
/// join conditions equate is read from the leftmost of them. Only references that would fail
/// are touched. `None` when nothing is changed.
///
/// ```
/// use knowhub_sql::{ColumnInfo, Schema, TableInfo, TableKind, mend_column_references};
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
///         table("Customer", vec![column("CustomerId", 1), column("FirstName", 0)]),
///         table("Invoice", vec![column("InvoiceId", 1), column("CustomerId", 0), column("Total", 0)]),
///     ],
/// };
/// assert_eq!(
///     mend_column_references(
///         "SELECT c.FirstName, SUM(c.Total) FROM Customer c JOIN Invoice i \
///          ON c.CustomerId = i.CustomerId GROUP BY c.Name",
///         &schema,
///     )
///     .as_deref(),
///     Some(
///         "SELECT c.FirstName, SUM(i.Total) FROM Customer c JOIN Invoice i \
///          ON c.CustomerId = i.CustomerId GROUP BY c.CustomerId"
///     )
/// );
/// ```
pub fn mend_column_references(sql: &str, schema: &Schema) -> Option<String> {
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    let [Statement::Query(query)] = statements.as_mut_slice() else {
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
    // The columns the join conditions equate (`t.MediaTypeId = m.MediaTypeId`): a bare
    // `MediaTypeId` is ambiguous to SQLite, but has one value on every joined row.
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
            // A qualifier that is no table of the FROM clause (`T1.FirstName` in `FROM Invoice
            // I JOIN Customer C`) fails as surely as a table without the column.
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
    changed.then(|| statements[0].to_string())
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

/// A listing over a join that shows only the joined tables' columns also shows which row of
/// the main table each line belongs to. Asked "show all tracks with their genre names", a small
/// model writes `SELECT g.Name FROM Track t JOIN Genre g …`: a column of "Rock, Rock, Metal…"
/// that names no track. When a plain SELECT (no DISTINCT, grouping or aggregate) over tables
/// joined on conditions shows no column of its first table, and does not filter on that table
/// (then it is only the filter: "the albums of AC/DC" from `Artist JOIN Album`), the first
/// table's own name column (`Name`, `TrackName` in `Track`, else `Title`) is shown first — or
/// all its columns when it has none. Ids of the first table shown beside the looked-up values
/// (`InvoiceLine.TrackId, Track.Name`) name no row either and give way to it. A link table (only keys) is left alone, as is anything
/// not resolved against `schema`.
///
/// ```
/// use knowhub_sql::{ColumnInfo, Schema, TableInfo, TableKind, name_the_listed_rows};
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
///         table("Genre", vec![column("GenreId", 1), column("Name", 0)]),
///         table("Track", vec![column("TrackId", 1), column("Name", 0), column("GenreId", 0)]),
///     ],
/// };
/// assert_eq!(
///     name_the_listed_rows(
///         "SELECT g.Name FROM Track t JOIN Genre g ON t.GenreId = g.GenreId",
///         &schema,
///     )
///     .as_deref(),
///     Some("SELECT t.Name, g.Name FROM Track t JOIN Genre g ON t.GenreId = g.GenreId")
/// );
/// ```
pub fn name_the_listed_rows(sql: &str, schema: &Schema) -> Option<String> {
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    let [Statement::Query(query)] = statements.as_mut_slice() else {
        return None;
    };
    if query.with.is_some() {
        return None;
    }
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    let grouped = match &select.group_by {
        GroupByExpr::Expressions(exprs, _) => !exprs.is_empty(),
        GroupByExpr::All(_) => true,
    };
    if select.distinct.is_some() || grouped || select.having.is_some() {
        return None;
    }
    let [from] = select.from.as_slice() else {
        return None;
    };
    if from.joins.is_empty() {
        return None;
    }
    for join in &from.joins {
        match &join.join_operator {
            JoinOperator::Join(JoinConstraint::On(_))
            | JoinOperator::Inner(JoinConstraint::On(_))
            | JoinOperator::Left(JoinConstraint::On(_))
            | JoinOperator::LeftOuter(JoinConstraint::On(_)) => {}
            _ => return None,
        }
    }
    let bound = bind_all(from, schema)?;
    let joined_only = |e: &Expr| reads_only(e, &bound, |side| side != 0);
    let main = &bound[0];
    let keyed = |c: &str| {
        main.table
            .foreign_keys
            .iter()
            .any(|fk| fk.columns.iter().any(|k| k.eq_ignore_ascii_case(c)))
    };
    let is_key = |c: &crate::schema::ColumnInfo| {
        c.primary_key > 0
            || keyed(&c.name)
            || crate::template::ident_words(&c.name)
                .last()
                .is_some_and(|w| w == "id")
    };
    if !main.table.columns.iter().any(|c| !is_key(c)) {
        return None;
    }
    // The main table's ids shown beside the looked-up values (`InvoiceLine.TrackId, Track.Name`)
    // name no row either: they give way to what does.
    let mut ids = Vec::new();
    for (i, item) in select.projection.iter().enumerate() {
        match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }
                if !has_aggregate(e) && joined_only(e) => {}
            SelectItem::UnnamedExpr(e)
                if column_of(e, &bound).is_some_and(|(side, c)| {
                    side == 0 && main.table.column(&c).is_some_and(is_key)
                }) =>
            {
                ids.push(i)
            }
            _ => return None,
        }
    }
    if select.projection.len() == ids.len()
        || select.selection.as_ref().is_some_and(|w| !joined_only(w))
    {
        return None;
    }
    for i in ids.into_iter().rev() {
        select.projection.remove(i);
    }
    let qualifier = Ident::new(main.binding.clone());
    let name = main
        .table
        .columns
        .iter()
        .find(|c| own_name(main.table, &c.name))
        .or_else(|| main.table.column("title"));
    let shown = match name {
        Some(c) => SelectItem::UnnamedExpr(Expr::CompoundIdentifier(vec![
            qualifier,
            Ident::new(c.name.clone()),
        ])),
        None => SelectItem::QualifiedWildcard(
            sqlparser::ast::SelectItemQualifiedWildcardKind::ObjectName(
                sqlparser::ast::ObjectName::from(vec![qualifier]),
            ),
            sqlparser::ast::WildcardAdditionalOptions::default(),
        ),
    };
    select.projection.insert(0, shown);
    Some(statements[0].to_string())
}

/// A table's name run into one of its columns, written apart: small models write
/// `PlaylistPlaylistId` for `Playlist.PlaylistId` and `TrackName` for `Track.Name` when the
/// statement joins `Playlist` or `Track`. A bare name that is no column of the statement's
/// tables nor an alias it defines, but is a joined table's name followed by one of that table's
/// columns, becomes the qualified column. `None` when nothing is changed.
///
/// ```
/// use knowhub_sql::{ColumnInfo, Schema, TableInfo, TableKind, split_fused_names};
/// let column = |name: &str| ColumnInfo {
///     name: name.into(),
///     decl_type: "INTEGER".into(),
///     samples: vec![],
///     values: vec![],
///     primary_key: 0,
/// };
/// let schema = Schema {
///     tables: vec![TableInfo {
///         name: "Playlist".into(),
///         kind: TableKind::Table,
///         columns: vec![column("PlaylistId"), column("Name")],
///         foreign_keys: vec![],
///         row_count: None,
///     }],
/// };
/// assert_eq!(
///     split_fused_names("SELECT p.Name FROM Playlist p ORDER BY PlaylistPlaylistId", &schema)
///         .as_deref(),
///     Some("SELECT p.Name FROM Playlist p ORDER BY p.PlaylistId")
/// );
/// ```
pub fn split_fused_names(sql: &str, schema: &Schema) -> Option<String> {
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
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).ok()?;
    let [statement] = statements.as_mut_slice() else {
        return None;
    };
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
    split.changed.then(|| statement.to_string())
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

/// What a `COUNT(…)` counts.
enum CountOf {
    /// `COUNT(*)`.
    Rows,
    /// `COUNT(col)` or `COUNT(DISTINCT col)`.
    Column(Expr),
    /// Anything else inside COUNT.
    Other,
}

/// The argument of `e` when `e` is a `COUNT` call.
fn count_argument(e: &Expr) -> Option<CountOf> {
    let Expr::Function(f) = e else {
        return None;
    };
    if !f.name.to_string().eq_ignore_ascii_case("count") || f.filter.is_some() || f.over.is_some() {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else {
        return Some(CountOf::Other);
    };
    Some(match list.args.as_slice() {
        [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] if list.duplicate_treatment.is_none() => {
            CountOf::Rows
        }
        [FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))]
            if matches!(arg, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) =>
        {
            CountOf::Column(arg.clone())
        }
        _ => CountOf::Other,
    })
}

/// Whether every aggregate in `e` (outside subqueries: there are none allowed) is a count of
/// rows (when `rows` allows it) or of a column `counted` accepts.
fn only_counts(e: &Expr, rows: bool, counted: &dyn Fn(&Expr) -> bool) -> bool {
    struct Check<'a> {
        rows: bool,
        counted: &'a dyn Fn(&Expr) -> bool,
    }
    impl Visitor for Check<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            ControlFlow::Break(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            match count_argument(e) {
                Some(CountOf::Rows) if self.rows => ControlFlow::Continue(()),
                Some(CountOf::Column(c)) if (self.counted)(&c) => ControlFlow::Continue(()),
                Some(_) => ControlFlow::Break(()),
                None if matches!(e, Expr::Function(_)) && has_aggregate(e) => {
                    ControlFlow::Break(())
                }
                None => ControlFlow::Continue(()),
            }
        }
    }
    e.visit(&mut Check { rows, counted }).is_continue()
}

/// `COUNT(*)` in `e` becomes `COUNT(column)`.
fn count_column_not_rows(e: &mut Expr, column: &Expr) {
    struct Replace<'a> {
        column: &'a Expr,
    }
    impl VisitorMut for Replace<'_> {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            if let Some(CountOf::Rows) = count_argument(e)
                && let Expr::Function(f) = e
                && let FunctionArguments::List(list) = &mut f.args
            {
                list.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(
                    self.column.clone(),
                ))];
            }
            ControlFlow::Continue(())
        }
    }
    let _ = e.visit(&mut Replace { column });
}

/// Whether `column` is `table`'s own name: `Name`, or the table's name followed by `Name`
/// (`ArtistName` in `Artist`, `artist_name` in `artists`).
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
    fn group_filters_show_their_measure() {
        for (sql, expected) in [
            // Tracks in more than one playlist: how many beside each.
            (
                "SELECT T1.Name FROM Track AS T1 JOIN PlaylistTrack AS T2 ON T1.TrackId = \
                 T2.TrackId GROUP BY T1.TrackId HAVING COUNT(T2.PlaylistId) > 1",
                Some(
                    "SELECT T1.Name, COUNT(T2.PlaylistId) FROM Track AS T1 JOIN PlaylistTrack \
                     AS T2 ON T1.TrackId = T2.TrackId GROUP BY T1.TrackId HAVING \
                     COUNT(T2.PlaylistId) > 1",
                ),
            ),
            // Compared with a subquery: the group's side only.
            (
                "SELECT Album.Title FROM Album JOIN Track ON Album.AlbumId = Track.AlbumId \
                 GROUP BY Album.AlbumId HAVING COUNT(Track.TrackId) > (SELECT AVG(c) FROM \
                 (SELECT COUNT(*) AS c FROM Track GROUP BY AlbumId))",
                Some(
                    "SELECT Album.Title, COUNT(Track.TrackId) FROM Album JOIN Track ON \
                     Album.AlbumId = Track.AlbumId GROUP BY Album.AlbumId HAVING \
                     COUNT(Track.TrackId) > (SELECT AVG(c) FROM (SELECT COUNT(*) AS c FROM \
                     Track GROUP BY AlbumId))",
                ),
            ),
            // Two tests, one shown already by alias.
            (
                "SELECT Country, COUNT(*) AS n FROM Customer GROUP BY Country HAVING n > 2 AND \
                 (SUM(Total) >= 10)",
                Some(
                    "SELECT Country, COUNT(*) AS n, SUM(Total) FROM Customer GROUP BY Country \
                     HAVING n > 2 AND (SUM(Total) >= 10)",
                ),
            ),
            // Shown already (any case).
            (
                "SELECT Country, count(*) FROM Customer GROUP BY Country HAVING COUNT(*) > 2",
                None,
            ),
            // No group filter; DISTINCT; other shapes.
            ("SELECT Country FROM Customer GROUP BY Country", None),
            (
                "SELECT DISTINCT Country FROM Customer GROUP BY Country HAVING COUNT(*) > 2",
                None,
            ),
            (
                "SELECT Country FROM Customer GROUP BY Country HAVING COUNT(*) > 2 OR \
                 MAX(Total) > 5",
                None,
            ),
            ("not sql at all", None),
        ] {
            assert_eq!(show_filter_measure(sql).as_deref(), expected, "{sql}");
        }
    }

    #[test]
    fn name_parts_become_one_name() {
        let schema = music();
        for (sql, expected) in [
            (
                "SELECT Customer.FirstName, Customer.LastName, SUM(Invoice.Total) AS TotalSpent \
                 FROM Invoice JOIN Customer ON Invoice.CustomerId = Customer.CustomerId GROUP BY \
                 Customer.CustomerId",
                Some(
                    "SELECT Customer.FirstName || ' ' || Customer.LastName AS CustomerName, \
                     SUM(Invoice.Total) AS TotalSpent FROM Invoice JOIN Customer ON \
                     Invoice.CustomerId = Customer.CustomerId GROUP BY Customer.CustomerId",
                ),
            ),
            // Aliases; two people in one row.
            (
                "SELECT c.FirstName, c.LastName, e.FirstName, e.LastName FROM Customer c JOIN \
                 Employee e ON c.SupportRepId = e.EmployeeId",
                Some(
                    "SELECT c.FirstName || ' ' || c.LastName AS CustomerName, e.FirstName || ' ' \
                     || e.LastName AS EmployeeName FROM Customer c JOIN Employee e ON \
                     c.SupportRepId = e.EmployeeId",
                ),
            ),
            // Parts of two people, the other order, apart: left alone.
            (
                "SELECT c.FirstName, e.LastName FROM Customer c JOIN Employee e ON \
                 c.SupportRepId = e.EmployeeId",
                None,
            ),
            ("SELECT LastName, FirstName FROM Customer", None),
            ("SELECT FirstName, Country, LastName FROM Customer", None),
            ("SELECT * FROM Customer", None),
            ("SELECT FirstName, LastName FROM Nowhere", None),
        ] {
            assert_eq!(join_name_parts(sql, &schema).as_deref(), expected, "{sql}");
        }
    }

    #[test]
    fn pinned_columns_give_way() {
        let schema = music();
        let asked = ["Track", "Playlist"];
        for (sql, expected) in [
            (
                "SELECT T1.Name FROM Playlist AS T1 JOIN PlaylistTrack AS T2 ON T1.PlaylistId = \
                 T2.PlaylistId JOIN Track AS T3 ON T2.TrackId = T3.TrackId WHERE T1.Name = \
                 'Music' AND T3.AlbumId > 2",
                Some(
                    "SELECT T3.Name FROM Playlist AS T1 JOIN PlaylistTrack AS T2 ON \
                     T1.PlaylistId = T2.PlaylistId JOIN Track AS T3 ON T2.TrackId = T3.TrackId \
                     WHERE T1.Name = 'Music' AND T3.AlbumId > 2",
                ),
            ),
            // Not pinned: compared otherwise, or not in the filter.
            (
                "SELECT T1.Name FROM Playlist AS T1 JOIN PlaylistTrack AS T2 ON T1.PlaylistId = \
                 T2.PlaylistId JOIN Track AS T3 ON T2.TrackId = T3.TrackId WHERE T1.Name LIKE \
                 'M%'",
                None,
            ),
            (
                "SELECT T1.Name FROM Playlist AS T1 JOIN PlaylistTrack AS T2 ON T1.PlaylistId = \
                 T2.PlaylistId JOIN Track AS T3 ON T2.TrackId = T3.TrackId WHERE T3.Name = 'x'",
                None,
            ),
            // Pinned, but no table the question names has the column.
            (
                "SELECT a.Title FROM Album a JOIN Track t ON t.AlbumId = a.AlbumId WHERE \
                 a.Title = 'Out'",
                None,
            ),
            // One table: nothing else to show.
            ("SELECT Name FROM Playlist WHERE Name = 'Music'", None),
        ] {
            assert_eq!(
                show_the_unpinned_column(sql, &schema, &asked).as_deref(),
                expected,
                "{sql}"
            );
        }
    }

    #[test]
    fn group_keys_show_names() {
        let mut schema = music();
        for t in &mut schema.tables {
            if t.name == "Customer" {
                t.foreign_keys.push(crate::schema::ForeignKey {
                    columns: vec!["SupportRepId".into()],
                    ref_table: "Employee".into(),
                    ref_columns: vec!["EmployeeId".into()],
                });
            }
        }
        for (sql, expected) in [
            (
                "SELECT T2.SupportRepId, SUM(T1.Total) AS TotalSales FROM Invoice AS T1 JOIN \
                 Customer AS T2 ON T1.CustomerId = T2.CustomerId GROUP BY T2.SupportRepId",
                Some(
                    "SELECT Employee.FirstName || ' ' || Employee.LastName AS EmployeeName, \
                     SUM(T1.Total) AS TotalSales FROM Invoice AS T1 JOIN Customer AS T2 ON \
                     T1.CustomerId = T2.CustomerId LEFT JOIN Employee ON T2.SupportRepId = \
                     Employee.EmployeeId GROUP BY T2.SupportRepId",
                ),
            ),
            // The referenced table joined already: the model chose what to show.
            (
                "SELECT c.SupportRepId, COUNT(*) FROM Customer c JOIN Employee e ON \
                 c.SupportRepId = e.EmployeeId GROUP BY c.SupportRepId",
                None,
            ),
            // Not a foreign key; not shown; two groupings.
            (
                "SELECT Country, COUNT(*) FROM Customer GROUP BY Country",
                None,
            ),
            ("SELECT COUNT(*) FROM Customer GROUP BY SupportRepId", None),
            (
                "SELECT SupportRepId, Country, COUNT(*) FROM Customer GROUP BY SupportRepId, \
                 Country",
                None,
            ),
        ] {
            assert_eq!(
                name_the_group_keys(sql, &schema).as_deref(),
                expected,
                "{sql}"
            );
        }
    }

    fn music() -> Schema {
        use crate::schema::{ColumnInfo, TableKind};
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
    fn counts_per_entity_keep_the_entities_with_none() {
        let schema = music();
        for (sql, expected) in [
            // The entity joined second: it leads the outer join; grouped by its name → its key.
            (
                "SELECT T2.Name, COUNT(T1.TrackId) AS n FROM PlaylistTrack AS T1 JOIN Playlist \
                 AS T2 ON T1.PlaylistId = T2.PlaylistId GROUP BY T2.Name",
                Some(
                    "SELECT T2.Name, COUNT(T1.TrackId) AS n FROM Playlist AS T2 LEFT JOIN \
                     PlaylistTrack AS T1 ON T1.PlaylistId = T2.PlaylistId GROUP BY \
                     T2.PlaylistId",
                ),
            ),
            // Entity first, grouped by key already; COUNT(*) in the order too.
            (
                "SELECT Artist.Name, COUNT(*) FROM Artist JOIN Album ON Artist.ArtistId = \
                 Album.ArtistId GROUP BY Artist.ArtistId ORDER BY COUNT(*) DESC",
                Some(
                    "SELECT Artist.Name, COUNT(Album.ArtistId) FROM Artist LEFT JOIN Album ON \
                     Artist.ArtistId = Album.ArtistId GROUP BY Artist.ArtistId ORDER BY \
                     COUNT(Album.ArtistId) DESC",
                ),
            ),
            // Bare column names resolved against the schema; a HAVING on the count.
            (
                "SELECT Name, COUNT(AlbumId) FROM Artist INNER JOIN Album ON Artist.ArtistId = \
                 Album.ArtistId GROUP BY Name HAVING COUNT(AlbumId) > 10",
                Some(
                    "SELECT Name, COUNT(AlbumId) FROM Artist LEFT JOIN Album ON Artist.ArtistId \
                     = Album.ArtistId GROUP BY Artist.ArtistId HAVING COUNT(AlbumId) > 10",
                ),
            ),
            // Through a link table, the entity leading: every join outer.
            (
                "SELECT p.Name, COUNT(t.TrackId) FROM Playlist p JOIN PlaylistTrack pt ON \
                 pt.PlaylistId = p.PlaylistId JOIN Track t ON t.TrackId = pt.TrackId GROUP BY \
                 p.Name ORDER BY COUNT(t.TrackId) DESC",
                Some(
                    "SELECT p.Name, COUNT(t.TrackId) FROM Playlist p LEFT JOIN PlaylistTrack pt \
                     ON pt.PlaylistId = p.PlaylistId LEFT JOIN Track t ON t.TrackId = \
                     pt.TrackId GROUP BY p.PlaylistId ORDER BY COUNT(t.TrackId) DESC",
                ),
            ),
            // A chain the entity does not lead, or counting rows of which table is unclear.
            (
                "SELECT p.Name, COUNT(t.TrackId) FROM Track t JOIN PlaylistTrack pt ON \
                 t.TrackId = pt.TrackId JOIN Playlist p ON pt.PlaylistId = p.PlaylistId \
                 GROUP BY p.PlaylistId",
                None,
            ),
            (
                "SELECT p.Name, COUNT(*) FROM Playlist p JOIN PlaylistTrack pt ON \
                 pt.PlaylistId = p.PlaylistId JOIN Track t ON t.TrackId = pt.TrackId GROUP BY \
                 p.PlaylistId",
                None,
            ),
            // Grouped by an attribute (not the entity's name): the group stays.
            (
                "SELECT c.Country, COUNT(i.InvoiceId) FROM Customer c JOIN Invoice i ON \
                 c.CustomerId = i.CustomerId GROUP BY c.Country",
                Some(
                    "SELECT c.Country, COUNT(i.InvoiceId) FROM Customer c LEFT JOIN Invoice i \
                     ON c.CustomerId = i.CustomerId GROUP BY c.Country",
                ),
            ),
            // A sum over no rows is NULL, not 0.
            (
                "SELECT c.FirstName, SUM(i.Total) FROM Customer c JOIN Invoice i ON \
                 c.CustomerId = i.CustomerId GROUP BY c.CustomerId",
                None,
            ),
            // Counting the entity's own column counts entities.
            (
                "SELECT c.Country, COUNT(DISTINCT c.CustomerId) FROM Customer c JOIN Invoice i \
                 ON c.CustomerId = i.CustomerId GROUP BY c.Country",
                None,
            ),
            // A filter on the joined rows.
            (
                "SELECT c.FirstName, COUNT(*) FROM Customer c JOIN Invoice i ON c.CustomerId = \
                 i.CustomerId WHERE i.Total > 5 GROUP BY c.CustomerId",
                None,
            ),
            // Showing a column of the counted table.
            (
                "SELECT c.FirstName, i.Total, COUNT(*) FROM Customer c JOIN Invoice i ON \
                 c.CustomerId = i.CustomerId GROUP BY c.CustomerId",
                None,
            ),
            // Not two tables, already outer, a self join, unknown tables, no grouping.
            ("SELECT Name, COUNT(*) FROM Artist GROUP BY Name", None),
            (
                "SELECT a.Name, COUNT(*) FROM Artist a LEFT JOIN Album b ON a.ArtistId = \
                 b.ArtistId GROUP BY a.ArtistId",
                None,
            ),
            (
                "SELECT a.Name, COUNT(*) FROM Artist a JOIN Artist b ON a.ArtistId = \
                 b.ArtistId GROUP BY a.ArtistId",
                None,
            ),
            (
                "SELECT a.Name, COUNT(*) FROM Artist a JOIN Song s ON a.ArtistId = s.ArtistId \
                 GROUP BY a.ArtistId",
                None,
            ),
            (
                "SELECT COUNT(*) FROM Artist a JOIN Album b ON a.ArtistId = b.ArtistId",
                None,
            ),
            ("not sql", None),
        ] {
            assert_eq!(
                count_every_group(sql, &schema).as_deref(),
                expected,
                "{sql}"
            );
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
                split_fused_names(sql, &schema).as_deref(),
                expected,
                "{sql}"
            );
        }
    }

    #[test]
    fn listings_over_joins_name_their_rows() {
        let schema = music();
        for (sql, expected) in [
            // The main table has a title, not a name.
            (
                "SELECT Artist.Name FROM Album JOIN Artist ON Album.ArtistId = Artist.ArtistId",
                Some(
                    "SELECT Album.Title, Artist.Name FROM Album JOIN Artist ON Album.ArtistId = \
                     Artist.ArtistId",
                ),
            ),
            // No name at all: its columns.
            (
                "SELECT t.Name FROM InvoiceLine il JOIN Track t ON il.TrackId = t.TrackId \
                 WHERE t.Name LIKE 'A%'",
                Some(
                    "SELECT il.*, t.Name FROM InvoiceLine il JOIN Track t ON il.TrackId = \
                     t.TrackId WHERE t.Name LIKE 'A%'",
                ),
            ),
            // Its id beside the looked-up name gives way.
            (
                "SELECT InvoiceLine.TrackId, Track.Name FROM InvoiceLine JOIN Track ON \
                 InvoiceLine.TrackId = Track.TrackId",
                Some(
                    "SELECT InvoiceLine.*, Track.Name FROM InvoiceLine JOIN Track ON \
                     InvoiceLine.TrackId = Track.TrackId",
                ),
            ),
            // Only ids of the main table: nothing looked up.
            (
                "SELECT il.TrackId FROM InvoiceLine il JOIN Track t ON il.TrackId = t.TrackId",
                None,
            ),
            // The main table is the filter.
            (
                "SELECT b.Title FROM Artist a JOIN Album b ON a.ArtistId = b.ArtistId WHERE \
                 a.Name = 'AC/DC'",
                None,
            ),
            // A link table has nothing to show.
            (
                "SELECT t.Name FROM PlaylistTrack pt JOIN Track t ON pt.TrackId = t.TrackId",
                None,
            ),
            // The main table is shown already, or the rows are distinct or counted.
            (
                "SELECT t.Name, al.Title FROM Track t JOIN Album al ON t.AlbumId = al.AlbumId",
                None,
            ),
            (
                "SELECT DISTINCT a.Name FROM Album b JOIN Artist a ON a.ArtistId = b.ArtistId",
                None,
            ),
            (
                "SELECT COUNT(a.Name) FROM Album b JOIN Artist a ON a.ArtistId = b.ArtistId",
                None,
            ),
            ("SELECT Name FROM Artist", None),
            ("not sql", None),
        ] {
            assert_eq!(
                name_the_listed_rows(sql, &schema).as_deref(),
                expected,
                "{sql}"
            );
        }
    }

    #[test]
    fn join_conditions_comparing_a_column_with_itself_are_mended() {
        let schema = music();
        for (sql, expected) in [
            (
                "SELECT Playlist.Name, COUNT(TrackId) FROM Playlist JOIN PlaylistTrack ON \
                 Playlist.PlaylistId = Playlist.PlaylistId GROUP BY Playlist.Name",
                Some(
                    "SELECT Playlist.Name, COUNT(TrackId) FROM Playlist JOIN PlaylistTrack ON \
                     Playlist.PlaylistId = PlaylistTrack.PlaylistId GROUP BY Playlist.Name",
                ),
            ),
            // Inside an AND, with bare names resolved.
            (
                "SELECT * FROM Customer c JOIN Invoice i ON (c.CustomerId = c.CustomerId AND \
                 i.Total > 1)",
                Some(
                    "SELECT * FROM Customer c JOIN Invoice i ON (c.CustomerId = i.CustomerId AND \
                     i.Total > 1)",
                ),
            ),
            // A table's name where its column belongs.
            (
                "SELECT p.Name FROM Playlist p JOIN PlaylistTrack ON p.PlaylistId = \
                 PlaylistTrack.PlaylistId JOIN Track ON PlaylistTrack.TrackId = Track",
                Some(
                    "SELECT p.Name FROM Playlist p JOIN PlaylistTrack ON p.PlaylistId = \
                     PlaylistTrack.PlaylistId JOIN Track ON PlaylistTrack.TrackId = \
                     Track.TrackId",
                ),
            ),
            // The joined table lacks the column: nothing to mean.
            (
                "SELECT * FROM Artist a JOIN Playlist p ON a.ArtistId = a.ArtistId",
                None,
            ),
            // A proper condition.
            (
                "SELECT * FROM Customer c JOIN Invoice i ON c.CustomerId = i.CustomerId",
                None,
            ),
            ("not sql", None),
        ] {
            assert_eq!(
                mend_join_conditions(sql, &schema).as_deref(),
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
                mend_column_references(sql, &schema).as_deref(),
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
            assert_eq!(translate_date_functions(sql).as_deref(), expected, "{sql}");
        }
    }

    #[test]
    fn groups_are_by_row_key_not_name() {
        let schema = music();
        for (sql, expected) in [
            // Same-named tracks are different tracks.
            (
                "SELECT T1.Name, SUM(T2.UnitPrice) FROM Track AS T1 JOIN InvoiceLine AS T2 ON \
                 T1.TrackId = T2.TrackId GROUP BY T1.Name ORDER BY SUM(T2.UnitPrice) DESC LIMIT 5",
                Some(
                    "SELECT T1.Name, SUM(T2.UnitPrice) FROM Track AS T1 JOIN InvoiceLine AS T2 \
                     ON T1.TrackId = T2.TrackId GROUP BY T1.TrackId ORDER BY SUM(T2.UnitPrice) \
                     DESC LIMIT 5",
                ),
            ),
            // A bare name; a title is left alone (it may be a job title, shared on purpose).
            (
                "SELECT Name, COUNT(*) FROM Artist JOIN Album ON Artist.ArtistId = \
                 Album.ArtistId GROUP BY Name",
                Some(
                    "SELECT Name, COUNT(*) FROM Artist JOIN Album ON Artist.ArtistId = \
                     Album.ArtistId GROUP BY Artist.ArtistId",
                ),
            ),
            (
                "SELECT Title, COUNT(*) FROM Album JOIN Track ON Album.AlbumId = Track.AlbumId \
                 GROUP BY Title",
                None,
            ),
            // The key is grouped already.
            (
                "SELECT a.Name, COUNT(*) FROM Artist a JOIN Album b ON a.ArtistId = b.ArtistId \
                 GROUP BY a.ArtistId, a.Name",
                None,
            ),
            // One table: a question about the names themselves.
            ("SELECT Name, COUNT(*) FROM Track GROUP BY Name", None),
            // Not a name; an alias of a selected column; not one plain SELECT.
            (
                "SELECT c.Country, SUM(i.Total) FROM Customer c JOIN Invoice i ON c.CustomerId \
                 = i.CustomerId GROUP BY c.Country",
                None,
            ),
            (
                "SELECT a.Title AS Name, COUNT(*) FROM Album a JOIN Artist r ON a.ArtistId = \
                 r.ArtistId GROUP BY Name",
                None,
            ),
            ("SELECT 1; SELECT 2", None),
            ("not sql", None),
        ] {
            assert_eq!(group_by_row_key(sql, &schema).as_deref(), expected, "{sql}");
        }
    }

    #[test]
    fn names_come_from_name_columns() {
        let schema = music();
        for (sql, expected) in [
            // A person's name from the first and last names.
            (
                "SELECT i.Total, c.Country AS CustomerName FROM Invoice i JOIN Customer c ON \
                 i.CustomerId = c.CustomerId",
                Some(
                    "SELECT i.Total, c.FirstName || ' ' || c.LastName AS CustomerName FROM \
                     Invoice i JOIN Customer c ON i.CustomerId = c.CustomerId",
                ),
            ),
            // A thing's name from its Name column.
            (
                "SELECT ArtistId AS ArtistName FROM Artist",
                Some("SELECT Artist.Name AS ArtistName FROM Artist"),
            ),
            // A bare `Name` alias may name the column's own value.
            ("SELECT Country AS Name FROM Customer", None),
            // Already a name, or part of one; an alias that is another table's name.
            ("SELECT c.FirstName AS CustomerName FROM Customer c", None),
            ("SELECT Title AS AlbumName FROM Album", None),
            (
                "SELECT t.AlbumId AS ArtistName FROM Track t JOIN Album a ON t.AlbumId = \
                 a.AlbumId",
                None,
            ),
            // No name to show instead.
            ("SELECT pt.TrackId AS Name FROM PlaylistTrack pt", None),
            ("not sql", None),
        ] {
            assert_eq!(
                show_the_named_name(sql, &schema).as_deref(),
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
                group_the_ranked_rows(sql, &schema).as_deref(),
                expected,
                "{sql}"
            );
        }
    }

    #[test]
    fn subquery_comparisons_keep_every_match() {
        for (sql, expected) in [
            (
                "SELECT Name FROM Track WHERE AlbumId = (SELECT AlbumId FROM Album WHERE Title \
                 = 'Greatest Hits')",
                Some(
                    "SELECT Name FROM Track WHERE AlbumId IN (SELECT AlbumId FROM Album WHERE \
                     Title = 'Greatest Hits')",
                ),
            ),
            // On the left, negated, and inside a subquery.
            (
                "SELECT * FROM t WHERE (SELECT id FROM u WHERE n = 'x') <> t.id",
                Some("SELECT * FROM t WHERE t.id NOT IN (SELECT id FROM u WHERE n = 'x')"),
            ),
            (
                "SELECT * FROM t WHERE id IN (SELECT a FROM u WHERE b = (SELECT b FROM v))",
                Some("SELECT * FROM t WHERE id IN (SELECT a FROM u WHERE b IN (SELECT b FROM v))"),
            ),
            // A grouped subquery can return several rows.
            (
                "SELECT * FROM t WHERE n = (SELECT COUNT(*) FROM u GROUP BY k)",
                Some("SELECT * FROM t WHERE n IN (SELECT COUNT(*) FROM u GROUP BY k)"),
            ),
            // One row by construction: an aggregate, or LIMIT 1.
            ("SELECT * FROM t WHERE n = (SELECT MAX(n) FROM t)", None),
            (
                "SELECT * FROM t WHERE id = (SELECT id FROM u ORDER BY d DESC LIMIT 1)",
                None,
            ),
            // Other comparisons, and no subquery.
            ("SELECT * FROM t WHERE n > (SELECT n FROM u)", None),
            ("SELECT * FROM t WHERE n = 3", None),
            ("not sql", None),
        ] {
            assert_eq!(compare_with_every_match(sql).as_deref(), expected, "{sql}");
        }
    }
}
