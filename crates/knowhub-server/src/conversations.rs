//! Conversations, their turns and traces, and feedback on answers.

use utoipa_axum::router::OpenApiRouter;

use crate::ServerState;

pub(crate) fn router() -> OpenApiRouter<ServerState> {
    OpenApiRouter::new()
}
