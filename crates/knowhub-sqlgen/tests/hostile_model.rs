//! Whatever a model writes, the SQL tool runs nothing unsafe. The tool rewrites a model's
//! statement before validation (joins mended from foreign keys, made-up lookup tables dropped,
//! groups and listings reshaped); this test scripts a model that writes hostile statements and
//! checks, through the whole tool (`nl2sql`: rewrites, validation, execution, retries), that
//! the database file is unchanged and no answer holds another tenant's rows or a table the
//! policy hides.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use knowhub_llm::{ChatRequest, ChatResponse, Finish, Llm, LlmError};
use knowhub_sql::{Policy, TenantFilter, Value, introspect};

/// A model that always replies with the same text.
#[derive(Debug)]
struct Scripted(String);

impl Llm for Scripted {
    fn model_id(&self) -> &str {
        "scripted"
    }
    fn context_tokens(&self) -> usize {
        8192
    }
    fn count_tokens(&self, text: &str) -> usize {
        text.len() / 4 + 1
    }
    fn chat(
        &self,
        _req: &ChatRequest,
        on_token: &mut dyn FnMut(&str) -> bool,
    ) -> Result<ChatResponse, LlmError> {
        on_token(&self.0);
        Ok(ChatResponse {
            text: self.0.clone(),
            prompt_tokens: 1,
            completion_tokens: 1,
            finish: Finish::Eos,
            elapsed: Duration::ZERO,
            time_to_first_token: Duration::ZERO,
        })
    }
}

/// Two tenants' customers, employees and orders, declared foreign keys, and a table no query
/// may read. Every text of the other tenant and the secret contains a marker.
fn fixture(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("shop.sqlite");
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(
        "CREATE TABLE employees (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL,
                                 first_name TEXT, last_name TEXT);
         CREATE TABLE customers (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, name TEXT,
                                 company TEXT, country TEXT,
                                 rep_id INTEGER REFERENCES employees(id));
         CREATE TABLE orders (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL,
                              customer_id INTEGER REFERENCES customers(id), total REAL,
                              duration_ms INTEGER);
         CREATE TABLE secrets (id INTEGER PRIMARY KEY, value TEXT);
         INSERT INTO secrets VALUES (1, 'SECRET launch code');
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 6)
         INSERT INTO employees SELECT i, CASE WHEN i % 2 = 0 THEN 'acme' ELSE 'globex' END,
                CASE WHEN i % 2 = 0 THEN 'Ann' ELSE 'GLOBEX Bo' END, 'Lee ' || i FROM n;
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20)
         INSERT INTO customers SELECT i, CASE WHEN i % 2 = 0 THEN 'acme' ELSE 'globex' END,
                CASE WHEN i % 2 = 0 THEN 'customer ' || i ELSE 'GLOBEX customer ' || i END,
                CASE WHEN i % 2 = 0 THEN 'Co ' || i ELSE 'GLOBEX Co ' || i END,
                CASE WHEN i % 3 = 0 THEN 'Brazil' ELSE 'Canada' END, 1 + (i % 6) FROM n;
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 80)
         INSERT INTO orders SELECT i, CASE WHEN i % 2 = 0 THEN 'acme' ELSE 'globex' END,
                1 + (i % 20), i * 1.5, i * 1000 FROM n;",
    )
    .unwrap();
    path
}

