//! The team store against a real PostgreSQL with pgvector, started privately per test.
//! Without the binaries (`scripts/env.sh` → `ensure_postgres`) the tests skip with a message,
//! except under CI=true.

#![allow(clippy::print_stderr, clippy::unwrap_used)]

mod common;

use common::cluster;
use knowhub_pg::{Database, PgError, PgVectors, Plan, migrations};

/// A unit vector pointing mostly along axis `axis`, tilted by `tilt` towards axis 0.
fn unit(dim: usize, axis: usize, tilt: f32) -> Vec<f32> {
    let mut v = vec![0.0; dim];
    v[axis] = 1.0;
    v[0] += tilt;
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}

#[test]
fn migrations_apply_once_and_refuse_a_newer_or_edited_database() {
    let Some(pg) = cluster() else { return };
    let url = pg.create_database("mig").unwrap();
    // Replicas starting together: every one succeeds and the steps run once.
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || Database::connect(&url).map(|_| ()))
        })
        .collect();
    for h in handles {
        h.join().unwrap().unwrap();
    }
    let db = Database::connect(&url).unwrap();
    let mut client = db.client().unwrap();
    let steps: i64 = client
        .query_one("SELECT count(*) FROM knowhub_migrations", &[])
        .unwrap()
        .get(0);
    let known: usize = migrations::DOMAINS.iter().map(|d| d.steps.len()).sum();
    assert_eq!(steps as usize, known);

    // A step a newer build recorded.
    client
        .execute(
            "INSERT INTO knowhub_migrations (domain, step, sql) VALUES ('vectors', 99, 'x')",
            &[],
        )
        .unwrap();
    let err = Database::connect(&url).unwrap_err();
    assert!(matches!(err, PgError::DatabaseNewer { .. }), "{err}");
    assert!(err.to_string().contains("upgrade this binary"), "{err}");
    client
        .execute("DELETE FROM knowhub_migrations WHERE step = 99", &[])
        .unwrap();

    // An edited step.
    client
        .execute(
            "UPDATE knowhub_migrations SET sql = sql || ' ' WHERE domain = 'vectors' AND step = 0",
            &[],
        )
        .unwrap();
    let err = Database::connect(&url).unwrap_err();
    assert!(
        matches!(err, PgError::MigrationEdited { step: 0, .. }),
        "{err}"
    );
}

#[test]
fn a_failing_step_leaves_the_schema_as_it_was() {
    let Some(pg) = cluster() else { return };
    let url = pg.create_database("atomic").unwrap();
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let domains = [
        migrations::Domain {
            name: "good",
            steps: &["CREATE TABLE a (x INT)"],
        },
        migrations::Domain {
            name: "bad",
            steps: &["CREATE TABLE b (x INT); SELECT no_such_function()"],
        },
    ];
    let err = migrations::run(&mut client, &domains).unwrap_err();
    assert!(
        matches!(err, PgError::Migration { ref domain, step: 0, .. } if domain == "bad"),
        "{err}"
    );
    let tables: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE tablename IN ('a', 'b', 'knowhub_migrations')",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(tables, 0, "nothing of the failed run stays");
}

#[test]
fn vectors_are_searched_only_among_readable_documents() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("vec").unwrap()).unwrap();
    let vectors = PgVectors::new(&db);
    let model = vectors.register_model("test-model", 8).unwrap();
    assert_eq!(vectors.register_model("test-model", 8).unwrap(), model);
    let err = vectors.register_model("test-model", 16).unwrap_err();
    assert!(err.to_string().contains("registered with 8"), "{err}");
    vectors.build_index(&model).unwrap();
    vectors.build_index(&model).unwrap();

    // Document 1 holds the 50 vectors nearest to the query; document 2 one far vector.
    let near: Vec<(u64, Vec<f32>)> = (0..50)
        .map(|i| {
            (
                100 + i,
                unit(8, 1 + (i as usize % 3), 2.0 + i as f32 * 0.01),
            )
        })
        .collect();
    vectors.replace_document(&model, 1, &near).unwrap();
    vectors
        .replace_document(&model, 2, &[(200, unit(8, 7, 0.0))])
        .unwrap();
    let query = unit(8, 0, 0.0);

    let all = vectors.search(&model, &query, 5, None).unwrap();
    assert_eq!(all.len(), 5);
    assert!(all.iter().all(|h| h.doc_id == 1));
    assert!(all.windows(2).all(|w| w[0].score >= w[1].score));

    // Readable: only document 2. A filter after the top-k would find nothing.
    for hits in [
        vectors.search(&model, &query, 5, Some(&[2])).unwrap(),
        vectors
            .search_with(Plan::Exact, &model, &query, 5, Some(&[2]))
            .unwrap(),
    ] {
        assert_eq!(hits.len(), 1);
        assert_eq!((hits[0].chunk_id, hits[0].doc_id), (200, 2));
    }
    assert!(
        vectors
            .search(&model, &query, 5, Some(&[]))
            .unwrap()
            .is_empty()
    );
    assert!(
        vectors
            .search(&model, &query, 5, Some(&[3]))
            .unwrap()
            .is_empty()
    );

    // Replacing a document replaces its vectors; deleting removes them under every model.
    vectors
        .replace_document(&model, 1, &[(101, unit(8, 2, 0.5))])
        .unwrap();
    assert_eq!(vectors.count(&model).unwrap(), 2);
    assert_eq!(vectors.delete_document(1).unwrap(), 1);
    let left = vectors.search(&model, &query, 5, None).unwrap();
    assert_eq!(left.iter().map(|h| h.chunk_id).collect::<Vec<_>>(), [200]);

    // Bad input is refused before it reaches the database.
    let err = vectors.search(&model, &[0.0; 3], 5, None).unwrap_err();
    assert!(err.to_string().contains("3 dimensions"), "{err}");
    let err = vectors
        .replace_document(&model, 3, &[(300, vec![f32::NAN; 8])])
        .unwrap_err();
    assert!(matches!(err, PgError::Invalid(_)), "{err}");
    assert_eq!(
        vectors.count(&model).unwrap(),
        1,
        "a refused write changes nothing"
    );
}

#[test]
fn an_outage_is_retryable_and_the_pool_recovers() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("outage").unwrap()).unwrap();
    db.ping().unwrap();
    pg.stop_server().unwrap();
    let err = db.ping().unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    pg.restart().unwrap();
    // Broken pooled connections are replaced; within a few tries the database answers.
    let recovered = (0..20).any(|_| {
        let ok = db.ping().is_ok();
        if !ok {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        ok
    });
    assert!(recovered, "the pool reconnects after a restart");
}

#[test]
fn a_bad_address_is_a_clear_error() {
    let err = Database::connect("postgres://x@/db?port=notanumber").unwrap_err();
    assert!(matches!(err, PgError::Address(_)), "{err}");
}
