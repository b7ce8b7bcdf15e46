//! The chat and audit domains in the team database: each scenario runs once against the
//! SQLite store and once against PostgreSQL and must observe the same, and what one replica
//! writes the next request through another replica reads.

#![allow(clippy::print_stderr, clippy::unwrap_used)]

mod common;

use std::fmt::Debug;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::cluster;
use knowhub_authz::UserId;
use knowhub_pg::{Database, PgStore};
use knowhub_store::backend::{AuditStore, ChatStore};
use knowhub_store::{
    AuditEntry, AuditRecord, FeedbackRecord, SessionRecord, SessionSummary, SqlSourceRecord, Store,
    TraceRecord, TurnRecord,
};

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Lets the clock move on, so that "most recent first" does not depend on ties within a
/// millisecond (which one run may hit and the other not).
fn tick() {
    std::thread::sleep(Duration::from_millis(3));
}

fn uid(s: &str) -> UserId {
    UserId::new(s).unwrap()
}

/// What a scenario observed, one line per call. Times a store sets itself differ between the
/// two runs, so they read as 0; times the scenario chose (all far in the past) stay.
struct Log {
    start: i64,
    lines: Vec<String>,
}

/// A result with the store-set times blanked.
trait Seen: Debug + Clone {
    fn blank(self, start: i64) -> Self;
}

fn blank_time(t: i64, start: i64) -> i64 {
    assert!(t <= now_ms(), "a stored time in the future: {t}");
    if t >= start { 0 } else { t }
}

impl Seen for SessionRecord {
    fn blank(mut self, start: i64) -> Self {
        self.created_at_ms = blank_time(self.created_at_ms, start);
        self.updated_at_ms = blank_time(self.updated_at_ms, start);
        self
    }
}

impl Seen for TurnRecord {
    fn blank(mut self, start: i64) -> Self {
        self.created_at_ms = blank_time(self.created_at_ms, start);
        self
    }
}

impl Seen for TraceRecord {
    fn blank(mut self, start: i64) -> Self {
        self.created_at_ms = blank_time(self.created_at_ms, start);
        self
    }
}

impl Seen for FeedbackRecord {
    fn blank(mut self, start: i64) -> Self {
        self.created_at_ms = blank_time(self.created_at_ms, start);
        self
    }
}

impl Seen for SqlSourceRecord {
    fn blank(mut self, start: i64) -> Self {
        self.created_at_ms = blank_time(self.created_at_ms, start);
        self
    }
}

impl Seen for AuditRecord {
    fn blank(mut self, start: i64) -> Self {
        self.at = blank_time(self.at, start);
        self
    }
}

impl Seen for SessionSummary {
    fn blank(self, _: i64) -> Self {
        self
    }
}

impl Seen for i64 {
    fn blank(self, _: i64) -> Self {
        self
    }
}

impl Seen for bool {
    fn blank(self, _: i64) -> Self {
        self
    }
}

impl Seen for () {
    fn blank(self, _: i64) -> Self {}
}

impl<T: Seen> Seen for Option<T> {
    fn blank(self, start: i64) -> Self {
        self.map(|v| v.blank(start))
    }
}

impl<T: Seen> Seen for Vec<T> {
    fn blank(self, start: i64) -> Self {
        self.into_iter().map(|v| v.blank(start)).collect()
    }
}

impl Log {
    fn new() -> Log {
        Log {
            start: now_ms(),
            lines: Vec::new(),
        }
    }

    /// Notes a call's result (an error only as "error": the two backends word them
    /// differently) and hands the value on.
    fn see<T: Seen>(&mut self, what: &str, result: knowhub_store::Result<T>) -> Option<T> {
        match result {
            Ok(v) => {
                let shown = v.clone().blank(self.start);
                self.lines.push(format!("{what} -> {shown:?}"));
                Some(v)
            }
            Err(_) => {
                self.lines.push(format!("{what} -> error"));
                None
            }
        }
    }

