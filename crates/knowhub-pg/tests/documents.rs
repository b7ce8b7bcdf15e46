//! Documents in the team database and replicas' text indexes that follow its change log.

#![allow(clippy::print_stderr, clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::cluster;
use knowhub_index::{SearchRequest, TantivyIndex, TextIndex};
use knowhub_parse::{Cell, Column, ColumnType, Table};
use knowhub_pg::{CHANGE_LOG_LOCK, Database, IndexFollower, PgDocuments, PgError, state_file};
use knowhub_store::{
    DocumentId, DocumentStatus, NewChunk, NewDocument, ReplicaTable, SheetReplica, SourceId,
};

fn chunk(ordinal: u32, text: &str) -> NewChunk {
    NewChunk {
        ordinal,
        text: text.to_string(),
        heading_path: vec!["Intro".to_string()],
        page_start: Some(1),
        page_end: Some(1),
        char_start: 0,
        char_end: text.len(),
        token_count: 3,
        text_hash: format!("{:x}", text.len()),
    }
}

fn store(docs: &PgDocuments, source: SourceId, path: &str, texts: &[&str]) -> DocumentId {
    let chunks: Vec<NewChunk> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| chunk(i as u32, t))
        .collect();
    let text = texts.join("\n");
    docs.replace_document(&NewDocument {
        parent: None,
        source,
        folder: None,
        path,
        kind: "text",
        content_hash: "h",
        size: text.len() as u64,
        mtime_ns: None,
        title: Some("Handbook"),
        status: DocumentStatus::Indexed,
        note: None,
        page_count: None,
        encoding: None,
        meta: &knowhub_store::NO_META,
        text: &text,
        chunks: &chunks,
        tables: &[],
        original: None,
    })
    .unwrap()
}

/// A replica's follower into an in-memory index, its position kept at `state`.
fn in_memory_follower(db: &Database, state: &std::path::Path) -> IndexFollower<TantivyIndex> {
    IndexFollower::new(db, TantivyIndex::in_memory().unwrap(), state).unwrap()
}

fn hits(index: &TantivyIndex, query: &str) -> Vec<u64> {
    let mut docs: Vec<u64> = index
        .search(&SearchRequest::new(query, 10))
        .unwrap()
        .iter()
        .map(|h| h.doc_id)
        .collect();
    docs.sort_unstable();
    docs.dedup();
    docs
}

#[test]
fn documents_keep_their_id_and_every_change_is_logged() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("docs").unwrap()).unwrap();
    let docs = PgDocuments::new(&db);
    let source = docs.folder_source("/srv/handbook", "Handbook").unwrap();
    assert_eq!(
        docs.folder_source("/srv/handbook", "Handbook").unwrap(),
        source
    );
    let files = docs.files_source().unwrap();
    assert_eq!(docs.files_source().unwrap(), files);
    let nested = docs.ensure_folder(source, "hr/leave").unwrap();
    assert_eq!(docs.ensure_folder(source, "hr/leave/").unwrap(), nested);

    let id = store(
        &docs,
        source,
        "/srv/handbook/leave.md",
        &["Annual leave is 20 days.", "年假二十天。"],
    );
    let first = docs.document_chunks(id).unwrap();
    assert_eq!(first.len(), 2);
    assert_eq!(first[1].text, "年假二十天。");
    assert_eq!(first[0].heading_path, ["Intro"]);
    let again = store(
        &docs,
        source,
        "/srv/handbook/leave.md",
        &["Annual leave is 25 days."],
    );
    assert_eq!(again, id, "a re-ingested path keeps its id");
    let second = docs.document_chunks(id).unwrap();
    assert_eq!(second.len(), 1);
    assert!(
        second[0].chunk_id > first[1].chunk_id,
        "chunk ids are never reused"
    );
    let record = docs.document(id).unwrap().unwrap();
    assert_eq!((record.chunk_count, record.status.as_str()), (1, "indexed"));
    assert_eq!(
        docs.document_by_path("/srv/handbook/leave.md")
            .unwrap()
            .unwrap()
            .id,
        id
    );
    let ids = [second[0].chunk_id, first[0].chunk_id];
    assert_eq!(docs.chunks(&ids).unwrap().len(), 1, "old chunks are gone");

    docs.remove_document(id).unwrap();
    docs.remove_document(id).unwrap();
    assert!(docs.document(id).unwrap().is_none());
    let log = docs.changes_after(0, 100).unwrap();
    assert_eq!(
        log.len(),
        3,
        "two writes and one removal; removing nothing logs nothing"
    );
    assert!(log.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(docs.last_change().unwrap(), log[2].seq);

    // A spreadsheet keeps its sheets, as typed tables for the SQL tool; a sheet without
    // columns makes none.
    let empty = Table {
        name: "empty".into(),
        columns: Vec::new(),
        rows: Vec::new(),
    };
    let id = store_sheets(
        &docs,
        source,
        "/srv/handbook/sheet.xlsx",
        &[empty, sheet("Budget 2026", &[("a", 1), ("b", 2)])],
    );
    let records = docs.sheet_records(Some(id)).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].1.sql_name, format!("budget_2026_{}_2", id.0));
    assert_eq!(records[0].1.row_count, 2);
    let sheet_doc = docs.document(id).unwrap().unwrap();
    assert_eq!((sheet_doc.error, sheet_doc.error_code), (None, None));
    docs.remove_document(id).unwrap();
    assert!(
        docs.sheet_records(None).unwrap().is_empty(),
        "removed with the document"
    );
}

