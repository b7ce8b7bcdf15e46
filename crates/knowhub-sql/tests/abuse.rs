//! Hostile queries against a fixture database: every attempt must be refused, stopped, or see
//! only the caller's tenant, and the database file must be byte-identical afterwards.
//! `cargo test -p knowhub-sql --test abuse -- --nocapture` prints the attempt → outcome table.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use knowhub_sql::{
    Policy, QueryResult, SqlError, TenantFilter, Value, execute, introspect, validate,
};
use sha2::{Digest, Sha256};

const TENANT: &str = "acme";

fn build_fixture(dir: &Path) -> PathBuf {
    let path = dir.join("shop.sqlite");
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, name TEXT, country TEXT);
         CREATE TABLE orders (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, customer_id INTEGER,
                              total REAL, note TEXT);
         CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, price REAL);
         CREATE TABLE secrets (id INTEGER PRIMARY KEY, value TEXT);
         CREATE INDEX orders_tenant ON orders(tenant);
         CREATE VIEW order_summary AS
           SELECT tenant, customer_id, count(*) AS n, sum(total) AS total FROM orders
           GROUP BY tenant, customer_id;
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20)
         INSERT INTO customers SELECT i, CASE WHEN i % 2 = 0 THEN 'acme' ELSE 'globex' END,
                'customer ' || i, CASE WHEN i % 3 = 0 THEN 'Brazil' ELSE 'Canada' END FROM n;
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400)
         INSERT INTO orders SELECT i, CASE WHEN i % 2 = 0 THEN 'acme' ELSE 'globex' END,
                1 + (i % 20), i * 1.5, 'note ' || i FROM n;
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50)
         INSERT INTO products SELECT i, 'product ' || i, i * 2.0 FROM n;
         INSERT INTO secrets VALUES (1, 'the launch code');",
    )
    .unwrap();
    drop(c);
    let other = dir.join("other.sqlite");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE loot (x); INSERT INTO loot VALUES ('stolen');")
        .unwrap();
    path
}

fn sha256(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// What an attempt must end in.
enum Expect {
    /// Refused by validation or by the database (any error but a timeout).
    Refuse,
    /// Stopped quickly: a timeout, or a result cut at the limit.
    Stop,
    /// Runs, and the rows satisfy the check (typically: only the caller's tenant).
    Rows(fn(&QueryResult) -> bool),
    /// Syntax the parser may or may not take: refused, or runs and satisfies the check.
    RefuseOrRows(fn(&QueryResult) -> bool),
}

/// Every `tenant` cell (by column name) is the caller's, and there is at least one row.
fn only_tenant(r: &QueryResult) -> bool {
    let cols: Vec<usize> = r
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.eq_ignore_ascii_case("tenant"))
        .map(|(i, _)| i)
        .collect();
    !r.rows.is_empty()
        && !cols.is_empty()
        && r.rows
            .iter()
            .all(|row| cols.iter().all(|&i| row[i] == Value::Text(TENANT.into())))
}

/// Every cell of the result is the caller's tenant name.
fn all_cells_tenant(r: &QueryResult) -> bool {
    !r.rows.is_empty()
        && r.rows
            .iter()
            .flatten()
            .all(|v| *v == Value::Text(TENANT.into()))
}

fn single(r: &QueryResult, want: Value) -> bool {
    r.rows == vec![vec![want]]
}