    fn note(&mut self, what: &str, value: impl Debug) {
        self.lines.push(format!("{what}: {value:?}"));
    }
}

/// Compares what a scenario observed on the SQLite store and on PostgreSQL, line by line;
/// `expected_lines` shows the scenario ran to its end.
fn assert_parity(sqlite: Vec<String>, postgres: Vec<String>, expected_lines: usize) -> Vec<String> {
    assert_eq!(sqlite.len(), expected_lines, "{sqlite:#?}");
    for (i, (want, got)) in sqlite.iter().zip(&postgres).enumerate() {
        assert_eq!(want, got, "line {i} differs (SQLite, then PostgreSQL)");
    }
    assert_eq!(sqlite.len(), postgres.len());
    sqlite
}

fn turn(session: &str, i: usize) -> TurnRecord {
    TurnRecord {
        id: 0,
        session_id: session.into(),
        question: format!("q{i}"),
        standalone: format!("standalone q{i}"),
        answer: format!("a{i}"),
        trace_id: format!("t{i}"),
        stop_reason: "ok".into(),
        created_at_ms: 0,
    }
}

fn trace(id: &str, user: &str, session: Option<&str>, created_at_ms: i64) -> TraceRecord {
    TraceRecord {
        id: id.into(),
        session_id: session.map(str::to_owned),
        user_id: user.into(),
        question: format!("question of {id}"),
        route: "doc".into(),
        stop_reason: "ok".into(),
        total_ms: 12,
        prompt_tokens: 100,
        completion_tokens: 20,
        state: r#"{"nodes":[]}"#.into(),
        created_at_ms,
    }
}

fn feedback(trace_id: &str, user: &str, helpful: bool, evidence: &[&str]) -> FeedbackRecord {
    FeedbackRecord {
        trace_id: trace_id.into(),
        user_id: user.into(),
        helpful,
        note: format!("{user} says {helpful}"),
        evidence_ids: evidence.iter().map(|e| e.to_string()).collect(),
        created_at_ms: 0,
    }
}

fn sql_source(name: &str, path: &str, scopes: &[&str], tenant: Option<&str>) -> SqlSourceRecord {
    SqlSourceRecord {
        name: name.into(),
        path: path.into(),
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        tenant_column: tenant.map(str::to_owned),
        owner: "admin".into(),
        created_at_ms: 0,
    }
}

fn summary(through_turn: i64, text: &str, by_model: Option<&str>) -> SessionSummary {
    SessionSummary {
        through_turn,
        summary: text.into(),
        by_model: by_model.map(str::to_owned),
    }
}

