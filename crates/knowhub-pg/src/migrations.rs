//! Append-only schema migrations per domain, as in the SQLite store.
//!
//! A released step is never edited: the text of each applied step is recorded, a recorded step
//! that differs from this build's fails loudly, and a database with steps (or domains) this
//! build does not know was migrated by a newer KnowHub, which this binary refuses to serve.
//! Replicas starting together serialise on an advisory lock; all steps run in one transaction
//! (PostgreSQL's DDL is transactional), so a failed upgrade leaves the schema as it was.

use postgres::{Client, Transaction};

use crate::{PgError, Result};

/// One domain's ordered steps. Add steps at the end, or new domains at the end of [`DOMAINS`].
#[derive(Debug, Clone, Copy)]
pub struct Domain {
    pub name: &'static str,
    pub steps: &'static [&'static str],
}

/// Every domain of the team store, in the order they are applied.
pub const DOMAINS: &[Domain] = &[
    Domain {
        name: "vectors",
        steps: &[r#"
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE vector_models (
    id    SERIAL PRIMARY KEY,
    name  TEXT NOT NULL UNIQUE,
    dim   INTEGER NOT NULL CHECK (dim BETWEEN 1 AND 4000)
);
CREATE TABLE chunk_vectors (
    chunk_id   BIGINT NOT NULL,
    model_id   INTEGER NOT NULL REFERENCES vector_models(id) ON DELETE CASCADE,
    doc_id     BIGINT NOT NULL,
    embedding  HALFVEC NOT NULL,
    PRIMARY KEY (model_id, chunk_id)
);
CREATE INDEX chunk_vectors_doc ON chunk_vectors (model_id, doc_id);
"#],
    },
    Domain {
        name: "documents",
        steps: &[
            r#"
CREATE TABLE sources (
    id          BIGSERIAL PRIMARY KEY,
    kind        TEXT NOT NULL CHECK (kind IN ('folder', 'files')),
    root_path   TEXT UNIQUE,
    name        TEXT NOT NULL,
    owner       TEXT,
    watched     BOOLEAN NOT NULL DEFAULT false,
    rules       TEXT NOT NULL DEFAULT '{}',
    created_at  BIGINT NOT NULL
);
CREATE UNIQUE INDEX sources_single_files ON sources (kind) WHERE kind = 'files';
CREATE TABLE folders (
    id          BIGSERIAL PRIMARY KEY,
    source_id   BIGINT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    rel_path    TEXT NOT NULL,
    parent_id   BIGINT REFERENCES folders(id) ON DELETE CASCADE,
    UNIQUE (source_id, rel_path)
);
CREATE TABLE documents (
    id              BIGSERIAL PRIMARY KEY,
    source_id       BIGINT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    folder_id       BIGINT REFERENCES folders(id) ON DELETE SET NULL,
    path            TEXT NOT NULL UNIQUE,
    kind            TEXT,
    content_hash    TEXT,
    size            BIGINT NOT NULL,
    mtime_ns        BIGINT,
    title           TEXT,
    status          TEXT NOT NULL,
    error_code      TEXT,
    error           TEXT,
    page_count      BIGINT,
    encoding        TEXT,
    chunk_count     BIGINT NOT NULL DEFAULT 0,
    index_state     TEXT NOT NULL DEFAULT 'clean' CHECK (index_state IN ('clean', 'pending')),
    owner           TEXT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX documents_source ON documents (source_id);
CREATE TABLE document_text (
    document_id BIGINT PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
    text        TEXT NOT NULL
);
CREATE TABLE chunks (
    id            BIGSERIAL PRIMARY KEY,
    document_id   BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ordinal       BIGINT NOT NULL,
    text          TEXT NOT NULL,
    heading_path  TEXT NOT NULL,
    page_start    BIGINT,
    page_end      BIGINT,
    char_start    BIGINT NOT NULL,
    char_end      BIGINT NOT NULL,
    token_count   BIGINT NOT NULL,
    text_hash     TEXT NOT NULL,
    UNIQUE (document_id, ordinal)
);
CREATE SEQUENCE document_change_seq;
CREATE TABLE document_changes (
    seq          BIGINT PRIMARY KEY,
    document_id  BIGINT NOT NULL,
    changed_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);
"#,
            r#"
CREATE TABLE ingest_journal (
    id           BIGSERIAL PRIMARY KEY,
    run_id       TEXT NOT NULL,
    path         TEXT NOT NULL,
    document_id  BIGINT,
    action       TEXT NOT NULL,
    detail       TEXT,
    duration_ms  BIGINT,
    at           BIGINT NOT NULL
);
CREATE INDEX ingest_journal_run ON ingest_journal (run_id);
CREATE INDEX documents_content_hash ON documents (content_hash);
CREATE TABLE doc_version (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    version  BIGINT NOT NULL
);
INSERT INTO doc_version (id, version) VALUES (1, 0);
CREATE FUNCTION bump_doc_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE doc_version SET version = version + 1 WHERE id = 1;
    RETURN NULL;
END $$;
CREATE TRIGGER documents_added AFTER INSERT OR DELETE ON documents
    FOR EACH STATEMENT EXECUTE FUNCTION bump_doc_version();
CREATE TRIGGER documents_moved AFTER UPDATE OF path, source_id, owner ON documents
    FOR EACH ROW WHEN (OLD.path IS DISTINCT FROM NEW.path
        OR OLD.source_id IS DISTINCT FROM NEW.source_id OR OLD.owner IS DISTINCT FROM NEW.owner)
    EXECUTE FUNCTION bump_doc_version();
"#,
            r#"
CREATE INDEX document_changes_document ON document_changes (document_id, seq);
CREATE TABLE change_log_state (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    horizon  BIGINT NOT NULL,
    log_id   TEXT NOT NULL
);
INSERT INTO change_log_state (id, horizon, log_id)
    VALUES (1, 0, md5(random()::text || clock_timestamp()::text));
"#,
            r#"
CREATE TABLE document_files (
    document_id   BIGINT PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
    content_hash  TEXT NOT NULL,
    size          BIGINT NOT NULL CHECK (size >= 0),
    parts         INTEGER NOT NULL CHECK (parts >= 0)
);
CREATE TABLE document_file_parts (
    document_id  BIGINT NOT NULL REFERENCES document_files(document_id) ON DELETE CASCADE,
    part         INTEGER NOT NULL,
    data         BYTEA NOT NULL,
    PRIMARY KEY (document_id, part)
);
"#,
        ],
    },
    Domain {
        name: "identity",
        steps: &[r#"
CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    display_name  TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('ROOT', 'ADMIN', 'USER')),
    created_at    BIGINT NOT NULL,
    removed_at    BIGINT
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
    created_at  BIGINT NOT NULL,
    label       TEXT NOT NULL
);
CREATE INDEX api_keys_user ON api_keys (user_id);
CREATE TABLE acl_entries (
    source_id  BIGINT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('folder', 'document')),
    path       TEXT NOT NULL,
    scopes     TEXT NOT NULL,
    PRIMARY KEY (source_id, kind, path)
);
-- One counter for everything a permission decision reads; row triggers, so a statement that
-- changes no row leaves it alone.
CREATE TABLE permission_version (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    version  BIGINT NOT NULL
);
INSERT INTO permission_version (id, version) VALUES (1, 0);
CREATE FUNCTION bump_permission_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE permission_version SET version = version + 1 WHERE id = 1;
    RETURN NULL;
END
$$;
CREATE TRIGGER acl_entries_changed AFTER INSERT OR UPDATE OR DELETE ON acl_entries
    FOR EACH ROW EXECUTE FUNCTION bump_permission_version();
CREATE TRIGGER memberships_changed AFTER INSERT OR UPDATE OR DELETE ON memberships
    FOR EACH ROW EXECUTE FUNCTION bump_permission_version();
CREATE TRIGGER api_keys_changed AFTER INSERT OR UPDATE OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION bump_permission_version();
CREATE TRIGGER users_changed AFTER UPDATE ON users FOR EACH ROW
    WHEN (OLD.role IS DISTINCT FROM NEW.role OR OLD.removed_at IS DISTINCT FROM NEW.removed_at)
    EXECUTE FUNCTION bump_permission_version();
CREATE TRIGGER users_deleted AFTER DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION bump_permission_version();
"#],
    },
    Domain {
        name: "jobs",
        steps: &[
            r#"
CREATE TABLE jobs (
    id           BIGSERIAL PRIMARY KEY,
    path         TEXT NOT NULL,
    owner        TEXT NOT NULL,
    priority     BIGINT NOT NULL,
    state        TEXT NOT NULL
                 CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    attempts     BIGINT NOT NULL DEFAULT 0,
    not_before   BIGINT NOT NULL DEFAULT 0,
    outcome      TEXT,
    error        TEXT,
    claimed_by   TEXT,
    lease_until  BIGINT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    CHECK ((state = 'running') = (claimed_by IS NOT NULL AND lease_until IS NOT NULL))
);
CREATE UNIQUE INDEX jobs_queued_path ON jobs (path) WHERE state = 'queued';
CREATE INDEX jobs_next ON jobs (priority, id) WHERE state = 'queued';
CREATE INDEX jobs_leases ON jobs (lease_until) WHERE state = 'running';
CREATE TABLE queue_control (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    paused  BOOLEAN NOT NULL
);
INSERT INTO queue_control (id, paused) VALUES (1, false);
"#,
            r#"
ALTER TABLE jobs ADD COLUMN origin TEXT;
"#,
        ],
    },
    Domain {
        name: "chat",
        // Keys that results are ordered by are `COLLATE "C"`: byte order, as SQLite sorts
        // them, whatever the database's locale.
        steps: &[r#"
CREATE TABLE chat_sessions (
    id          TEXT COLLATE "C" PRIMARY KEY,
    user_id     TEXT NOT NULL,
    title       TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX chat_sessions_user ON chat_sessions (user_id, updated_at DESC, id);
CREATE TABLE chat_turns (
    id           BIGSERIAL PRIMARY KEY,
    session_id   TEXT COLLATE "C" NOT NULL REFERENCES chat_sessions(id) ON DELETE CASCADE,
    question     TEXT NOT NULL,
    standalone   TEXT NOT NULL,
    answer       TEXT NOT NULL,
    trace_id     TEXT NOT NULL,
    stop_reason  TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX chat_turns_session ON chat_turns (session_id, id);
CREATE TABLE chat_summaries (
    session_id    TEXT COLLATE "C" PRIMARY KEY
                  REFERENCES chat_sessions(id) ON DELETE CASCADE,
    through_turn  BIGINT NOT NULL,
    summary       TEXT NOT NULL,
    by_model      TEXT,
    updated_at    BIGINT NOT NULL
);
CREATE TABLE agent_traces (
    id                 TEXT COLLATE "C" PRIMARY KEY,
    session_id         TEXT,
    user_id            TEXT NOT NULL,
    question           TEXT NOT NULL,
    route              TEXT NOT NULL,
    stop_reason        TEXT NOT NULL,
    total_ms           BIGINT NOT NULL,
    prompt_tokens      BIGINT NOT NULL,
    completion_tokens  BIGINT NOT NULL,
    state              TEXT NOT NULL,
    created_at         BIGINT NOT NULL
);
CREATE INDEX agent_traces_user ON agent_traces (user_id, created_at DESC, id);
CREATE INDEX agent_traces_created ON agent_traces (created_at DESC, id);
CREATE TABLE answer_feedback (
    id            BIGSERIAL PRIMARY KEY,
    trace_id      TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    helpful       BOOLEAN NOT NULL,
    note          TEXT NOT NULL,
    evidence_ids  TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);
CREATE INDEX answer_feedback_trace ON answer_feedback (trace_id, user_id, id);
CREATE TABLE sql_sources (
    name           TEXT COLLATE "C" PRIMARY KEY,
    path           TEXT NOT NULL,
    scopes         TEXT NOT NULL,
    tenant_column  TEXT,
    owner          TEXT NOT NULL,
    created_at     BIGINT NOT NULL
);
"#],
    },
    Domain {
        name: "audit",
        steps: &[r#"
CREATE TABLE audit_log (
    id        BIGSERIAL PRIMARY KEY,
    at        BIGINT NOT NULL,
    trace_id  TEXT NOT NULL,
    user_id   TEXT NOT NULL,
    agent_id  TEXT,
    role      TEXT NOT NULL,
    action    TEXT NOT NULL,
    target    TEXT NOT NULL,
    snapshot  TEXT NOT NULL,
    outcome   TEXT NOT NULL,
    allowed   BIGINT NOT NULL,
    filtered  BIGINT NOT NULL,
    evidence  TEXT NOT NULL
);
CREATE INDEX audit_log_user ON audit_log (user_id, id);
"#],
    },
    Domain {
        name: "system",
        steps: &[r#"
CREATE TABLE system_keys (
    name  TEXT PRIMARY KEY,
    hash  TEXT NOT NULL
);
"#],
    },
    Domain {
        name: "knowledge",
        steps: &[r#"
CREATE TABLE knowledge_items (
    seq              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
    message_id       TEXT NOT NULL,
    types            JSONB NOT NULL,
    task             TEXT NOT NULL,
    tags             JSONB NOT NULL,
    scopes           JSONB NOT NULL,
    owner            TEXT NOT NULL,
    content          TEXT NOT NULL,
    resource_ids     TEXT NOT NULL,
    source           TEXT NOT NULL,
    score            BIGINT NOT NULL CHECK (score BETWEEN 1 AND 5),
    helpful          BIGINT NOT NULL DEFAULT 0,
    harmful          BIGINT NOT NULL DEFAULT 0,
    -- SQLite stores NaN as NULL, which NOT NULL refuses there.
    confidence       DOUBLE PRECISION NOT NULL CHECK (confidence <> 'NaN'),
    helpful_history  TEXT NOT NULL,
    harmful_history  TEXT NOT NULL,
    rev              BIGINT NOT NULL DEFAULT 0,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);
CREATE INDEX knowledge_items_owner ON knowledge_items (owner);
CREATE INDEX knowledge_items_scopes ON knowledge_items USING gin (scopes);
CREATE TABLE knowledge_versions (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item_seq    BIGINT NOT NULL REFERENCES knowledge_items(seq) ON DELETE CASCADE,
    reason      TEXT NOT NULL,
    task        TEXT NOT NULL,
    content     TEXT NOT NULL,
    snapshot    TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX knowledge_versions_item ON knowledge_versions (item_seq, id);
-- f16 little-endian, as in SQLite: few rows, scanned whole by the engine.
CREATE TABLE knowledge_vectors (
    item_seq  BIGINT PRIMARY KEY REFERENCES knowledge_items(seq) ON DELETE CASCADE,
    model     TEXT NOT NULL,
    rev       BIGINT NOT NULL,
    dim       BIGINT NOT NULL,
    vector    BYTEA NOT NULL
);
-- Bumped by row triggers in the writing transaction: inserts, deletes and text (rev) changes.
CREATE TABLE knowledge_version (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    version  BIGINT NOT NULL
);
INSERT INTO knowledge_version (id, version) VALUES (1, 0);
CREATE FUNCTION bump_knowledge_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE knowledge_version SET version = version + 1 WHERE id = 1;
    RETURN NULL;
END
$$;
CREATE TRIGGER knowledge_items_added_or_deleted AFTER INSERT OR DELETE ON knowledge_items
    FOR EACH ROW EXECUTE FUNCTION bump_knowledge_version();
CREATE TRIGGER knowledge_items_rev_changed AFTER UPDATE OF rev ON knowledge_items
    FOR EACH ROW WHEN (OLD.rev IS DISTINCT FROM NEW.rev)
    EXECUTE FUNCTION bump_knowledge_version();
"#],
    },
    Domain {
        name: "resources",
        steps: &[r#"
CREATE TABLE resources (
    seq                BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id                 TEXT NOT NULL UNIQUE,
    content_type       TEXT NOT NULL,
    title              TEXT NOT NULL,
    description        TEXT NOT NULL,
    owner              TEXT NOT NULL,
    scopes             JSONB NOT NULL,
    tags               JSONB NOT NULL,
    metadata           TEXT NOT NULL,
    body               TEXT NOT NULL,
    secure_key_id      TEXT,
    secure_nonce       BYTEA,
    secure_ciphertext  BYTEA,
    expires_at         BIGINT,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    CHECK ((secure_key_id IS NULL) = (secure_nonce IS NULL)
       AND (secure_nonce IS NULL) = (secure_ciphertext IS NULL))
);
CREATE INDEX resources_owner ON resources (owner);
CREATE INDEX resources_scopes ON resources USING gin (scopes);
"#],
    },
    Domain {
        name: "groups",
        steps: &[r#"
CREATE TABLE group_spaces (
    id          TEXT PRIMARY KEY,
    space       TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('channel', 'chat', 'project')),
    created_by  TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE TABLE group_members (
    group_id   TEXT NOT NULL REFERENCES group_spaces(id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    agent_id   TEXT,
    role       TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'readonly')),
    joined_at  BIGINT NOT NULL,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX group_members_user ON group_members (user_id);
-- Group membership and roles are permission inputs (identity's counter); a write that changes
-- nothing (the same role again) leaves the counter alone.
CREATE TRIGGER group_members_added_or_removed AFTER INSERT OR DELETE ON group_members
    FOR EACH ROW EXECUTE FUNCTION bump_permission_version();
CREATE TRIGGER group_members_changed AFTER UPDATE ON group_members
    FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*)
    EXECUTE FUNCTION bump_permission_version();
"#],
    },
    Domain {
        name: "sheets",
        steps: &[r#"
-- Spreadsheet sheets as the SQL tool queries them. Each version of a sheet is a new row (its
-- id is the generation a replica's local copy is checked against); rows are kept in parts of
-- JSON arrays, the typed cells as the parser made them.
CREATE TABLE sheet_tables (
    id           BIGSERIAL PRIMARY KEY,
    document_id  BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    position     INTEGER NOT NULL,
    sheet_name   TEXT NOT NULL,
    sql_name     TEXT NOT NULL UNIQUE,
    columns      TEXT NOT NULL,
    row_count    BIGINT NOT NULL,
    UNIQUE (document_id, position)
);
CREATE TABLE sheet_rows (
    table_id   BIGINT NOT NULL REFERENCES sheet_tables(id) ON DELETE CASCADE,
    part       INTEGER NOT NULL,
    row_count  INTEGER NOT NULL,
    cells      TEXT NOT NULL,
    PRIMARY KEY (table_id, part)
);
"#],
    },
    Domain {
        name: "crawls",
        steps: &[
            r#"
-- Web and wiki crawl sources: a folder source (pages are files on the job host) with its start
-- address and settings, and per page the address it came from and its validators.
CREATE TABLE crawls (
    source_id   BIGINT PRIMARY KEY REFERENCES sources(id) ON DELETE CASCADE,
    url         TEXT NOT NULL UNIQUE,
    settings    TEXT NOT NULL,
    last_run    BIGINT,
    last_report TEXT
);
CREATE TABLE crawl_pages (
    source_id     BIGINT NOT NULL REFERENCES crawls(source_id) ON DELETE CASCADE,
    url           TEXT NOT NULL,
    path          TEXT NOT NULL,
    etag          TEXT,
    last_modified TEXT,
    content_hash  TEXT NOT NULL,
    extension     TEXT NOT NULL,
    fetched_at    BIGINT NOT NULL,
    PRIMARY KEY (source_id, url)
);
CREATE INDEX crawl_pages_path ON crawl_pages (path);
"#,
            r#"
-- The headings of a kept page that can be linked to, as JSON [[heading, fragment id], …].
ALTER TABLE crawl_pages ADD COLUMN anchors TEXT NOT NULL DEFAULT '[]';
"#,
        ],
    },
    Domain {
        name: "attachments",
        steps: &[r#"
-- A mail's attachments are documents of their own under the mail's path; they go with it.
ALTER TABLE documents ADD COLUMN parent_id BIGINT REFERENCES documents(id) ON DELETE CASCADE;
CREATE INDEX documents_parent ON documents (parent_id) WHERE parent_id IS NOT NULL;
"#],
    },
    Domain {
        name: "metadata",
        steps: &[r#"
-- A document's people and date (a mail's sender, recipients, date) as JSON; NULL when none.
ALTER TABLE documents ADD COLUMN meta TEXT;
"#],
    },
    // New domains go above this line, each at the end of the list.
];

/// Key of the advisory lock held while migrating ("knowhub" in ASCII).
const MIGRATION_LOCK: i64 = 0x006b_6e6f_7768_7562;

/// Brings the database to this build's schema, or explains why it cannot.
pub fn run(client: &mut Client, domains: &[Domain]) -> Result<()> {
    let mut tx = client.transaction()?;
    lock(&mut tx)?;
    run_in(&mut tx, domains)?;
    tx.commit()?;
    Ok(())
}

/// Takes the migration lock in `tx` (accounts are created and deleted under it too).
pub(crate) fn lock(tx: &mut Transaction<'_>) -> Result<()> {
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    Ok(())
}

/// [`run`] inside a transaction that already holds the migration lock, in the schema that
/// comes first in its `search_path`.
pub(crate) fn run_in(tx: &mut Transaction<'_>, domains: &[Domain]) -> Result<()> {
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS knowhub_migrations (
            domain      TEXT NOT NULL,
            step        INTEGER NOT NULL,
            sql         TEXT NOT NULL,
            applied_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (domain, step))",
    )?;
    let recorded = tx.query(
        "SELECT domain, step, sql FROM knowhub_migrations ORDER BY domain, step",
        &[],
    )?;
    let mut applied = std::collections::HashMap::<String, usize>::new();
    for row in &recorded {
        let domain: String = row.get(0);
        let step: i32 = row.get(1);
        let sql: String = row.get(2);
        let step = usize::try_from(step).map_err(|_| PgError::Corrupt("negative step".into()))?;
        match domains.iter().find(|d| d.name == domain) {
            Some(known) if step < known.steps.len() => {
                if known.steps[step] != sql {
                    return Err(PgError::MigrationEdited { domain, step });
                }
            }
            known => {
                return Err(PgError::DatabaseNewer {
                    domain,
                    known: known.map_or(0, |d| d.steps.len()),
                });
            }
        }
        let count = applied.entry(domain).or_default();
        if *count != step {
            return Err(PgError::Corrupt(format!(
                "migration steps recorded with a gap at {step}"
            )));
        }
        *count += 1;
    }
    for domain in domains {
        let done = applied.get(domain.name).copied().unwrap_or(0);
        for (step, sql) in domain.steps.iter().enumerate().skip(done) {
            tx.batch_execute(sql).map_err(|e| PgError::Migration {
                domain: domain.name.to_string(),
                step,
                source: e,
            })?;
            tx.execute(
                "INSERT INTO knowhub_migrations (domain, step, sql) VALUES ($1, $2, $3)",
                &[&domain.name, &(step as i32), sql],
            )?;
        }
    }
    Ok(())
}
