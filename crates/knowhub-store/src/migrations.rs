//! Append-only schema migrations, grouped by domain.
//!
//! Each domain owns an ordered list of steps. A step, once released, is never edited or
//! removed: the text of every applied step is recorded, and opening a store whose recorded step
//! differs from the code's fails loudly instead of silently diverging. New schema = new step.

use rusqlite::{Connection, OptionalExtension, params};

use crate::StoreError;

/// (domain, steps). Add steps at the end of a domain, or add a new domain at the end.
pub(crate) const MIGRATIONS: &[(&str, &[&str])] = &[
    (
        "documents",
        &[r#"
CREATE TABLE sources (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    kind        TEXT NOT NULL CHECK (kind IN ('folder', 'files')),
    root_path   TEXT UNIQUE,
    name        TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE TABLE folders (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    source_id   INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    rel_path    TEXT NOT NULL,
    parent_id   INTEGER REFERENCES folders(id) ON DELETE CASCADE,
    UNIQUE (source_id, rel_path)
);
CREATE TABLE documents (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    source_id       INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    folder_id       INTEGER REFERENCES folders(id) ON DELETE SET NULL,
    path            TEXT NOT NULL UNIQUE,
    kind            TEXT,
    content_hash    TEXT,
    size            INTEGER NOT NULL,
    mtime_ns        INTEGER,
    title           TEXT,
    status          TEXT NOT NULL,
    error_code      TEXT,
    error           TEXT,
    page_count      INTEGER,
    encoding        TEXT,
    chunk_count     INTEGER NOT NULL DEFAULT 0,
    index_state     TEXT NOT NULL DEFAULT 'clean' CHECK (index_state IN ('clean', 'pending')),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX documents_status ON documents(status);
CREATE INDEX documents_index_state ON documents(index_state) WHERE index_state = 'pending';
CREATE TABLE document_text (
    document_id INTEGER PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
    text        TEXT NOT NULL
);
CREATE TABLE chunks (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id   INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ordinal       INTEGER NOT NULL,
    text          TEXT NOT NULL,
    heading_path  TEXT NOT NULL,
    page_start    INTEGER,
    page_end      INTEGER,
    char_start    INTEGER NOT NULL,
    char_end      INTEGER NOT NULL,
    token_count   INTEGER NOT NULL,
    text_hash     TEXT NOT NULL,
    UNIQUE (document_id, ordinal)
);
CREATE TABLE index_tombstones (
    document_id INTEGER PRIMARY KEY
);
CREATE TABLE ingest_journal (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id       TEXT NOT NULL,
    path         TEXT NOT NULL,
    document_id  INTEGER,
    action       TEXT NOT NULL,
    detail       TEXT,
    duration_ms  INTEGER,
    at           INTEGER NOT NULL
);
CREATE INDEX ingest_journal_run ON ingest_journal(run_id);
CREATE TABLE sheet_tables (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id  INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    sheet_name   TEXT NOT NULL,
    sql_name     TEXT NOT NULL UNIQUE,
    columns      TEXT NOT NULL,
    row_count    INTEGER NOT NULL
);
"#],
    ),
    (
        "vectors",
        &[r#"
CREATE TABLE chunk_vectors (
    chunk_id     INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
    document_id  INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    model        TEXT NOT NULL,
    dim          INTEGER NOT NULL,
    vector       BLOB NOT NULL
);
CREATE INDEX chunk_vectors_model ON chunk_vectors(model, document_id);
"#],
    ),
    (
        "identity",
        &[r#"
CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    display_name  TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('ROOT', 'ADMIN', 'USER')),
    created_at    INTEGER NOT NULL,
    removed_at    INTEGER
);
CREATE TABLE memberships (
    user_id   TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    kind      TEXT NOT NULL CHECK (kind IN ('team', 'project', 'org')),
    group_id  TEXT NOT NULL,
    PRIMARY KEY (user_id, kind, group_id)
);
CREATE TABLE api_keys (
    hash        TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at  INTEGER NOT NULL,
    label       TEXT NOT NULL
);
CREATE INDEX api_keys_user ON api_keys(user_id);
CREATE TABLE acl_entries (
    source_id  INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('folder', 'document')),
    path       TEXT NOT NULL,
    scopes     TEXT NOT NULL,
    PRIMARY KEY (source_id, kind, path)
);
CREATE TABLE acl_version (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    version  INTEGER NOT NULL
);
INSERT INTO acl_version (id, version) VALUES (1, 0);
CREATE TRIGGER acl_entries_insert AFTER INSERT ON acl_entries
BEGIN UPDATE acl_version SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER acl_entries_update AFTER UPDATE ON acl_entries
BEGIN UPDATE acl_version SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER acl_entries_delete AFTER DELETE ON acl_entries
BEGIN UPDATE acl_version SET version = version + 1 WHERE id = 1; END;
"#],
    ),
    (
        "access",
        &[r#"
ALTER TABLE sources ADD COLUMN owner TEXT;
ALTER TABLE documents ADD COLUMN owner TEXT;
CREATE TABLE doc_version (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    version  INTEGER NOT NULL
);
INSERT INTO doc_version (id, version) VALUES (1, 0);
CREATE TRIGGER documents_version_insert AFTER INSERT ON documents
BEGIN UPDATE doc_version SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER documents_version_delete AFTER DELETE ON documents
BEGIN UPDATE doc_version SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER documents_version_update AFTER UPDATE OF path, source_id, owner ON documents
WHEN OLD.path IS NOT NEW.path OR OLD.source_id IS NOT NEW.source_id
    OR OLD.owner IS NOT NEW.owner
BEGIN UPDATE doc_version SET version = version + 1 WHERE id = 1; END;
CREATE TABLE audit_log (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    at            INTEGER NOT NULL,
    trace_id      TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    agent_id      TEXT,
    role          TEXT NOT NULL,
    action        TEXT NOT NULL,
    target        TEXT NOT NULL,
    snapshot      TEXT NOT NULL,
    outcome       TEXT NOT NULL,
    allowed       INTEGER NOT NULL,
    filtered      INTEGER NOT NULL,
    evidence      TEXT NOT NULL
);
CREATE INDEX audit_log_user ON audit_log(user_id, id);
"#],
    ),
    (
        "watch",
        &[r#"
ALTER TABLE sources ADD COLUMN watched INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sources ADD COLUMN rules TEXT NOT NULL DEFAULT '{}';
CREATE INDEX documents_content_hash ON documents(content_hash);
CREATE TABLE jobs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    path        TEXT NOT NULL,
    owner       TEXT NOT NULL,
    priority    INTEGER NOT NULL,
    state       TEXT NOT NULL
                CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    attempts    INTEGER NOT NULL DEFAULT 0,
    not_before  INTEGER NOT NULL DEFAULT 0,
    outcome     TEXT,
    error       TEXT,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE UNIQUE INDEX jobs_queued_path ON jobs(path) WHERE state = 'queued';
CREATE INDEX jobs_next ON jobs(state, priority, not_before, id);
CREATE TABLE queue_control (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    paused  INTEGER NOT NULL
);
INSERT INTO queue_control (id, paused) VALUES (1, 0);
"#],
    ),
    (
        "chat",
        &[
            r#"
CREATE TABLE chat_sessions (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    title       TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX chat_sessions_user ON chat_sessions(user_id, updated_at);
CREATE TABLE chat_turns (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id   TEXT NOT NULL REFERENCES chat_sessions(id) ON DELETE CASCADE,
    question     TEXT NOT NULL,
    standalone   TEXT NOT NULL,
    answer       TEXT NOT NULL,
    trace_id     TEXT NOT NULL,
    stop_reason  TEXT NOT NULL,
    created_at   INTEGER NOT NULL
);
CREATE INDEX chat_turns_session ON chat_turns(session_id, id);
CREATE TABLE agent_traces (
    id                 TEXT PRIMARY KEY,
    session_id         TEXT,
    user_id            TEXT NOT NULL,
    question           TEXT NOT NULL,
    route              TEXT NOT NULL,
    stop_reason        TEXT NOT NULL,
    total_ms           INTEGER NOT NULL,
    prompt_tokens      INTEGER NOT NULL,
    completion_tokens  INTEGER NOT NULL,
    state              TEXT NOT NULL,
    created_at         INTEGER NOT NULL
);
CREATE INDEX agent_traces_user ON agent_traces(user_id, created_at);
CREATE TABLE sql_sources (
    name           TEXT PRIMARY KEY,
    path           TEXT NOT NULL,
    scopes         TEXT NOT NULL,
    tenant_column  TEXT,
    owner          TEXT NOT NULL,
    created_at     INTEGER NOT NULL
);
"#,
            r#"
CREATE TABLE answer_feedback (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    trace_id      TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    helpful       INTEGER NOT NULL,
    note          TEXT NOT NULL,
    evidence_ids  TEXT NOT NULL,
    created_at    INTEGER NOT NULL
);
CREATE INDEX answer_feedback_trace ON answer_feedback(trace_id, id);
"#,
            r#"
CREATE TABLE chat_summaries (
    session_id    TEXT PRIMARY KEY REFERENCES chat_sessions(id) ON DELETE CASCADE,
    through_turn  INTEGER NOT NULL,
    summary       TEXT NOT NULL,
    by_model      TEXT,
    updated_at    INTEGER NOT NULL
);
"#,
        ],
    ),
    (
        "knowledge",
        &[r#"
CREATE TABLE knowledge_items (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT NOT NULL UNIQUE,
    message_id       TEXT NOT NULL,
    types            TEXT NOT NULL,
    task             TEXT NOT NULL,
    tags             TEXT NOT NULL,
    scopes           TEXT NOT NULL,
    owner            TEXT NOT NULL,
    content          TEXT NOT NULL,
    resource_ids     TEXT NOT NULL,
    source           TEXT NOT NULL,
    score            INTEGER NOT NULL CHECK (score BETWEEN 1 AND 5),
    helpful          INTEGER NOT NULL DEFAULT 0,
    harmful          INTEGER NOT NULL DEFAULT 0,
    confidence       REAL NOT NULL,
    helpful_history  TEXT NOT NULL,
    harmful_history  TEXT NOT NULL,
    rev              INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);
CREATE INDEX knowledge_items_owner ON knowledge_items(owner);
CREATE TABLE knowledge_versions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    item_seq     INTEGER NOT NULL REFERENCES knowledge_items(seq) ON DELETE CASCADE,
    reason       TEXT NOT NULL,
    task         TEXT NOT NULL,
    content      TEXT NOT NULL,
    snapshot     TEXT NOT NULL,
    created_at   INTEGER NOT NULL
);
CREATE INDEX knowledge_versions_item ON knowledge_versions(item_seq, id);
CREATE TABLE knowledge_vectors (
    item_seq  INTEGER PRIMARY KEY REFERENCES knowledge_items(seq) ON DELETE CASCADE,
    model     TEXT NOT NULL,
    rev       INTEGER NOT NULL,
    dim       INTEGER NOT NULL,
    vector    BLOB NOT NULL
);
CREATE TABLE knowledge_version (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    version  INTEGER NOT NULL
);
INSERT INTO knowledge_version (id, version) VALUES (1, 0);
CREATE TRIGGER knowledge_items_version_insert AFTER INSERT ON knowledge_items
BEGIN UPDATE knowledge_version SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER knowledge_items_version_delete AFTER DELETE ON knowledge_items
BEGIN UPDATE knowledge_version SET version = version + 1 WHERE id = 1; END;
CREATE TRIGGER knowledge_items_version_update AFTER UPDATE OF rev ON knowledge_items
WHEN OLD.rev IS NOT NEW.rev
BEGIN UPDATE knowledge_version SET version = version + 1 WHERE id = 1; END;
"#],
    ),
    (
        "resources",
        &[r#"
CREATE TABLE resources (
    seq                INTEGER PRIMARY KEY AUTOINCREMENT,
    id                 TEXT NOT NULL UNIQUE,
    content_type       TEXT NOT NULL,
    title              TEXT NOT NULL,
    description        TEXT NOT NULL,
    owner              TEXT NOT NULL,
    scopes             TEXT NOT NULL,
    tags               TEXT NOT NULL,
    metadata           TEXT NOT NULL,
    body               TEXT NOT NULL,
    secure_key_id      TEXT,
    secure_nonce       BLOB,
    secure_ciphertext  BLOB,
    expires_at         INTEGER,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    CHECK ((secure_key_id IS NULL) = (secure_nonce IS NULL)
       AND (secure_nonce IS NULL) = (secure_ciphertext IS NULL))
);
CREATE INDEX resources_owner ON resources(owner);
"#],
    ),
    (
        "groups",
        &[r#"
CREATE TABLE group_spaces (
    id          TEXT PRIMARY KEY,
    space       TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('channel', 'chat', 'project')),
    created_by  TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE TABLE group_members (
    group_id   TEXT NOT NULL REFERENCES group_spaces(id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    agent_id   TEXT,
    role       TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'readonly')),
    joined_at  INTEGER NOT NULL,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX group_members_user ON group_members(user_id);
"#],
    ),
    (
        "crawls",
        &[
            r#"
CREATE TABLE crawls (
    source_id   INTEGER PRIMARY KEY REFERENCES sources(id) ON DELETE CASCADE,
    url         TEXT NOT NULL UNIQUE,
    settings    TEXT NOT NULL,
    last_run    INTEGER,
    last_report TEXT
);
CREATE TABLE crawl_pages (
    source_id     INTEGER NOT NULL REFERENCES crawls(source_id) ON DELETE CASCADE,
    url           TEXT NOT NULL,
    path          TEXT NOT NULL,
    etag          TEXT,
    last_modified TEXT,
    content_hash  TEXT NOT NULL,
    extension     TEXT NOT NULL,
    fetched_at    INTEGER NOT NULL,
    PRIMARY KEY (source_id, url)
);
CREATE INDEX crawl_pages_path ON crawl_pages(path);
"#,
            r#"
ALTER TABLE crawl_pages ADD COLUMN anchors TEXT NOT NULL DEFAULT '[]';
"#,
        ],
    ),
    (
        "attachments",
        &[r#"
ALTER TABLE documents ADD COLUMN parent_id INTEGER REFERENCES documents(id) ON DELETE CASCADE;
CREATE INDEX documents_parent ON documents(parent_id) WHERE parent_id IS NOT NULL;
CREATE TABLE attachment_files (
    document_id INTEGER PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
    data        BLOB NOT NULL
);
"#],
    ),
    (
        "metadata",
        // A document's people and date (`knowhub_parse::DocumentMeta`) as JSON; NULL when
        // its format records none.
        &[r#"
ALTER TABLE documents ADD COLUMN meta TEXT;
"#],
    ),
];

pub(crate) fn run(conn: &mut Connection) -> Result<(), StoreError> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS migrations (
            domain TEXT NOT NULL, step INTEGER NOT NULL, sql TEXT NOT NULL, applied_at INTEGER NOT NULL,
            PRIMARY KEY (domain, step))",
    )?;
    for (domain, steps) in MIGRATIONS {
        for (step, sql) in steps.iter().enumerate() {
            let recorded: Option<String> = conn
                .query_row(
                    "SELECT sql FROM migrations WHERE domain = ?1 AND step = ?2",
                    params![domain, step as i64],
                    |r| r.get(0),
                )
                .optional()?;
            match recorded {
                Some(text) if text == *sql => {}
                Some(_) => {
                    return Err(StoreError::MigrationEdited {
                        domain: (*domain).to_string(),
                        step,
                    });
                }
                None => {
                    let tx = conn.transaction()?;
                    tx.execute_batch(sql)?;
                    tx.execute(
                        "INSERT INTO migrations (domain, step, sql, applied_at) VALUES (?1, ?2, ?3, ?4)",
                        params![domain, step as i64, sql, crate::now_ms()],
                    )?;
                    tx.commit()?;
                }
            }
        }
    }
    Ok(())
}