/// Sessions, turns and summaries, including what deleting a session takes with it.
fn sessions_and_turns(s: &mut dyn ChatStore) -> Vec<String> {
    let mut log = Log::new();
    log.see("create s1", s.create_session("s1", "alice", "Leave policy"));
    tick();
    log.see("create s2", s.create_session("s2", "alice", "Expenses"));
    tick();
    log.see("create b1", s.create_session("b1", "bob", "Other"));
    log.see("create s1 again", s.create_session("s1", "bob", "Taken"));
    log.see("session s1", s.session("s1"));
    log.see("session unknown", s.session("nope"));
    log.see("sessions alice", s.sessions("alice", 10));
    log.see("sessions alice 1", s.sessions("alice", 1));
    log.see("sessions alice 0", s.sessions("alice", 0));
    log.see("sessions alice all", s.sessions("alice", usize::MAX));
    log.see("sessions nobody", s.sessions("nobody", 10));

    tick();
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(
            log.see(&format!("add turn {i}"), s.add_turn(&turn("s1", i)))
                .unwrap(),
        );
    }
    log.see("sessions alice after s1's turns", s.sessions("alice", 10));
    log.see("add turn to unknown", s.add_turn(&turn("nope", 9)));
    log.see("turns unknown", s.turns("nope", 10));
    tick();
    let after_refused = log.see("add turn after refused", s.add_turn(&turn("s2", 5)));
    log.note(
        "turn ids grow without gaps",
        after_refused == Some(ids[4] + 1),
    );
    log.see("sessions alice after s2's turn", s.sessions("alice", 10));
    let s2 = s.session("s2").unwrap().unwrap();
    let last = s.turns("s2", 1).unwrap();
    log.note(
        "a turn touches its session",
        s2.updated_at_ms == last[0].created_at_ms && s2.updated_at_ms > s2.created_at_ms,
    );
    log.see("turns s1 2", s.turns("s1", 2));
    log.see("turns s1 0", s.turns("s1", 0));
    log.see("turns s1 all", s.turns("s1", usize::MAX));
    log.see("turns b1", s.turns("b1", 10));

    let cases = [
        ("everything", 0, i64::MAX, 10),
        ("both ends excluded", ids[0], ids[4], 10),
        ("newest within the limit", ids[0], ids[4], 2),
        ("limit 0", 0, i64::MAX, 0),
        ("empty range", ids[2], ids[2], 10),
        ("reversed range", ids[3], ids[1], 10),
        ("below the first", 0, ids[0], 10),
        ("just one", ids[0] - 1, ids[0] + 1, 10),
        ("extremes", i64::MIN, i64::MAX, usize::MAX),
    ];
    for (what, after, before, limit) in cases {
        log.see(
            &format!("turns_between s1 {what}"),
            s.turns_between("s1", after, before, limit),
        );
    }
    log.see(
        "turns_between other session",
        s.turns_between("s2", 0, i64::MAX, 10),
    );

    log.see(
        "summary of unknown session",
        s.set_session_summary("nope", &summary(1, "x", None)),
    );
    log.see("no summary yet", s.session_summary("s1"));
    log.see(
        "summary newer",
        s.set_session_summary("s1", &summary(ids[2], "newer", Some("model-a"))),
    );
    log.see(
        "summary older",
        s.set_session_summary("s1", &summary(ids[1], "older", None)),
    );
    log.see("summary after older", s.session_summary("s1"));
    log.see(
        "summary same point",
        s.set_session_summary("s1", &summary(ids[2], "same point", None)),
    );
    log.see("summary after same point", s.session_summary("s1"));
    log.see(
        "summary s2",
        s.set_session_summary("s2", &summary(0, "other", None)),
    );

    log.see(
        "trace in s1",
        s.put_trace(&trace("t-s1", "alice", Some("s1"), 1_000)),
    );
    log.see(
        "feedback in s1",
        s.put_feedback(&feedback("t-s1", "alice", true, &["e1"])),
    );
    log.see("delete s1", s.delete_session("s1"));
    log.see("delete s1 again", s.delete_session("s1"));
    log.see("delete unknown", s.delete_session("nope"));
    log.see("session s1 gone", s.session("s1"));
    log.see("turns go with the session", s.turns("s1", 10));
    log.see("summary goes with the session", s.session_summary("s1"));
    log.see("the trace stays", s.trace("t-s1"));
    log.see("its feedback stays", s.feedback("t-s1"));
    log.see("s2 keeps its turns", s.turns("s2", 10));
    log.see("s2 keeps its summary", s.session_summary("s2"));
    log.see("sessions alice after delete", s.sessions("alice", 10));

    log.see("create s1 anew", s.create_session("s1", "carol", "Again"));
    log.see("new s1 has no summary", s.session_summary("s1"));
    log.see("new s1 has no turns", s.turns("s1", 10));
    let id = log.see("add turn to new s1", s.add_turn(&turn("s1", 6)));
    log.note("ids are not reused", id.is_some_and(|id| id > ids[4]));
    log.lines
}

