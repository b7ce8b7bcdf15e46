//! Shared set-up for the engine's unit tests: contexts in the default account and an engine
//! over a fake file system with the users a test names.

use std::sync::Arc;

use knowhub_authz::{AccountId, RequestContext, Role, UserId};

use crate::{DEFAULT_ACCOUNT, Engine, EngineConfig, FakeFs, ModelSet};

/// A request by `user` with `role` in the default account.
pub(crate) fn ctx(user: &str, role: Role) -> RequestContext {
    RequestContext {
        account: AccountId::new(DEFAULT_ACCOUNT).unwrap(),
        user: UserId::new(user).unwrap(),
        agent: None,
        role,
        session: None,
        trace_id: "t".into(),
    }
}

/// An engine in a fresh data directory over `fs` and `models`, with these users stored.
pub(crate) fn engine_with_users(
    fs: &FakeFs,
    models: ModelSet,
    users: &[(&str, Role)],
) -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().unwrap();
    let engine =
        Engine::open_with(EngineConfig::new(dir.path()), Arc::new(fs.clone()), models).unwrap();
    {
        let mut store = engine.store();
        for &(user, role) in users {
            store
                .add_user(&UserId::new(user).unwrap(), user, role)
                .unwrap();
        }
    }
    (dir, engine)
}
