//! SQL text → [`SafeQuery`]: parse, refuse everything but one read-only query, restrict it, and
//! print it back.
//!
//! The query that runs is the *printed AST*, never the caller's text: comments vanish, and
//! whatever the parser did not understand as part of the single query cannot reach SQLite. The
//! steps:
//!
//! 1. Tokenize and count statements (so `SELECT 1; DROP …` and comment tricks get a clear
//!    "only one statement" reason), then require the first keyword to be SELECT, WITH or VALUES.
//! 2. Parse with the SQLite dialect; the statement must be a query, and no node inside it may be
//!    another statement (`WITH x AS (DELETE …)`), `SELECT INTO`, `FOR UPDATE`, `FETCH`, a
//!    parameter placeholder, a table-valued function or a non-SQLite FROM form.
//! 3. Every FROM name must be a CTE in scope or a table/view of the [`Schema`]; `sqlite_%` and
//!    `pragma_%` names are internal and refused, as are schema qualifiers other than `main`. CTE
//!    names may not reuse a table's name, so a name always means one thing.
//! 4. Every function must be on [`crate::ALLOWED_FUNCTIONS`].
//! 5. Tenant filter, by construction: each reference to a table that has the tenant column
//!    becomes `(SELECT * FROM "t" WHERE "col" = ?1) AS alias`, with the tenant value bound as
//!    parameter 1. Whatever the rest of the query says (`OR tenant = 'other'`, a UNION with the
//!    bare table, a subquery, a self-join), every row it can see from that table passed the
//!    filter. A table without the column is refused unless the policy lists it as shared.
//!    Consequence: `rowid` of a filtered table is not addressable (the query fails, closed).
//! 6. The outermost query gets `LIMIT policy.limit` when it has no literal LIMIT at or below it.
//! 7. The printed text is parsed again and must print identically (no printer/parser drift).

use std::collections::BTreeSet;
use std::fmt;
use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, LimitClause, ObjectName, ObjectNamePart,
    Offset, OffsetRows, Query, Select, SelectItem, SetExpr, Statement, TableAlias, TableFactor,
    Value as AstValue, ValueWithSpan, VisitMut, VisitorMut,
};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::conn::{MAX_SQL_BYTES, is_internal, quote_ident};
use crate::error::{Result, SqlError};
use crate::functions::is_allowed_function;
use crate::policy::{Param, Policy};
use crate::schema::{Schema, TableInfo};

/// How deeply the parser may nest (subqueries, parentheses) before it gives up.
const RECURSION_LIMIT: usize = 64;

/// A query that passed [`validate`]: the exact SQL that will run (show it as evidence) and the
/// parameters bound to it. Only [`validate`] makes one.
#[derive(Debug, Clone, PartialEq)]
pub struct SafeQuery {
    sql: String,
    params: Vec<Param>,
    tables: Vec<String>,
    /// CTE names the query reads (SQLite's authorizer reports some CTE reads by name).
    ctes: Vec<String>,
    limit_forced: bool,
    reads_data: bool,
}

impl SafeQuery {
    /// Whether the query reads anything of the data (a column, `*`, `COUNT(*)`) and returns
    /// more than computed constants: `SELECT 1 + 1 FROM t`, `SELECT strftime('%d', '2019-04-30')
    /// FROM t` — even with a WHERE that reads columns — are safe but answer nothing from the
    /// data, which callers asking a question of the data should treat as a failure.
    pub fn reads_data(&self) -> bool {
        self.reads_data
    }

    /// The final SQL text (rewritten: LIMIT, tenant subqueries; no comments).
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// Values bound to `?1`, `?2`, …: the tenant value when a tenant filter was applied.
    pub fn params(&self) -> &[Param] {
        &self.params
    }

    /// The schema tables and views the query reads, as named in the schema, sorted.
    pub fn tables(&self) -> &[String] {
        &self.tables
    }