/// Traces, feedback and SQL sources.
fn traces_feedback_and_sources(s: &mut dyn ChatStore) -> Vec<String> {
    let mut log = Log::new();
    log.see("trace unknown", s.trace("nope"));
    log.see("no traces", s.traces(None, 10));
    // Ties on time are broken by id in byte order ("B" < "a" < "b").
    log.see(
        "put t2",
        s.put_trace(&trace("t2", "alice", Some("s1"), 2_000)),
    );
    log.see("put a", s.put_trace(&trace("a", "bob", None, 2_000)));
    log.see("put B", s.put_trace(&trace("B", "alice", None, 2_000)));
    log.see("put b", s.put_trace(&trace("b", "alice", None, 1_000)));
    log.see("put now", s.put_trace(&trace("now", "alice", None, 0)));
    let mut big = trace("big", "carol", None, 500);
    big.total_ms = u64::MAX;
    big.prompt_tokens = i64::MAX as u64 + 1;
    big.completion_tokens = 0;
    log.see("put big", s.put_trace(&big));
    log.see("trace big", s.trace("big"));
    log.see("traces all", s.traces(None, 10));
    log.see("traces all 2", s.traces(None, 2));
    log.see("traces all 0", s.traces(None, 0));
    log.see("traces all unlimited", s.traces(None, usize::MAX));
    log.see("traces alice", s.traces(Some("alice"), 10));
    log.see("traces alice 2", s.traces(Some("alice"), 2));
    log.see("traces nobody", s.traces(Some("nobody"), 10));
    // Storing a trace again replaces it whole.
    let mut again = trace("B", "dave", Some("s9"), 3_000);
    again.route = "sql".into();
    again.state = "{}".into();
    log.see("put B again", s.put_trace(&again));
    log.see("trace B replaced", s.trace("B"));
    log.see("traces alice after replace", s.traces(Some("alice"), 10));
    log.see("traces dave", s.traces(Some("dave"), 10));

    // A user may change their mind; only the latest verdict of each user counts.
    log.see(
        "feedback alice",
        s.put_feedback(&feedback("t2", "alice", true, &["e1", "e2"])),
    );
    log.see(
        "feedback bob",
        s.put_feedback(&feedback("t2", "bob", false, &[])),
    );
    log.see(
        "feedback alice again",
        s.put_feedback(&feedback("t2", "alice", false, &["e3", "é 🙂"])),
    );
    log.see(
        "feedback on an unstored trace",
        s.put_feedback(&feedback("never-stored", "carol", true, &["x"])),
    );
    log.see("feedback t2", s.feedback("t2"));
    log.see("feedback never-stored", s.feedback("never-stored"));
    log.see("feedback none", s.feedback("none"));
    log.see(
        "feedback bob again",
        s.put_feedback(&feedback("t2", "bob", true, &["e4"])),
    );
    log.see("feedback t2 after bob", s.feedback("t2"));

    log.see("no sources", s.sql_sources());
    log.see(
        "put sales",
        s.put_sql_source(&sql_source(
            "sales",
            "/data/sales.sqlite",
            &["team:finance", "public"],
            Some("org_id"),
        )),
    );
    log.see(
        "put B-src",
        s.put_sql_source(&sql_source("B-src", "/data/b.sqlite", &[], None)),
    );
    log.see(
        "put a src",
        s.put_sql_source(&sql_source(
            "a src",
            "/data/a.sqlite",
            &["two words", ""],
            None,
        )),
    );
    log.see("sources", s.sql_sources());
    tick();
    log.see(
        "put sales again",
        s.put_sql_source(&sql_source(
            "sales",
            "/data/sales2.sqlite",
            &["public"],
            None,
        )),
    );
    log.see("sources after replace", s.sql_sources());
    log.see("remove sales", s.remove_sql_source("sales"));
    log.see("remove sales again", s.remove_sql_source("sales"));
    log.see("remove unknown", s.remove_sql_source("nope"));
    log.see("sources after remove", s.sql_sources());
    log.lines
}

