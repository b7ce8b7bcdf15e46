//! Documents and their sources, files and passages, status and audit: the read paths behind citations and the Sources pane.

use utoipa_axum::router::OpenApiRouter;

use crate::ServerState;

pub(crate) fn router() -> OpenApiRouter<ServerState> {
    OpenApiRouter::new()
}
