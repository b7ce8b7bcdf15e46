#![allow(clippy::unwrap_used)]

use super::*;
use crate::policy::TenantFilter;
use crate::schema::{ColumnInfo, TableKind};

fn col(name: &str) -> ColumnInfo {
    ColumnInfo {
        name: name.into(),
        decl_type: "TEXT".into(),
        samples: Vec::new(),
        values: vec![],
        primary_key: 0,
    }
}

fn table(name: &str, cols: &[&str]) -> TableInfo {
    TableInfo {
        name: name.into(),
        kind: TableKind::Table,
        columns: cols.iter().map(|c| col(c)).collect(),
        row_count: Some(1),
        foreign_keys: Vec::new(),
    }
}

fn schema() -> Schema {
    Schema {
        tables: vec![
            table("customers", &["id", "tenant", "name"]),
            table("Orders", &["id", "tenant", "customer_id", "total"]),
            table("products", &["id", "name"]),
            table("secrets", &["id", "value"]),
            table("we\"ird", &["tenant", "x"]),
        ],
    }
}

fn tenant_policy() -> Policy {
    Policy::for_tenant(TenantFilter::new("tenant", "acme")).with_shared_tables(["products"])
}

#[test]
fn accepted_queries_are_rewritten() {
    let s = schema();
    let plain = Policy::default();
    let tenant = tenant_policy();
    let f = |t: &str, a: &str| format!("(SELECT * FROM \"{t}\" WHERE \"tenant\" = ?1) AS {a}");
    let cases: Vec<(&str, &Policy, String)> = vec![
        ("SELECT * FROM products", &plain, "SELECT * FROM products LIMIT 50".into()),
        ("select name from products limit 10", &plain, "SELECT name FROM products LIMIT 10".into()),
        ("SELECT name FROM products LIMIT 500", &plain, "SELECT name FROM products LIMIT 50".into()),
        ("SELECT name FROM products LIMIT -1", &plain, "SELECT name FROM products LIMIT 50".into()),
        ("SELECT name FROM products LIMIT 5, 10", &plain, "SELECT name FROM products LIMIT 10 OFFSET 5".into()),
        ("SELECT name FROM products LIMIT 10 OFFSET 3", &plain, "SELECT name FROM products LIMIT 10 OFFSET 3".into()),
        ("  SELECT 1 -- comment\n ; ", &plain, "SELECT 1 LIMIT 50".into()),
        ("/* c */ SELECT 2", &plain, "SELECT 2 LIMIT 50".into()),
        ("SELECT 1 UNION SELECT 2", &plain, "SELECT 1 UNION SELECT 2 LIMIT 50".into()),
        ("VALUES (1), (2)", &plain, "VALUES (1), (2) LIMIT 50".into()),
        ("WITH t AS (SELECT 1 AS x) SELECT x FROM t", &plain, "WITH t AS (SELECT 1 AS x) SELECT x FROM t LIMIT 50".into()),
        ("SELECT * FROM main.products", &plain, "SELECT * FROM main.products LIMIT 50".into()),
        ("SELECT * FROM PRODUCTS", &plain, "SELECT * FROM PRODUCTS LIMIT 50".into()),
        ("SELECT upper(name), count(*) FROM products GROUP BY 1", &plain, "SELECT upper(name), count(*) FROM products GROUP BY 1 LIMIT 50".into()),
        ("SELECT * FROM orders", &tenant, format!("SELECT * FROM {} LIMIT 50", f("Orders", "orders"))),
        (
            "SELECT o.total FROM Orders o JOIN customers c ON c.id = o.customer_id",
            &tenant,
            format!("SELECT o.total FROM {} JOIN {} ON c.id = o.customer_id LIMIT 50", f("Orders", "o"), f("customers", "c")),
        ),
        (
            "SELECT * FROM orders WHERE customer_id IN (SELECT id FROM customers)",
            &tenant,
            format!("SELECT * FROM {} WHERE customer_id IN (SELECT id FROM {}) LIMIT 50", f("Orders", "orders"), f("customers", "customers")),
        ),
        (
            "SELECT name FROM products UNION ALL SELECT name FROM customers",
            &tenant,
            format!("SELECT name FROM products UNION ALL SELECT name FROM {} LIMIT 50", f("customers", "customers")),
        ),
        (
            "SELECT * FROM \"we\"\"ird\"",
            &tenant,
            "SELECT * FROM (SELECT * FROM \"we\"\"ird\" WHERE \"tenant\" = ?1) AS \"we\"\"ird\" LIMIT 50".into(),
        ),
    ];
    for (sql, policy, want) in cases {
        let q = validate(sql, &s, policy).unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert_eq!(q.sql(), want, "{sql}");
        let tenant_bound = q.sql().contains("?1");
        assert_eq!(q.params().len(), usize::from(tenant_bound), "{sql}");
    }
}