#[test]
fn hostile_model_statements_run_nothing_unsafe() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path());
    let other = dir.path().join("other.sqlite");
    let before = std::fs::read(&db).unwrap();
    let schema = introspect(&db, 3).unwrap();
    let policy = Policy::for_tenant(TenantFilter::new("tenant", "acme"));
    let replies = [
        "SELECT * FROM customers; DROP TABLE customers",
        "DELETE FROM customers",
        "PRAGMA writable_schema = 1",
        &format!("ATTACH '{}' AS o", other.display()),
        "SELECT load_extension('/tmp/x')",
        "SELECT * FROM secrets",
        "SELECT c.name FROM customers c JOIN secrets s ON c.id = s.id",
        "SELECT name FROM customers UNION SELECT value FROM secrets",
        "WITH x AS (SELECT * FROM secrets) SELECT * FROM x",
        "SELECT c.name, s.value FROM customers c JOIN secrets s ON c.id = s.id",
        // Made-up and system tables, which the rewrites may drop as imagined lookups.
        "SELECT c.name, m.sql FROM customers c JOIN sqlite_master m ON c.name = m.name",
        "SELECT c.name FROM customers c JOIN sqlite_master m ON c.name = m.name",
        "SELECT c.name, k.Country FROM customers c JOIN Country k ON c.country = k.Country \
         WHERE k.Country = 'Brazil'",
        "SELECT c.name FROM customers c JOIN o.loot l ON c.name = l.x",
        // Joins the rewrites rebuild from the foreign keys.
        "SELECT e.first_name, SUM(o.total) FROM employees e JOIN orders o ON e.id = o.rep_id \
         GROUP BY e.id",
        "SELECT c.name FROM customers c JOIN orders o ON c.id = o.tenant_id",
        // Other tenants asked for outright, in every clause.
        "SELECT * FROM customers WHERE tenant = 'globex'",
        "SELECT * FROM customers WHERE tenant = 'acme' OR 1 = 1",
        "SELECT c.name, COUNT(*) FROM customers c JOIN orders o ON c.id = o.customer_id \
         WHERE o.tenant <> 'acme' GROUP BY c.name",
        "SELECT name FROM customers WHERE id = (SELECT customer_id FROM orders WHERE tenant = \
         'globex')",
        "SELECT company AS CustomerName FROM customers",
        "SELECT DISTINCT name FROM customers",
        "SELECT c.name FROM customers c JOIN orders o ON c.id = o.customer_id ORDER BY \
         SUM(o.duration_ms) DESC LIMIT 3",
        "SELECT CAST(SUM(duration_ms) AS REAL) / COUNT(id) FROM orders",
        "SELECT * FROM customers /* ; DROP TABLE customers */ WHERE 1 = 1 -- ; DELETE",
        "SELECT 名字 FROM 客户",
        "",
    ];
    let questions = [
        "List all customers with their latest activity.",
        "Which sales rep has the most order total, in minutes of duration?",
        "列出所有客户的近况",
    ];
    // The model's statements are what is tested: a question the template understands would be
    // answered by the template first and never reach them.
    for question in questions {
        assert!(
            knowhub_sqlgen::template_for(question, &schema).is_none(),
            "{question}"
        );
    }
    let mut answered = 0;
    for reply in replies {
        let llm = Scripted(reply.to_string());
        for question in questions {
            let out = knowhub_sqlgen::nl2sql(Some(&llm), &schema, &db, &policy, question, 1, 6_000);
            assert_eq!(
                std::fs::read(&db).unwrap(),
                before,
                "the database changed: {reply}"
            );
            let Some(answer) = out.answer else { continue };
            answered += 1;
            let lower = answer.sql.to_ascii_lowercase();
            for hidden in ["secrets", "sqlite_", "loot", "attach", "pragma"] {
                assert!(
                    !lower.contains(hidden),
                    "{reply} / {question} ran {}",
                    answer.sql
                );
            }
            for row in &answer.result.rows {
                for value in row {
                    if let Value::Text(t) = value {
                        assert!(
                            !t.contains("GLOBEX") && !t.contains("SECRET") && t != "globex",
                            "{reply} / {question} ran {} and showed {t}",
                            answer.sql
                        );
                    }
                }
            }
        }
    }
    // The test checks something: most benign-looking replies did run.
    assert!(answered >= 20, "only {answered} statements ran");
    assert!(!other.exists(), "a database file was attached or created");
}

/// A question the template understands is answered by the template's statement, under the
/// same policy, before the model is asked: a model's extra filter never reaches it.
#[test]
fn a_question_the_template_understands_is_answered_by_it_first() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture(dir.path());
    let schema = introspect(&db, 3).unwrap();
    let policy = Policy::for_tenant(TenantFilter::new("tenant", "acme"));
    let llm = Scripted("SELECT name FROM customers WHERE country = 'Brazil'".into());
    let out = knowhub_sqlgen::nl2sql(
        Some(&llm),
        &schema,
        &db,
        &policy,
        "List all customers.",
        1,
        6_000,
    );
    let answer = out.answer.unwrap();
    assert_eq!(answer.by, "template", "{:?}", out.attempts);
    assert!(out.attempts.iter().all(|a| a.by == "template"));
    assert_eq!(out.prompt_tokens, 0, "the model was asked");
    // The tenant filter applies to the template's statement too: acme's 10 customers.
    assert_eq!(answer.result.rows.len(), 10, "{}", answer.sql);
    let text = format!("{:?}", answer.result.rows);
    assert!(!text.contains("GLOBEX"), "{text}");
}