fn attempts(other_db: &str) -> Vec<(String, Expect)> {
    use Expect::*;
    let deep = format!("SELECT {}1{}", "(".repeat(500), ")".repeat(500));
    let long = format!("SELECT 1 {}", " ".repeat(200_000));
    vec![
        // Writes of every kind.
        ("INSERT INTO orders (tenant, total) VALUES ('acme', 1)".into(), Refuse),
        ("UPDATE orders SET total = 0".into(), Refuse),
        ("DELETE FROM orders".into(), Refuse),
        ("DROP TABLE orders".into(), Refuse),
        ("CREATE TABLE evil (x)".into(), Refuse),
        ("ALTER TABLE orders ADD COLUMN evil TEXT".into(), Refuse),
        ("REPLACE INTO products VALUES (1, 'free', 0)".into(), Refuse),
        ("INSERT OR REPLACE INTO products VALUES (1, 'free', 0)".into(), Refuse),
        ("CREATE TRIGGER t AFTER INSERT ON orders BEGIN DELETE FROM orders; END".into(), Refuse),
        ("CREATE VIEW v AS SELECT * FROM secrets".into(), Refuse),
        ("WITH x AS (SELECT 1) INSERT INTO products SELECT 99, 'x', 0 FROM x".into(), Refuse),
        ("WITH x AS (SELECT 1) DELETE FROM orders".into(), Refuse),
        ("SELECT * INTO stolen FROM orders".into(), Refuse),
        // PRAGMA, ATTACH and other administration.
        ("PRAGMA writable_schema = ON".into(), Refuse),
        ("PRAGMA query_only = OFF".into(), Refuse),
        ("PRAGMA journal_mode = DELETE".into(), Refuse),
        ("pragma table_info(orders)".into(), Refuse),
        (format!("ATTACH DATABASE '{other_db}' AS other"), Refuse),
        ("SELECT * FROM other.loot".into(), Refuse),
        ("DETACH DATABASE main".into(), Refuse),
        ("VACUUM".into(), Refuse),
        ("VACUUM INTO '/tmp/knowhub-sql-copy.db'".into(), Refuse),
        ("REINDEX".into(), Refuse),
        ("ANALYZE".into(), Refuse),
        ("BEGIN IMMEDIATE".into(), Refuse),
        ("SAVEPOINT s".into(), Refuse),
        // More than one statement, comment and literal tricks.
        ("SELECT 1; DROP TABLE orders".into(), Refuse),
        ("SELECT 1 -- harmless\n; DELETE FROM orders".into(), Refuse),
        ("SELECT 1 /* c */; UPDATE orders SET total = 0".into(), Refuse),
        ("SELECT 1 /* /* */ ; DROP TABLE orders; -- */".into(), Refuse),
        ("SELECT '\\'; DROP TABLE orders; --'".into(), Refuse),
        (
            "SELECT 'x''; DROP TABLE orders; --' AS s".into(),
            Rows(|r| single(r, Value::Text("x'; DROP TABLE orders; --".into()))),
        ),
        ("SELECT 1;;".into(), Rows(|r| single(r, Value::Integer(1)))),
        // Dangerous and internal functions and tables.
        ("SELECT load_extension('/tmp/evil.so')".into(), Refuse),
        ("SELECT readfile('/etc/passwd')".into(), Refuse),
        ("SELECT writefile('/tmp/knowhub-sql-x', 'y')".into(), Refuse),
        ("SELECT fts3_tokenizer('simple')".into(), Refuse),
        ("SELECT sqlite_version()".into(), Refuse),
        ("SELECT length(randomblob(1000000000))".into(), Refuse),
        ("SELECT length(zeroblob(1000000000))".into(), Refuse),
        ("SELECT length(printf('%.*c', 100000000, 'x'))".into(), Refuse),
        ("SELECT * FROM sqlite_master".into(), Refuse),
        ("SELECT sql FROM main.sqlite_schema".into(), Refuse),
        ("SELECT * FROM pragma_table_info('orders')".into(), Refuse),
        ("SELECT * FROM secrets".into(), Refuse),
        ("SELECT (SELECT value FROM secrets) FROM products".into(), Refuse),
        ("SELECT * FROM оrders".into(), Refuse), // Cyrillic "о"
        ("SELECT * FROM customers WHERE id IN orders".into(), Refuse),
        ("SELECT * FROM orders WHERE tenant = ?1".into(), Refuse),
        (deep, Refuse),
        (long, Refuse),
        // Runaway queries.
        ("SELECT count(*) FROM orders a, orders b, orders c, orders d".into(), Stop),
        (
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
                .into(),
            Stop,
        ),
        (
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r".into(),
            Stop,
        ),
        ("SELECT * FROM products LIMIT 100000".into(), Stop),
        // Tenant-filter bypass attempts.
        ("SELECT * FROM orders o WHERE 1 = 1 OR tenant = 'globex'".into(), Rows(only_tenant)),
        (
            "SELECT count(*) FROM orders WHERE tenant = 'globex'".into(),
            Rows(|r| single(r, Value::Integer(0))),
        ),
        (
            "SELECT count(*) FROM orders WHERE tenant <> 'acme' OR tenant IS NULL".into(),
            Rows(|r| single(r, Value::Integer(0))),
        ),
        (
            "SELECT tenant, name FROM customers WHERE id IN \
             (SELECT customer_id FROM orders WHERE tenant = 'globex')"
                .into(),
            Rows(|r| r.rows.iter().all(|row| row[0] == Value::Text(TENANT.into()))),
        ),
        (
            "SELECT tenant FROM customers UNION SELECT tenant FROM orders".into(),
            Rows(all_cells_tenant),
        ),
        (
            "SELECT name, price FROM products UNION ALL SELECT tenant, total FROM orders"
                .into(),
            Rows(|r| {
                r.rows
                    .iter()
                    .all(|row| matches!(&row[0], Value::Text(t) if t == TENANT || t.starts_with("product")))
            }),
        ),
        (
            "SELECT (SELECT group_concat(DISTINCT tenant) FROM orders) AS t".into(),
            Rows(all_cells_tenant),
        ),
        (
            "WITH x AS (SELECT * FROM orders) SELECT DISTINCT tenant FROM x".into(),
            Rows(all_cells_tenant),
        ),
        ("SELECT DISTINCT tenant FROM main.orders".into(), Rows(all_cells_tenant)),
        ("SELECT DISTINCT tenant FROM \"ORDERS\"".into(), Rows(all_cells_tenant)),
        ("SELECT DISTINCT tenant FROM [orders]".into(), Rows(all_cells_tenant)),
        ("SELECT DISTINCT tenant FROM order_summary".into(), Rows(all_cells_tenant)),
        (
            "SELECT DISTINCT a.tenant, b.tenant FROM orders a JOIN orders b ON a.id = b.id + 2"
                .into(),
            Rows(all_cells_tenant),
        ),
        (
            "SELECT DISTINCT o.tenant FROM customers AS orders JOIN orders AS o ON 1".into(),
            Rows(all_cells_tenant),
        ),
        (
            "SELECT DISTINCT tenant FROM (SELECT * FROM (SELECT * FROM orders))".into(),
            Rows(all_cells_tenant),
        ),
        (
            "SELECT count(*) FROM orders WHERE EXISTS (SELECT 1 FROM orders o2 WHERE o2.tenant = 'globex')"
                .into(),
            Rows(|r| single(r, Value::Integer(0))),
        ),
        (
            "SELECT DISTINCT tenant FROM (orders)".into(),
            RefuseOrRows(all_cells_tenant),
        ),
        (
            "SELECT DISTINCT c.tenant FROM customers c NATURAL JOIN orders".into(),
            Rows(|r| r.rows.iter().flatten().all(|v| *v == Value::Text(TENANT.into()))),
        ),
        (
            "SELECT DISTINCT tenant, count(*) OVER (PARTITION BY tenant) FROM orders".into(),
            Rows(|r| r.rows == vec![vec![Value::Text(TENANT.into()), Value::Integer(200)]]),
        ),
        ("SELECT * FROM orders INDEXED BY orders_tenant".into(), Refuse),
        ("SELECT * FROM json_each('[1, 2]')".into(), Refuse),
        ("SELECT rowid, tenant FROM orders".into(), Refuse),
        (
            "SELECT count(*) AS n FROM products".into(),
            Rows(|r| single(r, Value::Integer(50))),
        ),
    ]
}