#[test]
fn a_mails_attachments_are_kept_and_go_with_it_logged_for_the_replicas() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("attachments").unwrap()).unwrap();
    let docs = PgDocuments::new(&db);
    let source = docs.folder_source("/srv/mail", "Mail").unwrap();
    let mail = store(&docs, source, "/srv/mail/m.eml", &["Subject: rates"]);
    let chunks = [chunk(0, "Hotel: 120 EUR a night.")];
    let attached = |parent, path, bytes: &'static [u8]| {
        docs.replace_document(&NewDocument {
            parent: Some(parent),
            source,
            folder: None,
            path,
            kind: "markdown",
            content_hash: "ha",
            size: bytes.len() as u64,
            mtime_ns: None,
            title: Some("Rates"),
            status: DocumentStatus::Indexed,
            note: None,
            page_count: None,
            encoding: None,
            meta: &knowhub_store::NO_META,
            text: "Hotel: 120 EUR a night.",
            chunks: &chunks,
            tables: &[],
            original: Some(bytes),
        })
        .unwrap()
    };
    let child = attached(mail, "/srv/mail/m.eml/rates.md", b"# Rates");
    let grandchild = attached(child, "/srv/mail/m.eml/rates.md/x.md", b"x");
    assert_eq!(docs.document(child).unwrap().unwrap().parent, Some(mail));
    let store = knowhub_pg::PgStore::new(&db, "test");
    let family: Vec<DocumentId> = knowhub_store::backend::DocumentStore::attachments(&store, mail)
        .unwrap()
        .iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(family, [child, grandchild], "theirs included");
    let before = docs.last_change().unwrap();

    docs.remove_document(mail).unwrap();
    for id in [mail, child, grandchild] {
        assert!(docs.document(id).unwrap().is_none(), "{id:?} removed");
    }
    let logged: BTreeSet<i64> = docs
        .changes_after(before, 100)
        .unwrap()
        .iter()
        .map(|c| c.document_id.0)
        .collect();
    assert_eq!(logged, BTreeSet::from([mail.0, child.0, grandchild.0]));
}

fn sheet(name: &str, rows: &[(&str, i64)]) -> Table {
    Table {
        name: name.into(),
        columns: vec![
            Column {
                name: "item".into(),
                ty: ColumnType::Text,
            },
            Column {
                name: "amount".into(),
                ty: ColumnType::Integer,
            },
        ],
        rows: rows
            .iter()
            .map(|(item, n)| vec![Cell::Text((*item).into()), Cell::Int(*n)])
            .collect(),
    }
}

