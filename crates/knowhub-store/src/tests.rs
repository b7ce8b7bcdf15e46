use knowhub_parse::{Cell, Column, ColumnType, Table};

use super::*;

fn chunk(ordinal: u32, text: &str) -> NewChunk {
    NewChunk {
        ordinal,
        text: text.into(),
        heading_path: vec!["Handbook".into(), "Leave".into()],
        page_start: Some(1),
        page_end: Some(2),
        char_start: 0,
        char_end: text.chars().count(),
        token_count: 3,
        text_hash: "h".into(),
    }
}

fn doc<'a>(
    source: SourceId,
    path: &'a str,
    hash: &'a str,
    chunks: &'a [NewChunk],
    tables: &'a [Table],
) -> NewDocument<'a> {
    NewDocument {
        parent: None,
        source,
        folder: None,
        path,
        kind: "text",
        content_hash: hash,
        size: 10,
        mtime_ns: Some(1),
        title: Some("T"),
        status: DocumentStatus::Indexed,
        note: None,
        page_count: None,
        encoding: Some("UTF-8"),
        meta: &crate::NO_META,
        text: "whole text",
        chunks,
        tables,
        original: None,
    }
}

#[test]
fn replace_keeps_id_and_swaps_chunks_atomically() {
    let mut store = Store::open_in_memory().unwrap();
    let src = store.files_source().unwrap();
    let v1 = [chunk(0, "old one"), chunk(1, "old two")];
    let id = store
        .replace_document(&doc(src, "/a.txt", "h1", &v1, &[]))
        .unwrap();
    let old_ids: Vec<ChunkId> = store
        .index_entries(id)
        .unwrap()
        .iter()
        .map(|e| e.chunk_id)
        .collect();
    assert_eq!(old_ids.len(), 2);
    store.mark_indexed(&[id]).unwrap();

    let v2 = [chunk(0, "new")];
    let id2 = store
        .replace_document(&doc(src, "/a.txt", "h2", &v2, &[]))
        .unwrap();
    assert_eq!(id, id2, "document id is stable across versions");
    let entries = store.index_entries(id).unwrap();
    assert_eq!(entries.len(), 1);
    assert!(
        !old_ids.contains(&entries[0].chunk_id),
        "chunk ids are never reused"
    );
    assert!(store.chunks(&old_ids).unwrap().is_empty());
    assert_eq!(store.pending_index_documents().unwrap(), vec![id]);
    let rec = store.document(id).unwrap().unwrap();
    assert_eq!(
        (rec.content_hash.as_deref(), rec.chunk_count),
        (Some("h2"), 1)
    );
}

