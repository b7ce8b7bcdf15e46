//! Shared by the integration tests.

use knowhub_pg::PgCluster;

/// A private PostgreSQL with pgvector, or `None` outside CI without binaries.
pub(crate) fn cluster() -> Option<PgCluster> {
    PgCluster::for_test()
}