fn store_sheets(docs: &PgDocuments, source: SourceId, path: &str, tables: &[Table]) -> DocumentId {
    docs.replace_document(&NewDocument {
        parent: None,
        source,
        folder: None,
        path,
        kind: "xlsx",
        content_hash: "h",
        size: 1,
        mtime_ns: None,
        title: None,
        status: DocumentStatus::Indexed,
        note: None,
        page_count: None,
        encoding: None,
        meta: &knowhub_store::NO_META,
        text: "item amount",
        chunks: &[chunk(0, "item amount")],
        tables,
        original: None,
    })
    .unwrap()
}

#[test]
fn a_replicas_sheet_tables_follow_the_log_and_are_repaired_on_start() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("follow_sheets").unwrap()).unwrap();
    let docs = PgDocuments::new(&db);
    let source = docs.folder_source("/srv/data", "Data").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tables = dir.path().join("team-tables.sqlite");
    let budget = store_sheets(
        &docs,
        source,
        "/srv/data/budget.xlsx",
        &[sheet("Q1", &[("a", 1)])],
    );

    let follower = |dir: &std::path::Path| {
        in_memory_follower(&db, &dir.join("state"))
            .with_sheets(SheetReplica::open(&tables).unwrap())
            .unwrap()
    };
    let mut f = follower(dir.path());
    f.catch_up().unwrap();
    let q1 = format!("q1_{}_1", budget.0);
    assert_eq!(
        SheetReplica::held(&tables).unwrap(),
        BTreeSet::from([q1.clone()])
    );

    // Re-ingested with other sheets, a new spreadsheet, and a plain document.
    store_sheets(
        &docs,
        source,
        "/srv/data/budget.xlsx",
        &[sheet("Q2", &[("b", 2), ("c", 3)])],
    );
    let plan = store_sheets(&docs, source, "/srv/data/plan.xlsx", &[sheet("Plan", &[])]);
    store(&docs, source, "/srv/data/readme.md", &["plain text"]);
    f.catch_up().unwrap();
    let q2 = format!("q2_{}_1", budget.0);
    let plan_table = format!("plan_{}_1", plan.0);
    assert_eq!(
        SheetReplica::held(&tables).unwrap(),
        BTreeSet::from([q2.clone(), plan_table.clone()])
    );
    let replica = SheetReplica::open(&tables).unwrap();
    assert_eq!(
        replica.rows(&q2, &sheet("", &[]).columns).unwrap(),
        sheet("", &[("b", 2), ("c", 3)]).rows
    );
    drop(replica);

    // Removed while the replica was down, and the replica's file damaged by hand: the next
    // start repairs both before following.
    drop(f);
    docs.remove_document(plan).unwrap();
    SheetReplica::open(&tables)
        .unwrap()
        .replace_document(
            DocumentId(9999),
            &[ReplicaTable {
                generation: 1,
                sql_name: "stray_9999_1".into(),
                table: sheet("stray", &[("x", 0)]),
            }],
        )
        .unwrap();
    SheetReplica::open(&tables)
        .unwrap()
        .remove(std::slice::from_ref(&q2))
        .unwrap();
    let _f = follower(dir.path());
    assert_eq!(SheetReplica::held(&tables).unwrap(), BTreeSet::from([q2]));
}

