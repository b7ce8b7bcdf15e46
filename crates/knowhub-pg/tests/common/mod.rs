//! Shared by the integration tests: a private cluster, or a skip outside CI.

use knowhub_pg::PgCluster;

/// A private PostgreSQL with pgvector, or `None` (with a message) when its binaries are missing
/// and CI is not set.
pub(crate) fn cluster() -> Option<PgCluster> {
    let Some(bin) = PgCluster::find_binaries() else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true: PostgreSQL binaries missing (run scripts/test.sh, which fetches them)"
        );
        eprintln!("skipped: no PostgreSQL binaries (set KNOWHUB_PG_BIN or run scripts/test.sh)");
        return None;
    };
    Some(PgCluster::start(&bin).expect("private PostgreSQL cluster starts"))
}
