//! Several accounts in one team database: each has tables of its own, a deleted account's
//! connections fail instead of reading another account's tables, and a replica's index made
//! for an account that was deleted and created again is rebuilt, not resumed.

#![allow(clippy::print_stderr, clippy::unwrap_used)]

mod common;

use common::cluster;
use knowhub_index::{SearchRequest, TantivyIndex, TextIndex};
use knowhub_pg::{Database, IndexFollower, PgDocuments, PgError, state_file};
use knowhub_store::{DocumentStatus, NewChunk, NewDocument, SourceId};

fn store(docs: &PgDocuments, source: SourceId, path: &str, text: &str) {
    let chunk = NewChunk {
        ordinal: 0,
        text: text.to_owned(),
        heading_path: Vec::new(),
        page_start: None,
        page_end: None,
        char_start: 0,
        char_end: text.len(),
        token_count: 2,
        text_hash: "h".into(),
    };
    docs.replace_document(&NewDocument {
        parent: None,
        source,
        folder: None,
        path,
        kind: "text",
        content_hash: "h",
        size: text.len() as u64,
        mtime_ns: None,
        title: Some("Doc"),
        status: DocumentStatus::Indexed,
        note: None,
        page_count: None,
        encoding: None,
        meta: &knowhub_store::NO_META,
        text,
        chunks: &[chunk],
        tables: &[],
        original: None,
    })
    .unwrap();
}

fn paths(docs: &PgDocuments) -> Vec<String> {
    ["/a/shared.md", "/a/acme.md", "/a/default.md"]
        .into_iter()
        .filter(|p| docs.document_by_path(p).unwrap().is_some())
        .map(str::to_owned)
        .collect()
}

#[test]
fn accounts_have_their_own_tables_and_a_deleted_one_reads_nothing() {
    let Some(pg) = cluster() else { return };
    let url = pg.create_database("accounts").unwrap();
    let main = Database::connect(&url).unwrap();
    assert!(main.accounts().unwrap().is_empty());
    assert!(matches!(
        Database::connect_account(&url, "acme"),
        Err(PgError::NoAccount(id)) if id == "acme"
    ));
    main.create_account("acme").unwrap();
    main.create_account("Beta-2").unwrap();
    assert!(main.create_account("acme").is_err(), "exists already");
    assert_eq!(main.accounts().unwrap(), ["Beta-2", "acme"]);
    assert!(main.account_exists("acme").unwrap() && main.account_exists("default").unwrap());
    assert!(!main.account_exists("gamma").unwrap());

    let default = PgDocuments::new(&main);
    let acme_db = Database::connect_account(&url, "acme").unwrap();
    let acme = PgDocuments::new(&acme_db);
    let beta = PgDocuments::new(&Database::connect_account(&url, "Beta-2").unwrap());
    let s = default.folder_source("/a", "A").unwrap();
    store(&default, s, "/a/shared.md", "default's words");
    store(&default, s, "/a/default.md", "default only");
    let s = acme.folder_source("/a", "A").unwrap();
    store(&acme, s, "/a/shared.md", "acme's words");
    store(&acme, s, "/a/acme.md", "acme only");
    assert_eq!(paths(&default), ["/a/shared.md", "/a/default.md"]);
    assert_eq!(paths(&acme), ["/a/shared.md", "/a/acme.md"]);
    assert!(paths(&beta).is_empty());
    assert_eq!(default.changes_after(0, 10).unwrap().len(), 2);
    assert_eq!(acme.changes_after(0, 10).unwrap().len(), 2);

    // A replica follows acme's log into its index.
    let dir = tempfile::tempdir().unwrap();
    let follower = |db: &Database| {
        IndexFollower::new(
            db,
            TantivyIndex::open(dir.path()).unwrap(),
            state_file(dir.path()),
        )
        .unwrap()
    };
    let mut f = follower(&acme_db);
    f.catch_up().unwrap();
    let found = |f: &IndexFollower<TantivyIndex>, q: &str| {
        f.index().search(&SearchRequest::new(q, 10)).unwrap().len()
    };
    assert_eq!(found(&f, "acme"), 2);
    drop(f);

    // Deleted: its open connections fail rather than fall through to the default account's
    // tables of the same names.
    assert!(main.delete_account("acme").unwrap());
    assert!(!main.delete_account("acme").unwrap());
    assert_eq!(main.accounts().unwrap(), ["Beta-2"]);
    let err = acme.document_by_path("/a/shared.md").unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    assert!(matches!(
        Database::connect_account(&url, "acme"),
        Err(PgError::NoAccount(_))
    ));
    assert_eq!(paths(&default), ["/a/shared.md", "/a/default.md"]);
    assert!(main.delete_account("default").is_err());

    // Created again under the same id: ids and sequence numbers start over, so the replica's
    // index of the old account is emptied, not resumed.
    main.create_account("acme").unwrap();
    let acme_db = Database::connect_account(&url, "acme").unwrap();
    let acme = PgDocuments::new(&acme_db);
    let s = acme.folder_source("/a", "A").unwrap();
    store(&acme, s, "/a/other.md", "fresh start");
    store(&acme, s, "/a/more.md", "fresh again");
    store(&acme, s, "/a/last.md", "fresh still");
    let mut f = follower(&acme_db);
    f.catch_up().unwrap();
    assert_eq!(found(&f, "acme"), 0, "the old account's chunks are gone");
    assert_eq!(found(&f, "fresh"), 3);
}