#[test]
fn replicas_build_the_same_index_from_the_log_and_resume_where_they_stopped() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("follow").unwrap()).unwrap();
    let docs = PgDocuments::new(&db);
    let source = docs.folder_source("/srv/wiki", "Wiki").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let leave = store(
        &docs,
        source,
        "/srv/wiki/leave.md",
        &["Annual leave is 20 days."],
    );
    let travel = store(
        &docs,
        source,
        "/srv/wiki/travel.md",
        &["出差 travel expenses are refunded."],
    );

    let a_dir = dir.path().join("a");
    let mut a =
        IndexFollower::new(&db, TantivyIndex::open(&a_dir).unwrap(), state_file(&a_dir)).unwrap();
    let mut b = in_memory_follower(&db, &dir.path().join("b"));
    assert_eq!(a.catch_up().unwrap().documents, 2);
    b.catch_up().unwrap();
    for f in [&a, &b] {
        assert_eq!(hits(f.index(), "leave"), [leave.0 as u64]);
        assert_eq!(hits(f.index(), "出差"), [travel.0 as u64]);
    }

    docs.remove_document(leave).unwrap();
    store(
        &docs,
        source,
        "/srv/wiki/travel.md",
        &["Travel is booked through the portal."],
    );
    let done = a.catch_up().unwrap();
    assert_eq!((done.changes, done.documents), (2, 2));
    assert!(hits(a.index(), "leave").is_empty());
    assert!(hits(a.index(), "出差").is_empty());
    assert_eq!(hits(a.index(), "portal"), [travel.0 as u64]);
    assert_eq!(a.catch_up().unwrap().changes, 0);

    // A replica restarted with its index and position resumes without replaying.
    let applied = a.applied();
    drop(a);
    let mut resumed =
        IndexFollower::new(&db, TantivyIndex::open(&a_dir).unwrap(), state_file(&a_dir)).unwrap();
    assert_eq!(resumed.applied(), applied);
    assert_eq!(resumed.catch_up().unwrap().changes, 0);
    assert_eq!(hits(resumed.index(), "portal"), [travel.0 as u64]);

    // Replica b, behind by two changes, converges on the same index.
    b.catch_up().unwrap();
    assert_eq!(
        b.index().doc_chunk_counts().unwrap(),
        resumed.index().doc_chunk_counts().unwrap()
    );

    // A position file without its index is corrupt, not silently trusted.
    std::fs::write(dir.path().join("bad"), "not a number").unwrap();
    let err = IndexFollower::new(
        &db,
        TantivyIndex::in_memory().unwrap(),
        dir.path().join("bad"),
    )
    .unwrap_err();
    assert!(matches!(err, PgError::Corrupt(_)), "{err}");
}

#[test]
fn concurrent_writers_never_leave_a_gap_behind_a_follower() {
    let Some(pg) = cluster() else { return };
    let url = pg.create_database("gaps").unwrap();
    let db = Database::connect(&url).unwrap();
    let docs = PgDocuments::new(&db);
    let source = docs.folder_source("/srv/many", "Many").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut follower = in_memory_follower(&db, &dir.path().join("f"));

    let writers: Vec<_> = (0..4)
        .map(|w| {
            let docs = docs.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    store(
                        &docs,
                        source,
                        &format!("/srv/many/{w}-{i}.md"),
                        &["shared word"],
                    );
                }
            })
        })
        .collect();
    // Catch up while the writers commit, so any change committed behind an applied one
    // would be skipped for good.
    while !writers.iter().all(|w| w.is_finished()) {
        follower.catch_up().unwrap();
    }
    for w in writers {
        w.join().unwrap();
    }
    follower.catch_up().unwrap();
    let counts = follower.index().doc_chunk_counts().unwrap();
    assert_eq!(
        counts.len(),
        100,
        "every document reached the replica's index"
    );
}

#[test]
fn a_change_takes_its_place_in_the_log_only_after_earlier_writers_commit() {
    let Some(pg) = cluster() else { return };
    let url = pg.create_database("order").unwrap();
    let db = Database::connect(&url).unwrap();
    let docs = PgDocuments::new(&db);
    let source = docs.folder_source("/srv/order", "Order").unwrap();

    // A slow writer: it holds the log's lock, as a writer does from its sequence number to
    // its commit.
    let mut slow = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut slow_tx = slow.transaction().unwrap();
    slow_tx
        .execute("SELECT pg_advisory_xact_lock($1)", &[&CHANGE_LOG_LOCK])
        .unwrap();
    let fast = {
        let docs = docs.clone();
        std::thread::spawn(move || store(&docs, source, "/srv/order/fast.md", &["fast"]))
    };
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !fast.is_finished(),
        "a later writer waits for the earlier one"
    );
    let slow_seq: i64 = slow_tx
        .query_one(
            "INSERT INTO document_changes (seq, document_id)
             VALUES (nextval('document_change_seq'), 999) RETURNING seq",
            &[],
        )
        .unwrap()
        .get(0);
    slow_tx.commit().unwrap();
    let fast_doc = fast.join().unwrap();
    let log = docs.changes_after(0, 10).unwrap();
    let fast_seq = log.iter().find(|c| c.document_id == fast_doc).unwrap().seq;
    assert!(slow_seq < fast_seq, "sequence order is commit order");
}