    /// Names the execution layer's authorizer lets the statement read: the tables and the CTEs.
    pub(crate) fn readable(&self) -> impl Iterator<Item = &str> {
        self.tables.iter().chain(&self.ctes).map(String::as_str)
    }

    /// Whether validation set or lowered the LIMIT (so a full result may mean "more exist").
    pub fn limit_forced(&self) -> bool {
        self.limit_forced
    }

    /// For the execution layer's own tests: a query that skipped validation.
    #[cfg(test)]
    pub(crate) fn unchecked(sql: &str, tables: &[&str]) -> SafeQuery {
        SafeQuery {
            sql: sql.to_owned(),
            params: Vec::new(),
            tables: tables.iter().map(|t| (*t).to_owned()).collect(),
            ctes: Vec::new(),
            limit_forced: false,
            reads_data: true,
        }
    }
}

impl fmt::Display for SafeQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sql)
    }
}

/// Whether `text` is SQL that would change something (any statement but a query): how the
/// copilot tells "DELETE FROM orders" from a question. Text that does not parse as SQL is not.
///
/// ```
/// assert!(knowhub_sql::changes_data("UPDATE orders SET total = 0"));
/// assert!(!knowhub_sql::changes_data("SELECT * FROM orders"));
/// assert!(!knowhub_sql::changes_data("Which field do I set for a rolling update?"));
/// ```
pub fn changes_data(text: &str) -> bool {
    if text.len() > MAX_SQL_BYTES {
        return false;
    }
    Parser::new(&SQLiteDialect {})
        .with_recursion_limit(RECURSION_LIMIT)
        .try_with_sql(text)
        .and_then(|mut p| p.parse_statements())
        .is_ok_and(|statements| statements.iter().any(|s| !matches!(s, Statement::Query(_))))
}

/// Checks and rewrites `sql` (SQLite dialect) against `schema` and `policy`; see the module
/// documentation for the rules.
pub fn validate(sql: &str, schema: &Schema, policy: &Policy) -> Result<SafeQuery> {
    policy.check()?;
    if sql.len() > MAX_SQL_BYTES {
        return Err(SqlError::TooLong {
            len: sql.len(),
            max: MAX_SQL_BYTES,
        });
    }
    let dialect = SQLiteDialect {};
    precheck_tokens(&dialect, sql)?;
    let mut statements = Parser::new(&dialect)
        .with_recursion_limit(RECURSION_LIMIT)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_statements())
        .map_err(|e| SqlError::Parse(e.to_string()))?;
    let mut stmt = match statements.len() {
        0 => return Err(SqlError::Empty),
        1 => statements.remove(0),
        n => return Err(SqlError::MultipleStatements(n)),
    };
    if !matches!(stmt, Statement::Query(_)) {
        return Err(SqlError::NotAQuery(statement_kind(&stmt)));
    }

    let mut checker = Checker {
        schema,
        policy,
        scopes: Vec::new(),
        statements: 0,
        tables: BTreeSet::new(),
        ctes: BTreeSet::new(),
        filtered: false,
        reads_data: false,
    };
    if let ControlFlow::Break(e) = stmt.visit(&mut checker) {
        return Err(e);
    }
    let Statement::Query(query) = &mut stmt else {
        return Err(SqlError::NotAQuery(statement_kind(&stmt)));
    };
    let limit_forced = force_limit(query, policy.limit)?;
    let constant = computes_constants(query);

    let text = stmt.to_string();
    // The tenant rewrite nests each filtered table one level deeper: allow for that.
    let reparsed = Parser::new(&dialect)
        .with_recursion_limit(RECURSION_LIMIT * 2)
        .try_with_sql(&text)
        .and_then(|mut p| p.parse_statements())
        .map_err(|e| SqlError::Parse(format!("the rewritten query did not parse again: {e}")))?;
    if reparsed.len() != 1 || reparsed[0].to_string() != text {
        return Err(SqlError::Unsupported(
            "a query that does not print back unchanged".into(),
        ));
    }

    let params = match (&policy.tenant, checker.filtered) {
        (Some(t), true) => vec![t.value.clone()],
        _ => Vec::new(),
    };
    Ok(SafeQuery {
        sql: text,
        params,
        tables: checker.tables.into_iter().collect(),
        ctes: checker.ctes.into_iter().collect(),
        limit_forced,
        reads_data: checker.reads_data && !constant,
    })
}

