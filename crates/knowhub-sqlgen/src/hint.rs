//! What to tell the model after a statement failed, worked out from the schema rather than left
//! to the model: small models answer "no such column: T2.AccountManagerId" by writing the same join
//! again, but given "AccountManagerId is a column of Member, not of Sale; join with
//! Sale.MemberId = Member.MemberId" they usually fix it. The hint also names the
//! tables the retry's prompt must describe (the one that holds the column may have been left
//! out by the question's focus).
//!
//! Everything here reads the schema and the failed text only; the corrected statement goes
//! through validation like any other.

use std::collections::{BTreeSet, HashMap, VecDeque};

use knowhub_sql::Schema;

/// Advice for one failed statement.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hint {
    /// `-- `-commented lines for the prompt (may be empty).
    pub lines: Vec<String>,
    /// Tables the retry's prompt should describe, beside the question's focus.
    pub tables: Vec<String>,
}

/// Joins at most this many tables apart are spelled out.
const MAX_HOPS: usize = 3;

/// The hint for `failed` (the statement as the model wrote it) that produced `error`.
pub fn for_error(schema: &Schema, failed: &str, error: &str) -> Hint {
    let lower = error.to_lowercase();
    if let Some(rest) = find_after(&lower, error, "no such column: ") {
        return missing_column(schema, failed, first_word(rest));
    }
    if let Some(rest) = find_after(&lower, error, "unknown table or view `") {
        return missing_table(schema, rest.split('`').next().unwrap_or(""));
    }
    if let Some(rest) = find_after(&lower, error, "no such table: ") {
        return missing_table(schema, first_word(rest));
    }
    if let Some(rest) = find_after(&lower, error, "ambiguous column name: ") {
        let column = first_word(rest);
        return Hint {
            lines: vec![format!(
                "{column} is in more than one joined table: write it as table.{column}."
            )],
            tables: Vec::new(),
        };
    }
    if let Some(rest) = find_after(&lower, error, "the function `") {
        let function = rest.split('`').next().unwrap_or("");
        if let Some(line) = sqlite_equivalent(function) {
            return Hint {
                lines: vec![line.to_string()],
                tables: Vec::new(),
            };
        }
    }
    if lower.contains("misuse of aggregate") {
        return Hint {
            lines: vec![
                "An aggregate cannot contain another aggregate: compute the inner one per group \
                 in a subquery, e.g. SELECT AVG(n) FROM (SELECT COUNT(*) AS n FROM t GROUP BY g)."
                    .into(),
            ],
            tables: Vec::new(),
        };
    }
    Hint::default()
}

/// What SQLite writes instead of a function of another dialect (MySQL, SQL Server, PostgreSQL)
/// that small models reach for: `DATE_FORMAT(d, …)` is `strftime(…, d)` here. (`YEAR(d)`,
/// `MONTH(d)`, `DAY(d)` never get this far: `knowhub_sql::translate_date_functions` rewrites
/// them before validation.)
fn sqlite_equivalent(function: &str) -> Option<&'static str> {
    Some(match function.to_ascii_uppercase().as_str() {
        "DATE_FORMAT" | "TO_CHAR" | "FORMAT" => {
            "SQLite formats dates with strftime(format, column), e.g. strftime('%Y-%m', column)."
        }
        "EXTRACT" | "DATEPART" | "DATE_PART" => {
            "SQLite takes date parts with strftime: strftime('%Y', column) for the year, \
             strftime('%m', column) for the month."
        }
        "NOW" | "CURDATE" | "GETDATE" | "CURRENT_DATE" | "SYSDATE" => {
            "SQLite writes today's date as date('now')."
        }
        "DATEDIFF" => "SQLite counts days between dates as julianday(a) - julianday(b).",
        "CONCAT" => "SQLite joins text with ||: first_name || ' ' || last_name.",
        "LEN" => "SQLite's length of a text is length(column).",
        "ISNULL" | "NVL" => "SQLite writes IFNULL(column, fallback) or COALESCE(column, fallback).",
        "IF" => "SQLite writes IIF(condition, a, b) or CASE WHEN condition THEN a ELSE b END.",
        "TOP" => "SQLite writes ORDER BY … LIMIT n, not TOP n.",
        _ => return None,
    })
}