fn entry<'a>(user: &'a str, action: &'a str, evidence: &'a str) -> AuditEntry<'a> {
    AuditEntry {
        trace_id: "t",
        user,
        agent: None,
        role: "USER",
        action,
        target: "q",
        snapshot: "ab",
        outcome: "ok",
        allowed: 2,
        filtered: 1,
        evidence,
    }
}

/// The audit log: newest first, filtered by user, limited; evidence that is not JSON reads
/// as null.
fn audit_log(s: &mut dyn AuditStore) -> Vec<String> {
    let mut log = Log::new();
    log.see("empty", s.audit(10, None));
    log.see(
        "alice search",
        s.append_audit(&entry(
            "alice",
            "search",
            r#"[{"chunk":1,"decision":"allow"}]"#,
        )),
    );
    log.see(
        "bob list",
        s.append_audit(&AuditEntry {
            agent: Some("agent-7"),
            role: "ADMIN",
            outcome: "denied",
            ..entry("bob", "list", "not json")
        }),
    );
    log.see("alice open", s.append_audit(&entry("alice", "open", "[]")));
    log.see(
        "carol acl",
        s.append_audit(&AuditEntry {
            allowed: u64::MAX,
            filtered: 0,
            ..entry("carol", "acl", r#"{"a":1}"#)
        }),
    );
    log.see(
        "alice empty evidence",
        s.append_audit(&entry("alice", "search", "")),
    );
    log.see("all", s.audit(10, None));
    log.see("newest 2", s.audit(2, None));
    log.see("limit 0", s.audit(0, None));
    log.see("unlimited", s.audit(usize::MAX, None));
    log.see("alice", s.audit(10, Some(&uid("alice"))));
    log.see("alice newest", s.audit(1, Some(&uid("alice"))));
    log.see("nobody", s.audit(10, Some(&uid("nobody"))));
    log.lines
}

#[test]
fn sessions_and_turns_match_the_sqlite_store() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("chat_sessions").unwrap()).unwrap();
    let sqlite = sessions_and_turns(&mut Store::open_in_memory().unwrap());
    let postgres = sessions_and_turns(&mut PgStore::new(&db, "replica-a"));
    let seen = assert_parity(sqlite, postgres, 63);
    // Anchors, so that both backends agreeing on something wrong does not pass.
    for line in [
        "create s1 again -> error",
        "add turn to unknown -> error",
        "summary of unknown session -> error",
        "turn ids grow without gaps: true",
        "a turn touches its session: true",
        "delete s1 -> true",
        "delete s1 again -> false",
        "turns go with the session -> []",
        "ids are not reused: true",
    ] {
        assert!(seen.iter().any(|l| l == line), "missing {line:?}");
    }
    for prefix in [
        r#"sessions alice after s1's turns -> [SessionRecord { id: "s1""#,
        r#"sessions alice after s2's turn -> [SessionRecord { id: "s2""#,
    ] {
        assert!(
            seen.iter().any(|l| l.starts_with(prefix)),
            "missing {prefix:?}"
        );
    }
}

#[test]
fn traces_feedback_and_sources_match_the_sqlite_store() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("chat_traces").unwrap()).unwrap();
    let sqlite = traces_feedback_and_sources(&mut Store::open_in_memory().unwrap());
    let postgres = traces_feedback_and_sources(&mut PgStore::new(&db, "replica-a"));
    let seen = assert_parity(sqlite, postgres, 40);
    for line in ["feedback none -> []", "remove sales again -> false"] {
        assert!(seen.iter().any(|l| l == line), "missing {line:?}");
    }
}