/// Whether the values a query returns are computed from constants alone, whatever its WHERE
/// reads: `SELECT strftime('%d', '2024-12-31') - strftime('%d', '2024-01-01') AS days FROM
/// staff WHERE hired > '2019-03-04'` printed "days = 30" once per matching row, an answer from
/// nowhere. Every selected value must be free of columns, `*`, aggregates and subqueries, and
/// at least one must be computed (a call or an operator): a bare `SELECT 1 … WHERE …` is an
/// existence check, which the rows it returns do answer.
fn computes_constants(query: &Query) -> bool {
    struct Reads;
    impl sqlparser::ast::Visitor for Reads {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            ControlFlow::Break(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            match e {
                Expr::Identifier(_) | Expr::CompoundIdentifier(_) => ControlFlow::Break(()),
                Expr::Function(f) if crate::functions::is_aggregate(&f.name.to_string()) => {
                    ControlFlow::Break(())
                }
                _ => ControlFlow::Continue(()),
            }
        }
    }
    let SetExpr::Select(select) = query.body.as_ref() else {
        return false;
    };
    let mut computed = false;
    for item in &select.projection {
        let (SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }) = item else {
            return false;
        };
        if sqlparser::ast::Visit::visit(e, &mut Reads).is_break() {
            return false;
        }
        computed |= !matches!(e, Expr::Value(_));
    }
    computed
}

/// Counts statements on the token stream and checks the leading keyword, so that refusals
/// read "only one statement" / "DROP statements are refused" even when the parser would have
/// stumbled first.
fn precheck_tokens(dialect: &SQLiteDialect, sql: &str) -> Result<()> {
    let tokens = Tokenizer::new(dialect, sql)
        .tokenize()
        .map_err(|e| SqlError::Parse(e.to_string()))?;
    let mut count = 0;
    let mut in_statement = false;
    let mut first_word: Option<String> = None;
    for t in &tokens {
        match t {
            Token::Whitespace(_) | Token::EOF => {}
            Token::SemiColon => in_statement = false,
            other => {
                if !in_statement {
                    count += 1;
                    in_statement = true;
                }
                if first_word.is_none() && count == 1 {
                    match other {
                        Token::LParen => {}
                        Token::Word(w) => first_word = Some(w.value.to_ascii_uppercase()),
                        tok => first_word = Some(tok.to_string()),
                    }
                }
            }
        }
    }
    if count == 0 {
        return Err(SqlError::Empty);
    }
    if count > 1 {
        return Err(SqlError::MultipleStatements(count));
    }
    match first_word.as_deref() {
        Some("SELECT" | "WITH" | "VALUES") => Ok(()),
        Some(w) => Err(SqlError::NotAQuery(w.to_owned())),
        None => Err(SqlError::Empty),
    }
}

/// A short name for a statement kind in error messages ("INSERT", "DROP TABLE", …).
fn statement_kind(stmt: &Statement) -> String {
    let text = stmt.to_string();
    let mut words = text.split_whitespace().map(str::to_ascii_uppercase);
    let first = words.next().unwrap_or_default();
    match first.as_str() {
        "CREATE" | "DROP" | "ALTER" => match words.next() {
            Some(second) => format!("{first} {second}"),
            None => first,
        },
        _ => first,
    }
}

/// Identifier parts of a name, or `None` when a part is not a plain identifier.
fn name_parts(name: &ObjectName) -> Option<Vec<&str>> {
    name.0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => Some(i.value.as_str()),
            ObjectNamePart::Function(_) => None,
        })
        .collect()
}