#[test]
fn a_following_replica_sees_a_commit_without_being_asked() {
    let Some(pg) = cluster() else { return };
    let url = pg.create_database("live").unwrap();
    let db = Database::connect(&url).unwrap();
    let docs = PgDocuments::new(&db);
    let source = docs.folder_source("/srv/live", "Live").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut follower = in_memory_follower(&db, &dir.path().join("f"));

    let writer = {
        let docs = docs.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            store(&docs, source, "/srv/live/new.md", &["Fresh news."]);
            Instant::now()
        })
    };
    let started = Instant::now();
    // A long poll: only the notification can wake the follower in time for the bound below.
    follower
        .follow(Duration::from_secs(30), |f| {
            f.applied() > 0 || started.elapsed() > Duration::from_secs(20)
        })
        .unwrap();
    let committed = writer.join().unwrap();
    assert!(follower.applied() > 0, "the change was applied");
    assert!(
        committed.elapsed() < Duration::from_secs(10),
        "woken by the notification, not by the 30 s poll"
    );
    assert_eq!(hits(follower.index(), "news").len(), 1);
}

#[test]
fn compaction_keeps_each_documents_newest_change_and_a_replica_behind_it_rebuilds() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("compaction").unwrap()).unwrap();
    let docs = PgDocuments::new(&db);
    let source = docs.folder_source("/srv/log", "Log").unwrap();
    let a = store(&docs, source, "/srv/log/a.md", &["alpha draft"]);
    for round in 0..4 {
        store(
            &docs,
            source,
            "/srv/log/a.md",
            &[&format!("alpha round{round}")],
        );
    }
    let b = store(&docs, source, "/srv/log/b.md", &["beta"]);
    let c = store(&docs, source, "/srv/log/c.md", &["gamma"]);

    // A replica with an index on disk follows up to here, then is away.
    let dir = tempfile::tempdir().unwrap();
    let away_dir = dir.path().join("away");
    let away = |dir: &std::path::Path| {
        IndexFollower::new(&db, TantivyIndex::open(dir).unwrap(), state_file(dir)).unwrap()
    };
    let mut f = away(&away_dir);
    f.catch_up().unwrap();
    assert_eq!(hits(f.index(), "gamma"), [c.0 as u64]);
    drop(f);

    docs.remove_document(c).unwrap();
    store(&docs, source, "/srv/log/a.md", &["alpha final"]);
    assert_eq!(docs.changes_after(0, 100).unwrap().len(), 9);

    // Superseded entries go at once; a removal stays for the retention.
    let done = docs.compact_changes(Duration::from_secs(3600)).unwrap();
    assert_eq!((done.superseded, done.removed, done.remaining), (6, 0, 3));
    let kept: Vec<DocumentId> = docs
        .changes_after(0, 100)
        .unwrap()
        .iter()
        .map(|c| c.document_id)
        .collect();
    assert_eq!(
        kept,
        [b, c, a],
        "each document's newest entry, in log order"
    );
    let mut fresh = in_memory_follower(&db, &dir.path().join("fresh"));
    let caught = fresh.catch_up().unwrap();
    assert_eq!((caught.changes, caught.rebuilt), (3, false));
    assert_eq!(hits(fresh.index(), "alpha final"), [a.0 as u64]);
    assert_eq!(hits(fresh.index(), "round3"), Vec::<u64>::new());
    assert_eq!(hits(fresh.index(), "beta"), [b.0 as u64]);

    // The removal's entry goes after the retention; the replica that was away since before
    // it cannot learn of the removal from the log any more, so it rebuilds.
    let done = docs.compact_changes(Duration::ZERO).unwrap();
    assert_eq!((done.superseded, done.removed, done.remaining), (0, 1, 2));
    assert!(docs.change_log_horizon().unwrap() > 0);
    let mut f = away(&away_dir);
    let caught = f.catch_up().unwrap();
    assert!(caught.rebuilt);
    assert_eq!(
        hits(f.index(), "gamma"),
        Vec::<u64>::new(),
        "removed while away"
    );
    assert_eq!(hits(f.index(), "alpha final"), [a.0 as u64]);
    assert_eq!(hits(f.index(), "beta"), [b.0 as u64]);
    // Once rebuilt it follows as usual.
    let caught = f.catch_up().unwrap();
    assert_eq!((caught.changes, caught.rebuilt), (0, false));
    // An up-to-date replica does not rebuild.
    assert!(!fresh.catch_up().unwrap().rebuilt);
}