/// The text of `original` after the first `needle` found in `lower` (its lower-cased copy).
fn find_after<'a>(lower: &str, original: &'a str, needle: &str) -> Option<&'a str> {
    let at = lower.find(needle)?;
    original.get(at + needle.len()..)
}

/// The leading identifier (possibly `alias.column`) of `s`.
fn first_word(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '"' | '`' | '[' | ']')))
        .unwrap_or(s.len());
    s[..end].trim_end_matches('.')
}

fn unquote(s: &str) -> &str {
    s.trim_matches(|c| matches!(c, '"' | '`' | '[' | ']'))
}

fn missing_column(schema: &Schema, failed: &str, written: &str) -> Hint {
    let (qualifier, column) = match written.rsplit_once('.') {
        Some((q, c)) => (Some(unquote(q)), unquote(c)),
        None => (None, unquote(written)),
    };
    if column.is_empty() {
        return Hint::default();
    }
    let used = tables_in(schema, failed);
    let named = qualifier.and_then(|q| resolve(schema, failed, q));
    let mut holders: Vec<&str> = schema
        .tables
        .iter()
        .filter(|t| t.column(column).is_some())
        .map(|t| t.name.as_str())
        .collect();
    // A common name (`Name`, `id`) is in many tables: name those the statement joins.
    if holders.iter().any(|h| used.iter().any(|u| u == h)) {
        holders.retain(|h| used.iter().any(|u| u == h));
    }
    let mut hint = Hint::default();
    if holders.is_empty() {
        // An invented column: show what the table the model meant has.
        let shown = named.clone().or_else(|| used.first().cloned());
        if let Some(table) = shown.and_then(|n| schema.table(&n)) {
            let columns: Vec<&str> = table.columns.iter().map(|c| c.name.as_str()).collect();
            hint.lines.push(format!(
                "No table has a column {column}. {} has: {}.",
                table.name,
                columns.join(", ")
            ));
            hint.tables.push(table.name.clone());
        } else {
            hint.lines.push(format!(
                "No table has a column {column}: use the columns shown."
            ));
        }
        return hint;
    }
    let not_of = named
        .as_deref()
        .filter(|n| !holders.iter().any(|h| h.eq_ignore_ascii_case(n)))
        .map(|n| format!(", not of {n}"))
        .unwrap_or_default();
    hint.lines.push(format!(
        "{column} is a column of {}{not_of}.",
        holders.join(" and ")
    ));
    // How to reach the holder from what the statement already joins.
    let holder = holders[0];
    if !used.iter().any(|u| u.eq_ignore_ascii_case(holder)) {
        let best = used
            .iter()
            .filter_map(|u| join_path(schema, u, holder))
            .min_by_key(Vec::len);
        if let Some(path) = best {
            hint.lines.push(format!(
                "Join {holder} with {}.",
                path.iter()
                    .map(|(a, b)| format!("{a} = {b}"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ));
            for (a, b) in &path {
                for side in [a, b] {
                    if let Some((t, _)) = side.split_once('.') {
                        push_unique(&mut hint.tables, t);
                    }
                }
            }
        }
    }
    for h in holders {
        push_unique(&mut hint.tables, h);
    }
    hint
}

fn missing_table(schema: &Schema, written: &str) -> Hint {
    let written = unquote(written.trim());
    let norm = |s: &str| {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    let target = norm(written);
    if target.is_empty() {
        return Hint::default();
    }
    let singular = |s: &str| s.strip_suffix('s').map(str::to_string).unwrap_or(s.into());
    let found = schema
        .tables
        .iter()
        .find(|t| norm(&t.name) == target)
        .or_else(|| {
            schema
                .tables
                .iter()
                .find(|t| singular(&norm(&t.name)) == singular(&target))
        });
    match found {
        Some(t) => Hint {
            lines: vec![format!(
                "There is no table {written}; the table is called {}.",
                t.name
            )],
            tables: vec![t.name.clone()],
        },
        None => {
            let names: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
            Hint {
                lines: vec![format!(
                    "There is no table {written}. The tables are: {}.",
                    names.join(", ")
                )],
                tables: Vec::new(),
            }
        }
    }
}

fn push_unique(list: &mut Vec<String>, name: &str) {
    if !list.iter().any(|x| x.eq_ignore_ascii_case(name)) {
        list.push(name.to_string());
    }
}

/// Identifier-like words of `sql` (quotes removed), in order.
fn words(sql: &str) -> Vec<&str> {
    sql.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// The schema's tables that `sql` names, in order of first mention.
fn tables_in(schema: &Schema, sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    for w in words(sql) {
        if let Some(t) = schema.table(w) {
            push_unique(&mut out, &t.name);
        }
    }
    out
}

/// The table that `qualifier` (a table name or an alias written `Table AS q` / `Table q`)
/// stands for in `sql`.
fn resolve(schema: &Schema, sql: &str, qualifier: &str) -> Option<String> {
    if let Some(t) = schema.table(qualifier) {
        return Some(t.name.clone());
    }
    let w = words(sql);
    w.iter().enumerate().find_map(|(i, word)| {
        if !word.eq_ignore_ascii_case(qualifier) || i == 0 {
            return None;
        }
        let before = if w[i - 1].eq_ignore_ascii_case("as") && i >= 2 {
            w[i - 2]
        } else {
            w[i - 1]
        };
        schema.table(before).map(|t| t.name.clone())
    })
}

/// One table's reference to another: a declared foreign key, or (for a table that declares
/// none) a `…Id` / `…_id` column named after another table (AuthorId → Author, customer_id →
/// member). The one description of how tables join, for the question's focus and for hints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reference {
    /// Index of the referencing table in `schema.tables`.
    pub from: usize,
    /// Index of the referenced table.
    pub to: usize,
    /// (column of `from`, column of `to`) pairs whose target column is known.
    pub columns: Vec<(String, String)>,
}

/// Every reference of the schema, table by table in schema order, each table's in declaration
/// (or column) order.
pub(crate) fn references(schema: &Schema) -> Vec<Reference> {
    let position = |name: &str| {
        schema
            .tables
            .iter()
            .position(|x| !name.is_empty() && x.name.eq_ignore_ascii_case(name))
    };
    let mut out = Vec::new();
    for (from, t) in schema.tables.iter().enumerate() {
        if !t.foreign_keys.is_empty() {
            for fk in &t.foreign_keys {
                let Some(to) = position(&fk.ref_table) else {
                    continue;
                };
                let target = &schema.tables[to];
                let columns = fk
                    .columns
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| {
                        let ref_column = fk.ref_columns.get(i).cloned().or_else(|| {
                            target
                                .columns
                                .iter()
                                .find(|x| x.primary_key == (i as u32) + 1)
                                .map(|x| x.name.clone())
                        })?;
                        Some((c.clone(), ref_column))
                    })
                    .collect();
                out.push(Reference { from, to, columns });
            }
            continue;
        }
        for c in &t.columns {
            let lower = c.name.to_lowercase();
            let Some(base) = lower
                .strip_suffix("_id")
                .or_else(|| lower.strip_suffix("id"))
            else {
                continue;
            };
            let Some(to) = position(base).filter(|&to| to != from) else {
                continue;
            };
            let target = &schema.tables[to];
            let columns = target
                .column(&c.name)
                .or_else(|| target.columns.iter().find(|x| x.primary_key == 1))
                .map(|x| vec![(c.name.clone(), x.name.clone())])
                .unwrap_or_default();
            out.push(Reference { from, to, columns });
        }
    }
    out
}

/// The shortest chain of join conditions from `from` to `to` (at most [`MAX_HOPS`]), each
/// written `Table.column = Other.column`.
fn join_path(schema: &Schema, from: &str, to: &str) -> Option<Vec<(String, String)>> {
    let mut adjacent: HashMap<String, Vec<(String, String, String)>> = HashMap::new();
    for r in references(schema) {
        let (a, b) = (&schema.tables[r.from].name, &schema.tables[r.to].name);
        let (la, lb) = (a.to_lowercase(), b.to_lowercase());
        for (ac, bc) in &r.columns {
            adjacent.entry(la.clone()).or_default().push((
                lb.clone(),
                format!("{a}.{ac}"),
                format!("{b}.{bc}"),
            ));
            adjacent.entry(lb.clone()).or_default().push((
                la.clone(),
                format!("{b}.{bc}"),
                format!("{a}.{ac}"),
            ));
        }
    }
    let (from, to) = (from.to_lowercase(), to.to_lowercase());
    let mut previous: HashMap<String, (String, String, String)> = HashMap::new();
    let mut seen = BTreeSet::from([from.clone()]);
    let mut queue = VecDeque::from([(from.clone(), 0usize)]);
    while let Some((table, hops)) = queue.pop_front() {
        if table == to {
            let mut path = Vec::new();
            let mut at = table;
            while let Some((prev, a, b)) = previous.get(&at) {
                path.push((a.clone(), b.clone()));
                at = prev.clone();
            }
            path.reverse();
            return Some(path);
        }
        if hops == MAX_HOPS {
            continue;
        }
        for (next, a, b) in adjacent.get(&table).into_iter().flatten() {
            if seen.insert(next.clone()) {
                previous.insert(next.clone(), (table.clone(), a.clone(), b.clone()));
                queue.push_back((next.clone(), hops + 1));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use knowhub_sql::{ColumnInfo, ForeignKey, TableInfo, TableKind};

    /// A music shop shaped like the common sample databases: the support rep sits on the
    /// customer, not on the invoice; sales lines reach artists through tracks and albums.
    fn shop() -> Schema {
        let col = |name: &str, pk: u32| ColumnInfo {
            name: name.into(),
            decl_type: "TEXT".into(),
            samples: Vec::new(),
            values: vec![],
            primary_key: pk,
        };
        let fk = |from: &str, to: &str| ForeignKey {
            columns: vec![from.into()],
            ref_table: to.into(),
            ref_columns: vec![from.into()],
        };
        let table = |name: &str, cols: &[(&str, u32)], fks: Vec<ForeignKey>| TableInfo {
            name: name.into(),
            kind: TableKind::Table,
            columns: cols.iter().map(|(c, pk)| col(c, *pk)).collect(),
            row_count: None,
            foreign_keys: fks,
        };
        Schema {
            tables: vec![
                table(
                    "Album",
                    &[("AlbumId", 1), ("Title", 0), ("ArtistId", 0)],
                    vec![fk("ArtistId", "Artist")],
                ),
                table("Artist", &[("ArtistId", 1), ("Name", 0)], vec![]),
                table(
                    "Customer",
                    &[("CustomerId", 1), ("FirstName", 0), ("SupportRepId", 0)],
                    vec![],
                ),
                table("Employee", &[("EmployeeId", 1), ("LastName", 0)], vec![]),
                table(
                    "Invoice",
                    &[("InvoiceId", 1), ("CustomerId", 0), ("Total", 0)],
                    vec![fk("CustomerId", "Customer")],
                ),
                table(
                    "InvoiceLine",
                    &[("InvoiceLineId", 1), ("TrackId", 0), ("Quantity", 0)],
                    vec![fk("TrackId", "Track")],
                ),
                table(
                    "PlaylistTrack",
                    &[("PlaylistId", 1), ("TrackId", 2)],
                    vec![fk("TrackId", "Track")],
                ),
                table(
                    "Track",
                    &[("TrackId", 1), ("Name", 0), ("AlbumId", 0)],
                    vec![fk("AlbumId", "Album")],
                ),
            ],
        }
    }

    #[test]
    fn hints_for_failed_statements() {
        let s = shop();
        for (sql, error, lines, tables) in [
            (
                "SELECT T2.SupportRepId FROM Customer AS T1 JOIN Invoice AS T2 ON T1.CustomerId \
                 = T2.CustomerId",
                "the database reported an error: no such column: T2.SupportRepId",
                vec!["SupportRepId is a column of Customer, not of Invoice."],
                vec!["Customer"],
            ),
            // The holder is not joined yet: the join chain is spelled out.
            (
                "SELECT SupportRepId, SUM(Total) FROM Invoice GROUP BY SupportRepId",
                "no such column: SupportRepId in SELECT SupportRepId …",
                vec![
                    "SupportRepId is a column of Customer.",
                    "Join Customer with Invoice.CustomerId = Customer.CustomerId.",
                ],
                vec!["Invoice", "Customer"],
            ),
            (
                "SELECT T1.Name FROM Track T1 JOIN PlaylistTrack T2 ON T1.TrackId = T2.TrackId \
                 ORDER BY SUM(T2.Quantity)",
                "no such column: T2.Quantity",
                vec![
                    "Quantity is a column of InvoiceLine, not of PlaylistTrack.",
                    "Join InvoiceLine with Track.TrackId = InvoiceLine.TrackId.",
                ],
                vec!["Track", "InvoiceLine"],
            ),
            (
                "SELECT a.Name FROM Artist a JOIN Album b ON a.ArtistId = b.ArtistId WHERE \
                 b.GenreId = 1",
                "no such column: b.GenreId",
                vec!["No table has a column GenreId. Album has: AlbumId, Title, ArtistId."],
                vec!["Album"],
            ),
            // Name is in several tables: the joined ones are named.
            (
                "SELECT T1.Name FROM InvoiceLine AS T1 JOIN Track AS T2 ON T1.TrackId = \
                 T2.TrackId JOIN Album AS T3 ON T2.AlbumId = T3.AlbumId JOIN Artist AS T4 ON \
                 T3.ArtistId = T4.ArtistId",
                "no such column: T1.Name",
                vec!["Name is a column of Artist and Track, not of InvoiceLine."],
                vec!["Artist", "Track"],
            ),
            (
                "SELECT * FROM playlist_track",
                "unknown table or view `playlist_track`",
                vec!["There is no table playlist_track; the table is called PlaylistTrack."],
                vec!["PlaylistTrack"],
            ),
            (
                "SELECT * FROM Customers",
                "no such table: Customers",
                vec!["There is no table Customers; the table is called Customer."],
                vec!["Customer"],
            ),
            (
                "SELECT * FROM Address",
                "unknown table or view `Address`",
                vec![
                    "There is no table Address. The tables are: Album, Artist, Customer, \
                     Employee, Invoice, InvoiceLine, PlaylistTrack, Track.",
                ],
                vec![],
            ),
            (
                "SELECT AVG(COUNT(TrackId)) FROM Track",
                "misuse of aggregate function COUNT()",
                vec![
                    "An aggregate cannot contain another aggregate: compute the inner one per \
                     group in a subquery, e.g. SELECT AVG(n) FROM (SELECT COUNT(*) AS n FROM t \
                     GROUP BY g).",
                ],
                vec![],
            ),
            (
                "SELECT DATE_FORMAT(InvoiceDate, '%Y-%m') FROM Invoice",
                "the function `DATE_FORMAT` is not allowed (only pure functions on the allowlist \
                 are)",
                vec![
                    "SQLite formats dates with strftime(format, column), e.g. \
                     strftime('%Y-%m', column).",
                ],
                vec![],
            ),
            (
                "SELECT CONCAT(FirstName, ' ', LastName) FROM Employee",
                "the function `concat` is not allowed (only pure functions on the allowlist are)",
                vec!["SQLite joins text with ||: first_name || ' ' || last_name."],
                vec![],
            ),
            // A function with no SQLite counterpart to point at: no hint.
            (
                "SELECT load_extension('x') FROM Track",
                "the function `load_extension` is not allowed (only pure functions on the \
                 allowlist are)",
                vec![],
                vec![],
            ),
            (
                "SELECT 1",
                "the query ran longer than 2s and was stopped",
                vec![],
                vec![],
            ),
        ] {
            let hint = for_error(&s, sql, error);
            assert_eq!(hint.lines, lines, "{error}");
            assert_eq!(hint.tables, tables, "{error}");
        }
    }

    #[test]
    fn join_paths_follow_foreign_keys_both_ways() {
        let s = shop();
        let path = join_path(&s, "InvoiceLine", "Artist").map(|p| {
            p.iter()
                .map(|(a, b)| format!("{a} = {b}"))
                .collect::<Vec<_>>()
        });
        assert_eq!(
            path,
            Some(vec![
                "InvoiceLine.TrackId = Track.TrackId".to_string(),
                "Track.AlbumId = Album.AlbumId".into(),
                "Album.ArtistId = Artist.ArtistId".into(),
            ])
        );
        assert_eq!(join_path(&s, "Employee", "Track"), None);
    }
}