/// What a FROM name refers to.
enum Resolved<'s> {
    Cte(String),
    Table(&'s TableInfo),
}

/// The walk over the parsed statement: checks every node, rewrites tenant tables.
struct Checker<'a> {
    schema: &'a Schema,
    policy: &'a Policy,
    /// CTE names visible at the current point, one frame per enclosing query (lower case).
    scopes: Vec<Vec<String>>,
    statements: usize,
    tables: BTreeSet<String>,
    ctes: BTreeSet<String>,
    filtered: bool,
    /// Whether the query reads anything of the data: a column, `*`, or `COUNT(*)`.
    reads_data: bool,
}

impl<'a> Checker<'a> {
    fn resolve(&self, name: &ObjectName) -> Result<Resolved<'a>> {
        let parts = name_parts(name)
            .ok_or_else(|| SqlError::Unsupported(format!("the table name `{name}`")))?;
        let table = match parts.as_slice() {
            [t] => *t,
            [schema, t] if schema.eq_ignore_ascii_case("main") => *t,
            _ => {
                return Err(SqlError::Unsupported(format!(
                    "the qualified table name `{name}` (only `main.` is allowed)"
                )));
            }
        };
        if is_internal(table) {
            return Err(SqlError::InternalTable(table.to_owned()));
        }
        if parts.len() == 1 {
            let lower = table.to_ascii_lowercase();
            if self.scopes.iter().any(|frame| frame.contains(&lower)) {
                return Ok(Resolved::Cte(table.to_owned()));
            }
        }
        self.schema
            .table(table)
            .map(Resolved::Table)
            .ok_or_else(|| SqlError::UnknownTable(table.to_owned()))
    }

    fn check_query(&self, q: &Query) -> Result<()> {
        if q.fetch.is_some() {
            return Err(SqlError::Unsupported("FETCH FIRST (use LIMIT)".into()));
        }
        if !q.locks.is_empty() {
            return Err(SqlError::NotAQuery("SELECT … FOR UPDATE/SHARE".into()));
        }
        if q.for_clause.is_some()
            || q.settings.is_some()
            || q.format_clause.is_some()
            || !q.pipe_operators.is_empty()
        {
            return Err(SqlError::Unsupported(
                "a query clause outside SQLite's syntax".into(),
            ));
        }
        if let Some(LimitClause::LimitOffset { limit_by, .. }) = &q.limit_clause
            && !limit_by.is_empty()
        {
            return Err(SqlError::Unsupported("LIMIT … BY".into()));
        }
        check_set_expr(&q.body)
    }
}

fn check_set_expr(body: &SetExpr) -> Result<()> {
    match body {
        SetExpr::Select(_) | SetExpr::Query(_) | SetExpr::Values(_) => Ok(()),
        SetExpr::SetOperation { left, right, .. } => {
            check_set_expr(left)?;
            check_set_expr(right)
        }
        SetExpr::Insert(_) => Err(SqlError::NotAQuery("INSERT".into())),
        SetExpr::Update(_) => Err(SqlError::NotAQuery("UPDATE".into())),
        SetExpr::Delete(_) => Err(SqlError::NotAQuery("DELETE".into())),
        SetExpr::Merge(_) => Err(SqlError::NotAQuery("MERGE".into())),
        other => Err(SqlError::Unsupported(format!("the query form `{other}`"))),
    }
}

fn flow(r: Result<()>) -> ControlFlow<SqlError> {
    match r {
        Ok(()) => ControlFlow::Continue(()),
        Err(e) => ControlFlow::Break(e),
    }
}