#[test]
fn the_audit_log_matches_the_sqlite_store() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("chat_audit").unwrap()).unwrap();
    let sqlite = audit_log(&mut Store::open_in_memory().unwrap());
    let postgres = audit_log(&mut PgStore::new(&db, "replica-a"));
    let seen = assert_parity(sqlite, postgres, 13);
    assert_eq!(seen[6].matches("AuditRecord").count(), 5, "{}", seen[6]);
    assert_eq!(seen[6].matches("evidence: Null").count(), 2, "{}", seen[6]);
    for line in ["limit 0 -> []", "nobody -> []"] {
        assert!(seen.iter().any(|l| l == line), "missing {line:?}");
    }
}

#[test]
fn one_replica_reads_what_another_wrote() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("chat_replicas").unwrap()).unwrap();
    let mut a = PgStore::new(&db, "replica-a");
    let mut b = PgStore::new(&db, "replica-b");

    a.create_session("s", "alice", "Shared").unwrap();
    let first = a.add_turn(&turn("s", 0)).unwrap();
    assert_eq!(b.session("s").unwrap().unwrap().title, "Shared");
    let second = b.add_turn(&turn("s", 1)).unwrap();
    assert!(second > first);
    let questions: Vec<String> = a
        .turns("s", 10)
        .unwrap()
        .into_iter()
        .map(|t| t.question)
        .collect();
    assert_eq!(questions, ["q0", "q1"]);
    b.set_session_summary("s", &summary(second, "both turns", None))
        .unwrap();
    a.set_session_summary("s", &summary(first, "stale", None))
        .unwrap();
    assert_eq!(
        b.session_summary("s").unwrap().unwrap().summary,
        "both turns"
    );

    a.put_trace(&trace("t", "alice", Some("s"), 0)).unwrap();
    assert_eq!(b.trace("t").unwrap().unwrap().question, "question of t");
    b.put_feedback(&feedback("t", "bob", false, &["e"]))
        .unwrap();
    a.put_feedback(&feedback("t", "bob", true, &[])).unwrap();
    let verdicts = b.feedback("t").unwrap();
    assert_eq!(verdicts.len(), 1);
    assert!(
        verdicts[0].helpful,
        "the latest verdict, whichever replica took it"
    );

    a.put_sql_source(&sql_source("sales", "/d/s.sqlite", &["public"], None))
        .unwrap();
    assert_eq!(b.sql_sources().unwrap()[0].path, "/d/s.sqlite");
    assert!(b.remove_sql_source("sales").unwrap());
    assert!(a.sql_sources().unwrap().is_empty());

    let from_a = a.append_audit(&entry("alice", "search", "[]")).unwrap();
    let from_b = b.append_audit(&entry("bob", "list", "[]")).unwrap();
    let ids: Vec<i64> = a.audit(10, None).unwrap().iter().map(|r| r.id).collect();
    assert_eq!(ids, [from_b, from_a]);
    assert_eq!(b.audit(10, Some(&uid("alice"))).unwrap()[0].id, from_a);

    assert!(b.delete_session("s").unwrap());
    assert!(a.session("s").unwrap().is_none());
    assert!(a.turns("s", 10).unwrap().is_empty());
    assert!(a.session_summary("s").unwrap().is_none());
}

#[test]
fn replicas_adding_turns_at_once_get_distinct_growing_ids() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("chat_concurrent").unwrap()).unwrap();
    PgStore::new(&db, "setup")
        .create_session("s", "alice", "Busy")
        .unwrap();
    let handles: Vec<_> = (0..4)
        .map(|r| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut store = PgStore::new(&db, format!("replica-{r}"));
                (0..10)
                    .map(|i| store.add_turn(&turn("s", r * 10 + i)).unwrap())
                    .collect::<Vec<i64>>()
            })
        })
        .collect();
    let mut ids = Vec::new();
    for h in handles {
        let mine = h.join().unwrap();
        assert!(mine.windows(2).all(|w| w[0] < w[1]), "{mine:?}");
        ids.extend(mine);
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 40);
    let store = PgStore::new(&db, "reader");
    let stored: Vec<i64> = store
        .turns("s", usize::MAX)
        .unwrap()
        .iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(stored, ids);
}