fn outcome_text(r: &Result<QueryResult, SqlError>, stage: &str) -> String {
    match r {
        Ok(r) => format!(
            "ran: {} row(s){}",
            r.rows.len(),
            if r.truncated { ", truncated" } else { "" }
        ),
        Err(e) => format!("{stage}: {e}"),
    }
}

#[test]
fn abuse_list_is_refused_or_contained() {
    let dir = tempfile::tempdir().unwrap();
    let db = build_fixture(dir.path());
    let before = sha256(&db);
    let files_before = listing(dir.path());
    let schema = introspect(&db, 3).unwrap();
    let policy =
        Policy::for_tenant(TenantFilter::new("tenant", TENANT)).with_shared_tables(["products"]);
    let other = dir.path().join("other.sqlite");
    let list = attempts(&other.display().to_string());
    assert!(list.len() >= 30);

    let mut table = vec![format!("{:<3} {:<72} outcome", "#", "attempt")];
    let mut failures = Vec::new();
    for (i, (sql, expect)) in list.iter().enumerate() {
        let started = Instant::now();
        let (result, stage) = match validate(sql, &schema, &policy) {
            Err(e) => (Err(e), "refused by validate"),
            Ok(q) => (execute(&db, &q, &policy), "stopped by execute"),
        };
        let took = started.elapsed();
        let ok = match (expect, &result) {
            (Expect::Refuse, Err(e)) => !matches!(e, SqlError::Timeout(_)),
            (Expect::Stop, Err(SqlError::Timeout(_))) => took < Duration::from_secs(4),
            (Expect::Stop, Ok(r)) => r.truncated && r.rows.len() <= policy.limit,
            (Expect::Rows(check) | Expect::RefuseOrRows(check), Ok(r)) => check(r),
            (Expect::RefuseOrRows(_), Err(e)) => !matches!(e, SqlError::Timeout(_)),
            _ => false,
        };
        let mut shown: String = sql.chars().take(70).collect::<String>().replace('\n', "⏎");
        if sql.chars().count() > 70 {
            shown.push('…');
        }
        table.push(format!(
            "{:<3} {:<72} {}{} [{} ms]",
            i + 1,
            shown,
            if ok { "" } else { "UNEXPECTED " },
            outcome_text(&result, stage),
            took.as_millis()
        ));
        if !ok {
            failures.push(format!("{sql}: {}", outcome_text(&result, stage)));
        }
        assert_eq!(sha256(&db), before, "database changed after: {sql}");
    }
    println!("{}", table.join("\n"));
    assert!(
        failures.is_empty(),
        "unexpected outcomes:\n{}",
        failures.join("\n")
    );
    assert_eq!(sha256(&db), before, "the database file changed");
    assert_eq!(
        listing(dir.path()),
        files_before,
        "files appeared or vanished"
    );
    assert!(!Path::new("/tmp/knowhub-sql-copy.db").exists());
    assert!(!Path::new("/tmp/knowhub-sql-x").exists());
}

#[test]
fn tenant_rows_match_a_trusted_filter() {
    let dir = tempfile::tempdir().unwrap();
    let db = build_fixture(dir.path());
    let schema = introspect(&db, 3).unwrap();
    let policy = Policy {
        limit: 1000,
        ..Policy::for_tenant(TenantFilter::new("tenant", TENANT))
    };
    let q = validate("SELECT id, total FROM orders ORDER BY id", &schema, &policy).unwrap();
    let got = execute(&db, &q, &policy).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    let mut stmt = c
        .prepare("SELECT id, total FROM orders WHERE tenant = 'acme' ORDER BY id")
        .unwrap();
    let want: Vec<Vec<Value>> = stmt
        .query_map([], |r| {
            Ok(vec![Value::Integer(r.get(0)?), Value::Real(r.get(1)?)])
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got.rows, want);
    assert_eq!(got.rows.len(), 200);
    assert!(!got.truncated);
}