#[test]
fn refusals_have_reasons() {
    let s = schema();
    let plain = Policy::default();
    let tenant = tenant_policy();
    let zero = Policy {
        limit: 0,
        ..Policy::default()
    };
    let cases: Vec<(&str, &Policy, &str)> = vec![
        ("", &plain, "empty"),
        ("  -- just a comment", &plain, "empty"),
        ("SELECT 1; DROP TABLE products", &plain, "contains 2"),
        (
            "SELECT 1 -- x\n; DELETE FROM products",
            &plain,
            "contains 2",
        ),
        (
            "SELECT '\\'; DROP TABLE products; --'",
            &plain,
            "contains 2",
        ),
        (
            "SELECT 1 /* /* */ ; DROP TABLE products; -- */",
            &plain,
            "contains 2",
        ),
        (
            "INSERT INTO products VALUES (1, 'x')",
            &plain,
            "INSERT statements",
        ),
        (
            "REPLACE INTO products VALUES (1, 'x')",
            &plain,
            "REPLACE statements",
        ),
        ("UPDATE products SET name = 'x'", &plain, "UPDATE"),
        ("DELETE FROM products", &plain, "DELETE"),
        ("DROP TABLE products", &plain, "DROP"),
        ("ALTER TABLE products ADD COLUMN y", &plain, "ALTER"),
        ("CREATE TABLE z (a)", &plain, "CREATE"),
        ("PRAGMA writable_schema = 1", &plain, "PRAGMA"),
        ("ATTACH DATABASE '/tmp/x.db' AS x", &plain, "ATTACH"),
        ("DETACH DATABASE x", &plain, "DETACH"),
        ("VACUUM", &plain, "VACUUM"),
        ("REINDEX", &plain, "REINDEX"),
        ("ANALYZE", &plain, "ANALYZE"),
        ("BEGIN", &plain, "BEGIN"),
        ("EXPLAIN SELECT 1", &plain, "EXPLAIN"),
        (
            "WITH x AS (SELECT 1) DELETE FROM products",
            &plain,
            "DELETE",
        ),
        ("SELECT * INTO t2 FROM products", &plain, "SELECT INTO"),
        ("SELECT * FROM sqlite_master", &plain, "internal"),
        ("SELECT * FROM main.sqlite_schema", &plain, "internal"),
        ("SELECT * FROM SQLITE_TEMP_MASTER", &plain, "internal"),
        (
            "SELECT * FROM pragma_table_info('products')",
            &plain,
            "internal",
        ),
        (
            "SELECT * FROM json_each('[1]')",
            &plain,
            "table-valued function",
        ),
        ("SELECT * FROM temp.products", &plain, "qualified"),
        ("SELECT * FROM other.products", &plain, "qualified"),
        ("SELECT * FROM nowhere", &plain, "unknown table"),
        (
            "SELECT load_extension('/tmp/x.so')",
            &plain,
            "load_extension",
        ),
        ("SELECT readfile('/etc/passwd')", &plain, "readfile"),
        ("SELECT writefile('/tmp/x', 'y')", &plain, "writefile"),
        ("SELECT randomblob(1000000000)", &plain, "randomblob"),
        ("SELECT main.abs(1)", &plain, "main.abs"),
        ("SELECT * FROM products WHERE id = ?", &plain, "placeholder"),
        (
            "SELECT * FROM products WHERE id = :id",
            &plain,
            "placeholder",
        ),
        (
            "WITH products AS (SELECT 1) SELECT * FROM products",
            &plain,
            "like an existing table",
        ),
        (
            "WITH sqlite_x AS (SELECT 1) SELECT * FROM sqlite_x",
            &plain,
            "internal",
        ),
        (
            "SELECT * FROM products FETCH FIRST 3 ROWS ONLY",
            &plain,
            "FETCH",
        ),
        ("SELECT * FROM secrets", &tenant, "not a shared table"),
        (
            "SELECT * FROM orders, secrets",
            &tenant,
            "not a shared table",
        ),
        (
            "SELECT (SELECT value FROM secrets) FROM orders",
            &tenant,
            "not a shared table",
        ),
        ("SELECT * FROM orders LIMIT 1", &zero, "row limit"),
        ("SELECT FROM WHERE", &plain, "parsed"),
    ];
    for (sql, policy, want) in cases {
        match validate(sql, &s, policy) {
            Ok(q) => panic!("{sql} was accepted as {}", q.sql()),
            Err(e) => assert!(
                e.to_string().contains(want),
                "{sql}: `{e}` does not mention `{want}`"
            ),
        }
    }
}