impl VisitorMut for Checker<'_> {
    type Break = SqlError;

    fn pre_visit_statement(&mut self, stmt: &mut Statement) -> ControlFlow<SqlError> {
        self.statements += 1;
        if self.statements > 1 || !matches!(stmt, Statement::Query(_)) {
            return ControlFlow::Break(SqlError::NotAQuery(statement_kind(stmt)));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<SqlError> {
        flow(self.check_query(q))?;
        let mut frame = Vec::new();
        if let Some(with) = &q.with {
            for cte in &with.cte_tables {
                let name = &cte.alias.name.value;
                if is_internal(name) {
                    return ControlFlow::Break(SqlError::InternalTable(name.clone()));
                }
                if self.schema.table(name).is_some() {
                    return ControlFlow::Break(SqlError::Unsupported(format!(
                        "a WITH clause named `{name}` like an existing table or view"
                    )));
                }
                frame.push(name.to_ascii_lowercase());
            }
        }
        self.scopes.push(frame);
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _q: &mut Query) -> ControlFlow<SqlError> {
        self.scopes.pop();
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<SqlError> {
        if select.into.is_some() {
            return ControlFlow::Break(SqlError::NotAQuery("SELECT INTO".into()));
        }
        if select.projection.iter().any(|item| {
            matches!(
                item,
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
            )
        }) {
            self.reads_data = true;
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<SqlError> {
        match tf {
            TableFactor::Table {
                name,
                args,
                with_hints,
                version,
                partitions,
                json_path,
                sample,
                index_hints,
                with_ordinality,
                ..
            } => {
                if args.is_some() || *with_ordinality {
                    let shown = name.to_string();
                    if name_parts(name)
                        .and_then(|p| p.last().copied())
                        .is_some_and(is_internal)
                    {
                        return ControlFlow::Break(SqlError::InternalTable(shown));
                    }
                    return ControlFlow::Break(SqlError::Unsupported(format!(
                        "the table-valued function `{shown}`"
                    )));
                }
                if !with_hints.is_empty()
                    || version.is_some()
                    || !partitions.is_empty()
                    || json_path.is_some()
                    || sample.is_some()
                    || !index_hints.is_empty()
                {
                    return ControlFlow::Break(SqlError::Unsupported(format!(
                        "table hints on `{name}`"
                    )));
                }
                match self.resolve(name) {
                    Ok(_) => ControlFlow::Continue(()),
                    Err(e) => ControlFlow::Break(e),
                }
            }
            TableFactor::Derived {
                lateral, sample, ..
            } => {
                if *lateral || sample.is_some() {
                    return ControlFlow::Break(SqlError::Unsupported(
                        "LATERAL or sampled subqueries".into(),
                    ));
                }
                ControlFlow::Continue(())
            }
            TableFactor::NestedJoin { .. } => ControlFlow::Continue(()),
            other => ControlFlow::Break(SqlError::Unsupported(format!("the FROM item `{other}`"))),
        }
    }

    fn post_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<SqlError> {
        let TableFactor::Table { name, alias, .. } = tf else {
            return ControlFlow::Continue(());
        };
        let info = match self.resolve(name) {
            Ok(Resolved::Cte(name)) => {
                self.ctes.insert(name);
                return ControlFlow::Continue(());
            }
            Ok(Resolved::Table(info)) => info,
            Err(e) => return ControlFlow::Break(e),
        };
        self.tables.insert(info.name.clone());
        let Some(tenant) = &self.policy.tenant else {
            return ControlFlow::Continue(());
        };
        let Some(col) = info.column(&tenant.column) else {
            if self.policy.is_shared(&info.name) {
                return ControlFlow::Continue(());
            }
            return ControlFlow::Break(SqlError::NotTenantScoped {
                table: info.name.clone(),
                column: tenant.column.clone(),
            });
        };
        // Keep the name the rest of the query uses for this table: its alias, else its name.
        let alias = match alias.take() {
            Some(a) => TableAlias {
                explicit: true,
                ..a
            },
            None => {
                let Some(ObjectNamePart::Identifier(last)) = name.0.last() else {
                    return ControlFlow::Break(SqlError::Unsupported(format!(
                        "the table name `{name}`"
                    )));
                };
                TableAlias {
                    explicit: true,
                    name: last.clone(),
                    columns: Vec::new(),
                    at: None,
                }
            }
        };
        match tenant_subquery(info, &col.name) {
            Ok(subquery) => {
                *tf = TableFactor::Derived {
                    lateral: false,
                    subquery: Box::new(subquery),
                    alias: Some(alias),
                    sample: None,
                };
                self.filtered = true;
                ControlFlow::Continue(())
            }
            Err(e) => ControlFlow::Break(e),
        }
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<SqlError> {
        match expr {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => self.reads_data = true,
            Expr::Function(f) => {
                if let FunctionArguments::List(list) = &f.args
                    && list.args.iter().any(|a| {
                        matches!(
                            a,
                            FunctionArg::Unnamed(
                                FunctionArgExpr::Wildcard | FunctionArgExpr::QualifiedWildcard(_)
                            )
                        )
                    })
                {
                    self.reads_data = true;
                }
            }
            _ => {}
        }
        if let Expr::Function(f) = expr {
            let allowed = match name_parts(&f.name).as_deref() {
                Some([single]) => is_allowed_function(single),
                _ => false,
            };
            if !allowed {
                return ControlFlow::Break(SqlError::FunctionNotAllowed(f.name.to_string()));
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_value(&mut self, value: &mut ValueWithSpan) -> ControlFlow<SqlError> {
        if let AstValue::Placeholder(p) = &value.value {
            return ControlFlow::Break(SqlError::Unsupported(format!(
                "the parameter placeholder `{p}`"
            )));
        }
        ControlFlow::Continue(())
    }
}

/// `SELECT * FROM "table" WHERE "column" = ?1`, parsed from text whose only variable parts are
/// quoted identifiers taken from the schema.
fn tenant_subquery(table: &TableInfo, column: &str) -> Result<Query> {
    let sql = format!(
        "SELECT * FROM {} WHERE {} = ?1",
        quote_ident(&table.name),
        quote_ident(column)
    );
    let mut stmts = Parser::parse_sql(&SQLiteDialect {}, &sql)
        .map_err(|e| SqlError::Parse(format!("tenant filter for `{}`: {e}", table.name)))?;
    match stmts.pop() {
        Some(Statement::Query(q)) if stmts.is_empty() => Ok(*q),
        _ => Err(SqlError::Unsupported(format!(
            "a tenant filter on `{}`",
            table.name
        ))),
    }
}

fn number(n: usize) -> Expr {
    Expr::value(AstValue::Number(n.to_string(), false))
}

/// A literal non-negative integer, if `e` is one.
fn literal_u64(e: &Expr) -> Option<u64> {
    match e {
        Expr::Value(ValueWithSpan {
            value: AstValue::Number(n, _),
            ..
        }) => n.parse().ok(),
        _ => None,
    }
}

/// Makes the outermost LIMIT at most `max`; returns whether it was set or lowered.
fn force_limit(q: &mut Query, max: usize) -> Result<bool> {
    let max_u64 = u64::try_from(max).unwrap_or(u64::MAX);
    let (limit, offset) = match q.limit_clause.take() {
        None => (None, None),
        Some(LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) => {
            if !limit_by.is_empty() {
                return Err(SqlError::Unsupported("LIMIT … BY".into()));
            }
            (limit, offset)
        }
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => (
            Some(limit),
            Some(Offset {
                value: offset,
                rows: OffsetRows::None,
            }),
        ),
    };
    let (limit, forced) = match limit {
        Some(l) if literal_u64(&l).is_some_and(|n| n <= max_u64) => (l, false),
        _ => (number(max), true),
    };
    q.limit_clause = Some(LimitClause::LimitOffset {
        limit: Some(limit),
        offset,
        limit_by: Vec::new(),
    });
    Ok(forced)
}

#[cfg(test)]
mod tests;
