//! The SQL tool in team mode: a spreadsheet ingested through one replica is queried through
//! another (from that replica's copy of the tables), under the permissions the database holds
//! at the moment of the request.

#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use knowhub_agent::{Agent, AgentOptions, AskRequest, Route};
use knowhub_engine::authz::{Role, ScopeSet, UserId};
use knowhub_engine::team::TeamConfig;
use knowhub_engine::{
    Engine, EngineConfig, IngestOptions, ModelSet, RealFs, RequestContext, dev_context,
};
use knowhub_pg::PgCluster;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn replica(database: &str, name: &str, data: &Path) -> Arc<Engine> {
    let mut config = EngineConfig::new(data);
    config.team = Some(TeamConfig::new(database));
    if let Some(team) = config.team.as_mut() {
        team.replica = name.to_owned();
    }
    Arc::new(Engine::open_with(config, Arc::new(RealFs), ModelSet::none()).unwrap())
}

fn ask(engine: &Arc<Engine>, ctx: &RequestContext, q: &str) -> knowhub_agent::AskOutcome {
    Agent::new(Arc::clone(engine), None, AgentOptions::default())
        .ask(ctx, &AskRequest::new(q), &mut |_| {})
        .unwrap()
}

fn sql_answer(o: &knowhub_agent::AskOutcome) -> Option<&str> {
    o.state
        .evidence_items
        .iter()
        .find(|e| e.kind == "sql_result")
        .map(|e| e.text.as_str())
}

fn within(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    start.elapsed()
}

#[test]
fn a_sheet_ingested_through_one_replica_is_queried_through_another() {
    let Some(pg) = PgCluster::for_test() else {
        return;
    };
    let url = pg.create_database("team_sql").unwrap();
    let dirs = tempfile::tempdir().unwrap();
    let kb = dirs.path().join("kb");
    std::fs::create_dir_all(kb.join("public")).unwrap();
    let sheet = kb.join("public/projects.xlsx");
    std::fs::copy(repo().join("assets/demo/data/projects.xlsx"), &sheet).unwrap();
    let a = replica(&url, "a", &dirs.path().join("a"));
    let b = replica(&url, "b", &dirs.path().join("b"));
    let root = dev_context();
    a.ingest(
        &root,
        std::slice::from_ref(&kb),
        &IngestOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let bob_id = UserId::new("bob").unwrap();
    a.add_user(&root, &bob_id, "Bob", Role::User).unwrap();
    let public: ScopeSet = "public".parse().unwrap();
    a.set_folder_acl(&root, &kb.join("public"), Some(&public))
        .unwrap();
    let bob = RequestContext {
        user: bob_id,
        role: Role::User,
        ..dev_context()
    };

    // The document's status says nothing is missing: the sheets are kept in team mode too.
    let doc = a.documents(&root, None).unwrap();
    assert!(
        doc.iter().all(|d| d.error.is_none()),
        "{:?}",
        doc.iter().map(|d| &d.error).collect::<Vec<_>>()
    );
    let took = within(Duration::from_secs(2), "B holds A's sheets", || {
        !b.queryable_data(&bob).unwrap().tables.is_empty()
    });
    eprintln!("B can query the sheets after {took:?}");
    let data = b.queryable_data(&bob).unwrap();
    assert!(
        data.tables_db.ends_with("team-tables.sqlite"),
        "{:?}",
        data.tables_db
    );
    assert!(
        data.tables
            .iter()
            .all(|t| t.document_path.ends_with("projects.xlsx"))
    );

    let o = ask(&b, &bob, "How many projects are there?");
    assert_eq!(o.state.plan.route, Route::Sql);
    let result = sql_answer(&o).unwrap_or_else(|| panic!("{}", o.state.output.final_answer));
    assert!(result.contains("15"), "{result}");

    // Restricted through A: B's very next request offers bob no table.
    let hr: ScopeSet = "team:hr".parse().unwrap();
    a.set_folder_acl(&root, &kb.join("public"), Some(&hr))
        .unwrap();
    assert!(b.queryable_data(&bob).unwrap().tables.is_empty());
    let o = ask(&b, &bob, "How many projects are there?");
    assert!(sql_answer(&o).is_none(), "{:?}", sql_answer(&o));

    // Removed through A: gone from B's copy within the follower's bound.
    a.remove(&root, &[sheet]).unwrap();
    within(Duration::from_secs(2), "B drops A's removed sheets", || {
        b.queryable_data(&root).unwrap().tables.is_empty()
    });
}