#[test]
fn cte_scope_is_respected() {
    let s = schema();
    // `t` is only visible inside the parenthesised query, not to the outer FROM.
    let err = validate(
        "SELECT * FROM (WITH t AS (SELECT 1) SELECT * FROM t), t",
        &s,
        &Policy::default(),
    )
    .unwrap_err();
    assert!(
        matches!(err, SqlError::UnknownTable(ref t) if t == "t"),
        "{err}"
    );
    // Recursive CTEs see themselves.
    let q = validate(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n",
        &s,
        &Policy::default(),
    )
    .unwrap();
    assert!(q.sql().ends_with("LIMIT 50"));
    assert!(q.tables().is_empty());
}

#[test]
fn tables_are_reported() {
    let q = validate(
        "SELECT * FROM orders o JOIN customers c ON 1 JOIN products p ON 1",
        &schema(),
        &tenant_policy(),
    )
    .unwrap();
    assert_eq!(q.tables(), ["Orders", "customers", "products"]);
    assert_eq!(q.params(), [Param::Text("acme".into())]);
    assert!(q.limit_forced());
}

#[test]
fn queries_that_read_no_data_are_told_apart() {
    let s = schema();
    let plain = Policy::default();
    for (sql, reads) in [
        ("SELECT name FROM products", true),
        ("SELECT * FROM products", true),
        ("SELECT p.* FROM products p", true),
        ("SELECT COUNT(*) FROM products", true),
        ("SELECT 1 FROM products WHERE name = 'x'", true),
        ("SELECT upper(p.name) FROM products p", true),
        ("SELECT 1 + 1 FROM products", false),
        (
            "SELECT strftime('%d', '2019-04-30') - strftime('%d', '2018-04-30') AS days FROM products",
            false,
        ),
        ("SELECT 'yes' AS answer", false),
        // Constants computed per row the filter keeps: the filter reads data, the answer not.
        (
            "SELECT strftime('%d', '2024-12-31') - strftime('%d', '2024-01-01') AS days FROM \
             products WHERE name > 'a'",
            false,
        ),
        ("SELECT -1 FROM products WHERE name = 'x'", false),
        ("SELECT COUNT(1) FROM products WHERE name = 'x'", true),
        ("SELECT 1, upper('x') FROM products WHERE name = 'x'", false),
        (
            "SELECT (SELECT COUNT(*) FROM products) + 1 FROM products WHERE name = 'x'",
            true,
        ),
    ] {
        let q = validate(sql, &s, &plain).unwrap();
        assert_eq!(q.reads_data(), reads, "{sql}");
    }
}