#[test]
fn a_documents_people_and_date_are_kept_with_it_and_its_passages() {
    let mut store = Store::open_in_memory().unwrap();
    let src = store.files_source().unwrap();
    let meta = knowhub_parse::DocumentMeta {
        authors: vec!["张三 <zhang@example.com>".into()],
        recipients: vec!["hr@example.com".into()],
        date: Some("2026-09-01T09:30:00+08:00".into()),
    };
    let chunks = [chunk(0, "年假请在 9 月底前提交。")];
    let id = store
        .replace_document(&NewDocument {
            meta: &meta,
            ..doc(src, "/mail.eml", "h1", &chunks, &[])
        })
        .unwrap();
    assert_eq!(store.document(id).unwrap().unwrap().meta, meta);
    let ids: Vec<ChunkId> = store
        .index_entries(id)
        .unwrap()
        .iter()
        .map(|e| e.chunk_id)
        .collect();
    assert_eq!(store.chunks(&ids).unwrap()[0].meta, meta);
    assert_eq!(store.document_chunks(id).unwrap()[0].meta, meta);

    // A new version without any drops them; none is stored as NULL, not as `{}`.
    store
        .replace_document(&doc(src, "/mail.eml", "h2", &chunks, &[]))
        .unwrap();
    assert!(store.document(id).unwrap().unwrap().meta.is_empty());
    let raw: Option<String> = store
        .conn
        .query_row("SELECT meta FROM documents WHERE id = ?1", [id.0], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(raw, None);
}

#[test]
fn failure_keeps_previous_content() {
    let mut store = Store::open_in_memory().unwrap();
    let src = store.files_source().unwrap();
    let v1 = [chunk(0, "good")];
    let id = store
        .replace_document(&doc(src, "/a.pdf", "h1", &v1, &[]))
        .unwrap();
    store
        .record_failure(&FailedDocument {
            parent: None,
            source: src,
            folder: None,
            path: "/a.pdf",
            kind: Some("pdf"),
            size: 3,
            mtime_ns: None,
            title: None,
            status: DocumentStatus::Failed,
            code: "invalid",
            error: "not a valid PDF file",
        })
        .unwrap();
    let rec = store.document(id).unwrap().unwrap();
    assert_eq!(rec.status, "indexed");
    assert_eq!(rec.chunk_count, 1);
    assert_eq!(rec.content_hash.as_deref(), Some("h1"));
    assert!(rec.error.unwrap().contains("kept the previous version"));
    assert_eq!(store.failures(10).unwrap().len(), 1);
}

#[test]
fn remove_tombstones_and_drops_tables() {
    let mut store = Store::open_in_memory().unwrap();
    let src = store.files_source().unwrap();
    let table = Table {
        name: "Staff".into(),
        columns: vec![
            Column {
                name: "Name".into(),
                ty: ColumnType::Text,
            },
            Column {
                name: "Age".into(),
                ty: ColumnType::Integer,
            },
        ],
        rows: vec![
            vec![Cell::Text("Li".into()), Cell::Int(30)],
            vec![Cell::Text("Ann".into()), Cell::Null],
        ],
    };
    let chunks = [chunk(0, "Name: Li; Age: 30")];
    let id = store
        .replace_document(&doc(
            src,
            "/s.xlsx",
            "h",
            &chunks,
            std::slice::from_ref(&table),
        ))
        .unwrap();
    let tables = store.sheet_tables(id).unwrap();
    assert_eq!(tables.len(), 1);
    assert_eq!(store.sheet_table_rows(&tables[0].sql_name).unwrap(), 2);
    store.remove_document(id).unwrap();
    assert!(store.document(id).unwrap().is_none());
    assert_eq!(store.tombstones().unwrap(), vec![id]);
    assert!(
        store.sheet_table_rows(&tables[0].sql_name).is_err(),
        "table dropped"
    );
    assert_eq!(store.chunk_count().unwrap(), 0);
}

#[test]
fn attachments_keep_their_bytes_and_go_with_their_mail() {
    let mut store = Store::open_in_memory().unwrap();
    let src = store.files_source().unwrap();
    let chunks = [chunk(0, "Subject: rates")];
    let mail = store
        .replace_document(&doc(src, "/m.eml", "hm", &chunks, &[]))
        .unwrap();
    assert!(
        store.original_file(mail).unwrap().is_none(),
        "a file on disk"
    );
    let attached = NewDocument {
        parent: Some(mail),
        original: Some(b"# Rates"),
        ..doc(src, "/m.eml/rates.md", "hr", &chunks, &[])
    };
    let child = store.replace_document(&attached).unwrap();
    let grandchild = store
        .replace_document(&NewDocument {
            parent: Some(child),
            original: Some(b"inner"),
            ..doc(src, "/m.eml/rates.md/inner.txt", "hi", &chunks, &[])
        })
        .unwrap();
    let record = store.document(child).unwrap().unwrap();
    assert_eq!(record.parent, Some(mail));
    let family: Vec<DocumentId> = store
        .attachments(mail)
        .unwrap()
        .iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(family, [child, grandchild], "theirs included");
    assert!(store.attachments(grandchild).unwrap().is_empty());
    let mut kept = Vec::new();
    let original = store.original_file(child).unwrap().expect("kept");
    std::io::Read::read_to_end(&mut { original.reader }, &mut kept).unwrap();
    assert_eq!(kept, b"# Rates");
    let rows = store.access_rows().unwrap();
    assert_eq!(
        rows.iter().map(|r| (r.id, r.parent)).collect::<Vec<_>>(),
        [(mail, None), (child, Some(mail)), (grandchild, Some(child))]
    );

    store.remove_document(mail).unwrap();
    for id in [mail, child, grandchild] {
        assert!(store.document(id).unwrap().is_none());
    }
    let mut gone = store.tombstones().unwrap();
    gone.sort();
    assert_eq!(gone, [mail, child, grandchild]);
    assert!(store.original_file(child).unwrap().is_none());
}

#[test]
fn folders_and_prefix_listing() {
    let mut store = Store::open_in_memory().unwrap();
    let src = store.folder_source("/data/kb", "kb").unwrap();
    assert_eq!(store.folder_source("/data/kb", "kb").unwrap(), src);
    let f1 = store.ensure_folder(src, "a/b").unwrap();
    assert_eq!(store.ensure_folder(src, "a/b").unwrap(), f1);
    let c = [chunk(0, "x")];
    store
        .replace_document(&doc(src, "/data/kb/a/b/x.txt", "1", &c, &[]))
        .unwrap();
    store
        .replace_document(&doc(src, "/data/kb2/y.txt", "2", &c, &[]))
        .unwrap();
    let under: Vec<_> = store
        .documents(Some("/data/kb"))
        .unwrap()
        .into_iter()
        .map(|d| d.path)
        .collect();
    assert_eq!(under, vec!["/data/kb/a/b/x.txt"]);
}

#[test]
fn reopening_applies_no_migration_twice_and_detects_edits() {
    let dir = tempfile::tempdir().unwrap();
    let (db, tables) = (dir.path().join("s.sqlite"), dir.path().join("t.sqlite"));
    {
        let mut store = Store::open(&db, &tables).unwrap();
        let src = store.files_source().unwrap();
        store
            .replace_document(&doc(src, "/a", "h", &[chunk(0, "x")], &[]))
            .unwrap();
    }
    let store = Store::open(&db, &tables).unwrap();
    assert_eq!(store.stats().unwrap().documents, 1);
    store
        .conn
        .execute("UPDATE migrations SET sql = 'edited' WHERE step = 0", [])
        .unwrap();
    drop(store);
    assert!(matches!(
        Store::open(&db, &tables),
        Err(StoreError::MigrationEdited { .. })
    ));
}

#[test]
fn vectors_follow_their_chunks_and_their_model() {
    let mut store = Store::open_in_memory().unwrap();
    let src = store.files_source().unwrap();
    let v1 = [chunk(0, "one"), chunk(1, "two")];
    let id = store
        .replace_document(&doc(src, "/a.txt", "h1", &v1, &[]))
        .unwrap();
    let pending = store.unembedded_chunks("m1", 10).unwrap();
    assert_eq!(pending.len(), 2);
    assert_eq!(pending[0].title, "T");
    assert_eq!(pending[0].heading_path, vec!["Handbook", "Leave"]);
    let vectors: Vec<StoredVector> = pending
        .iter()
        .map(|c| StoredVector {
            chunk_id: c.chunk_id,
            document_id: c.document_id,
            vector: vec![0.6, 0.8],
        })
        .collect();
    assert_eq!(store.put_vectors("m1", &vectors).unwrap(), 2);
    assert_eq!(store.unembedded_count("m1").unwrap(), 0);
    assert_eq!(store.unembedded_count("m2").unwrap(), 2);
    let loaded = store.document_vectors("m1", id).unwrap();
    assert_eq!(loaded.len(), 2);
    assert!((loaded[0].vector[1] - 0.8).abs() < 1e-3);

    // A new version of the document drops the old chunks and, by cascade, their vectors;
    // vectors for chunks that vanished meanwhile are not stored.
    let v2 = [chunk(0, "three")];
    store
        .replace_document(&doc(src, "/a.txt", "h2", &v2, &[]))
        .unwrap();
    assert_eq!(store.vector_count("m1").unwrap(), 0);
    assert_eq!(store.put_vectors("m1", &vectors).unwrap(), 0);
    assert_eq!(store.unembedded_count("m1").unwrap(), 1);

    // A model change: vectors of the other model go.
    let fresh = store.unembedded_chunks("m1", 10).unwrap();
    let v = StoredVector {
        chunk_id: fresh[0].chunk_id,
        document_id: id,
        vector: vec![1.0, 0.0],
    };
    store.put_vectors("m1", std::slice::from_ref(&v)).unwrap();
    assert_eq!(store.delete_vectors_except("m2").unwrap(), 1);
    assert_eq!(store.vector_count("m1").unwrap(), 0);
    // One vector per chunk: a new model's vector replaces the old one.
    store.put_vectors("m1", std::slice::from_ref(&v)).unwrap();
    store.put_vectors("m2", &[v]).unwrap();
    assert_eq!(store.vector_count("m1").unwrap(), 0);
    let mut seen = 0;
    store
        .for_each_vector("m2", |_| {
            seen += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(seen, 1);

    // Removing the document removes its vectors.
    store.remove_document(id).unwrap();
    assert_eq!(store.vector_count("m2").unwrap(), 0);
}
