//! Administration of the knowledge base: folders and their ACLs ("who can see this"), watched folders, server-side ingestion and the queue, team memberships, SQL data sources.

use utoipa_axum::router::OpenApiRouter;

use crate::ServerState;

pub(crate) fn router() -> OpenApiRouter<ServerState> {
    OpenApiRouter::new()
}