fn stored_with_original(
    store: &mut knowhub_pg::PgStore,
    source: SourceId,
    path: &str,
    hash: &str,
    original: Option<&[u8]>,
) -> DocumentId {
    use knowhub_store::backend::DocumentStore;
    store
        .replace_document(&NewDocument {
            parent: None,
            source,
            folder: None,
            path,
            kind: "text",
            content_hash: hash,
            size: original.map_or(0, |o| o.len() as u64),
            mtime_ns: None,
            title: None,
            status: DocumentStatus::Indexed,
            note: None,
            page_count: None,
            encoding: None,
            meta: &knowhub_store::NO_META,
            text: "body",
            chunks: &[chunk(0, "body")],
            tables: &[],
            original,
        })
        .unwrap()
}

fn read_original(store: &knowhub_pg::PgStore, id: DocumentId) -> Option<Vec<u8>> {
    use knowhub_store::backend::DocumentStore;
    let mut file = store.original_file(id).unwrap()?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut file.reader, &mut bytes).unwrap();
    assert_eq!(file.len, bytes.len() as u64);
    Some(bytes)
}

#[test]
fn every_replica_serves_the_original_file_of_the_version_that_was_parsed() {
    use knowhub_store::backend::DocumentStore;
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("originals").unwrap()).unwrap();
    let mut a = knowhub_pg::PgStore::new(&db, "replica-a");
    let b = knowhub_pg::PgStore::new(&db, "replica-b");
    let source = a.files_source().unwrap();

    // Larger than one stored part, with every byte value, so parts join in order.
    let big: Vec<u8> = (0..(2 << 20) + 12_345)
        .map(|i| (i * 7 % 251) as u8)
        .collect();
    let id = stored_with_original(&mut a, source, "/uploads/big.bin", "v1", Some(&big));
    assert_eq!(read_original(&b, id).as_deref(), Some(&big[..]));

    // A reader that opened the first version fails rather than mixing in the second.
    let mut open = b.original_file(id).unwrap().unwrap();
    let mut first = vec![0; 10];
    std::io::Read::read_exact(&mut open.reader, &mut first).unwrap();
    let id2 = stored_with_original(&mut a, source, "/uploads/big.bin", "v2", Some(b"second"));
    assert_eq!(id2, id);
    let mut rest = Vec::new();
    let err = std::io::Read::read_to_end(&mut open.reader, &mut rest).unwrap_err();
    assert!(err.to_string().contains("changed"), "{err}");
    assert_eq!(read_original(&b, id).as_deref(), Some(&b"second"[..]));

    // An empty file is a file; a version that no longer parses keeps the previous version and
    // its copy; a version stored without its bytes has no copy, nor has a removed document.
    let empty = stored_with_original(&mut a, source, "/uploads/empty.txt", "e", Some(b""));
    assert_eq!(read_original(&b, empty).as_deref(), Some(&b""[..]));
    a.record_failure(&knowhub_store::FailedDocument {
        parent: None,
        source,
        folder: None,
        path: "/uploads/empty.txt",
        kind: Some("text"),
        size: 3,
        mtime_ns: None,
        title: None,
        status: DocumentStatus::Failed,
        code: "parse",
        error: "broken",
    })
    .unwrap();
    assert_eq!(read_original(&b, empty).as_deref(), Some(&b""[..]));
    stored_with_original(&mut a, source, "/uploads/big.bin", "v3", None);
    assert_eq!(read_original(&b, id), None);
    stored_with_original(&mut a, source, "/uploads/big.bin", "v4", Some(b"fourth"));
    a.remove_document(id).unwrap();
    a.remove_document(empty).unwrap();
    assert_eq!(read_original(&b, id), None);
    let mut client = db.client().unwrap();
    let parts: i64 = client
        .query_one("SELECT count(*) FROM document_file_parts", &[])
        .unwrap()
        .get(0);
    assert_eq!(parts, 0, "no part outlives its document's copy");
}
