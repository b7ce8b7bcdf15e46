//! Watched folders on the real file system: create, edit, rename, move and delete files (and
//! whole folders) while the service runs, and assert that search converges — waiting on the
//! service's own events with a deadline, never on a fixed sleep.

// Test helpers may panic: that is how a test fails.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use knowhub_engine::{
    DocumentId, DocumentRecord, Engine, EngineConfig, ModelSet, RealFs, SearchOptions, SourceRules,
    WatchEvent, WatchOptions, WatchService, dev_context,
};

/// Long enough for a loaded CI machine; the tests finish as soon as the condition holds.
const DEADLINE: Duration = Duration::from_secs(60);

struct Fixture {
    _data: tempfile::TempDir,
    folder: tempfile::TempDir,
    engine: Arc<Engine>,
}

impl Fixture {
    fn new() -> Fixture {
        let data = tempfile::tempdir().unwrap();
        let folder = tempfile::tempdir().unwrap();
        let engine = open(data.path());
        Fixture {
            _data: data,
            folder,
            engine,
        }
    }

    fn root(&self) -> PathBuf {
        self.folder.path().canonicalize().unwrap()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn start(&self) -> (WatchService, Receiver<WatchEvent>) {
        let service =
            WatchService::start(Arc::clone(&self.engine), &dev_context(), options()).unwrap();
        let events = service.subscribe();
        (service, events)
    }

    /// Paths of documents whose passages match `q`.
    fn hits(&self, q: &str) -> Vec<String> {
        let mut paths: Vec<String> = self
            .engine
            .search(&dev_context(), q, &SearchOptions::default())
            .unwrap()
            .into_iter()
            .map(|h| h.path)
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }

    fn rel_hits(&self, q: &str) -> Vec<String> {
        let root = self.root().display().to_string();
        self.hits(q)
            .into_iter()
            .map(|p| {
                p.trim_start_matches(&root)
                    .trim_start_matches('/')
                    .to_string()
            })
            .collect()
    }

    fn doc(&self, path: &Path) -> Option<DocumentRecord> {
        let want = path.display().to_string();
        self.engine
            .documents(&dev_context(), Some(path))
            .unwrap()
            .into_iter()
            .find(|d| d.path == want)
    }

    fn doc_id(&self, rel: &str) -> Option<DocumentId> {
        self.doc(&self.path(rel)).map(|d| d.id)
    }

    /// Waits until `cond` holds, re-checking whenever the service reports something.
    fn converge(&self, events: &Receiver<WatchEvent>, what: &str, cond: impl Fn(&Fixture) -> bool) {
        let start = Instant::now();
        loop {
            if cond(self) {
                let q = self.engine.queue(&dev_context(), 0).unwrap().counts;
                // Converged *and* settled: nothing due that could undo it (a retry waiting
                // for its backoff time is not due).
                if q.queued == q.waiting && q.running == 0 {
                    return;
                }
            }
            assert!(
                start.elapsed() < DEADLINE,
                "did not converge within {DEADLINE:?}: {what}"
            );
            let _ = events.recv_timeout(Duration::from_millis(250));
        }
    }
}

fn open(data: &Path) -> Arc<Engine> {
    Arc::new(
        Engine::open_with(EngineConfig::new(data), Arc::new(RealFs), ModelSet::none()).unwrap(),
    )
}

fn options() -> WatchOptions {
    WatchOptions {
        debounce: Duration::from_millis(100),
        settle: Duration::from_millis(200),
        poll: Duration::from_millis(200),
        ..WatchOptions::default()
    }
}

#[test]
fn create_edit_rename_move_delete_converge() {
    let f = Fixture::new();
    f.write(
        "handbook.md",
        "# Handbook\n\nEmployees get fifteen days of annual leave.",
    );
    f.engine
        .watch_folder(&dev_context(), &f.root(), SourceRules::default())
        .unwrap();
    let (service, events) = f.start();
    f.converge(&events, "initial scan", |f| {
        f.rel_hits("annual leave") == ["handbook.md"]
    });

    // Create, in English and Chinese.
    f.write("notes/年假.txt", "新员工试用期为三个月。");
    f.converge(&events, "create", |f| {
        f.rel_hits("试用期") == ["notes/年假.txt"]
    });

    // Edit: the new text is found, the old is not.
    f.write(
        "handbook.md",
        "# Handbook\n\nEmployees get twenty days of vacation.",
    );
    f.converge(&events, "edit", |f| {
        f.rel_hits("twenty vacation") == ["handbook.md"] && f.hits("fifteen").is_empty()
    });
    let id = f.doc_id("handbook.md").unwrap();

    // Rename: same document (id, history), new path.
    std::fs::rename(f.path("handbook.md"), f.path("employee-handbook.md")).unwrap();
    f.converge(&events, "rename", |f| {
        f.rel_hits("vacation") == ["employee-handbook.md"]
    });
    assert_eq!(
        f.doc_id("employee-handbook.md"),
        Some(id),
        "a rename keeps the document"
    );

    // Move into another folder: still the same document.
    std::fs::create_dir_all(f.path("hr")).unwrap();
    std::fs::rename(
        f.path("employee-handbook.md"),
        f.path("hr/employee-handbook.md"),
    )
    .unwrap();
    f.converge(&events, "move", |f| {
        f.rel_hits("vacation") == ["hr/employee-handbook.md"]
    });
    assert_eq!(
        f.doc_id("hr/employee-handbook.md"),
        Some(id),
        "a move keeps the document"
    );

    // A symlink loop and an unreadable file do not stop anything.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(f.root(), f.path("hr/loop")).unwrap();
        f.write("hr/secret.md", "unreadable vacation");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            f.path("hr/secret.md"),
            std::fs::Permissions::from_mode(0o000),
        )
        .unwrap();
    }

    // Editor temp and lock files are never documents.
    f.write("hr/~$employee-handbook.docx", "lock");
    f.write("hr/.draft.md", "vacation draft");
    // Delete a file.
    std::fs::remove_file(f.path("notes/年假.txt")).unwrap();
    f.converge(&events, "delete", |f| f.hits("试用期").is_empty());
    assert_eq!(f.rel_hits("vacation"), ["hr/employee-handbook.md"]);
    #[cfg(unix)]
    {
        // Root reads any file: the permission test only means something for other users.
        let root = std::fs::read(f.path("hr/secret.md")).is_ok();
        if !root {
            let jobs = f.engine.queue(&dev_context(), 100).unwrap().jobs;
            assert!(
                jobs.iter().any(|j| j.path.ends_with("secret.md")
                    && j.error
                        .as_deref()
                        .is_some_and(|e| e.contains("permission denied"))),
                "the unreadable file is retried with its reason: {jobs:#?}"
            );
        }
        std::fs::remove_file(f.path("hr/secret.md")).unwrap();
        std::fs::remove_file(f.path("hr/loop")).unwrap();
    }

    // A folder moved in from outside the watched folder, then deleted as a whole.
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(outside.path().join("projects/alpha")).unwrap();
    std::fs::write(
        outside.path().join("projects/alpha/plan.md"),
        "Alpha launch in May.",
    )
    .unwrap();
    std::fs::write(
        outside.path().join("projects/beta.txt"),
        "Beta launch in June.",
    )
    .unwrap();
    std::fs::rename(outside.path().join("projects"), f.path("projects")).unwrap();
    f.converge(&events, "folder moved in", |f| {
        f.rel_hits("launch") == ["projects/alpha/plan.md", "projects/beta.txt"]
    });
    std::fs::remove_dir_all(f.path("projects")).unwrap();
    f.converge(&events, "folder deleted", |f| f.hits("launch").is_empty());

    // A .knowhubignore takes effect without a restart.
    f.write("hr/salaries.md", "Confidential salary bands.");
    f.converge(&events, "before ignore", |f| {
        f.rel_hits("salary") == ["hr/salaries.md"]
    });
    f.write(".knowhubignore", "salaries.md\n");
    f.converge(&events, "ignore file", |f| f.hits("salary").is_empty());

    service.stop();
    let report = f.engine.check(&dev_context(), true).unwrap();
    assert!(report.is_consistent(), "{:#?}", report.problems);
}

#[test]
fn a_file_written_slowly_is_stored_once_complete() {
    let f = Fixture::new();
    f.engine
        .watch_folder(&dev_context(), &f.root(), SourceRules::default())
        .unwrap();
    let (service, events) = f.start();
    // Written in pieces with pauses shorter than the settle time.
    let path = f.path("minutes.txt");
    let mut text = String::new();
    for i in 0..5 {
        text.push_str(&format!("Item {i}: agreed. "));
        std::fs::write(&path, &text).unwrap();
        std::thread::sleep(Duration::from_millis(60));
    }
    text.push_str("Final item: adjourned.");
    std::fs::write(&path, &text).unwrap();
    f.converge(&events, "complete file", |f| {
        f.rel_hits("adjourned") == ["minutes.txt"]
    });
    let doc = f.doc(&path).unwrap();
    assert_eq!(doc.size, text.len() as u64, "stored the finished file");
    service.stop();
}

#[test]
fn changes_made_while_stopped_are_found_at_the_next_start() {
    let f = Fixture::new();
    f.write("a.md", "Apples are red.");
    f.write("b.md", "Bananas are yellow.");
    f.engine
        .watch_folder(&dev_context(), &f.root(), SourceRules::default())
        .unwrap();
    let (service, events) = f.start();
    f.converge(&events, "first start", |f| {
        f.rel_hits("apples bananas").len() == 2
    });
    service.stop();

    // The app is closed: edit, delete, add, rename.
    f.write("a.md", "Apricots are orange.");
    std::fs::remove_file(f.path("b.md")).unwrap();
    f.write("c.md", "Cherries are dark red.");
    let data = f._data.path().to_path_buf();
    drop(f.engine);
    let engine = open(&data);
    let f = Fixture { engine, ..f };

    let (service, events) = f.start();
    f.converge(&events, "reconcile at start", |f| {
        f.rel_hits("apricots") == ["a.md"]
            && f.hits("apples").is_empty()
            && f.hits("bananas").is_empty()
            && f.rel_hits("cherries") == ["c.md"]
    });
    service.stop();
    let report = f.engine.check(&dev_context(), true).unwrap();
    assert!(report.is_consistent(), "{:#?}", report.problems);
}

#[test]
fn uploads_are_copied_watched_and_processed_first() {
    let f = Fixture::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let original = elsewhere.path().join("dropped.md");
    std::fs::write(&original, "Dropped documents are searchable first.").unwrap();
    let copies = f
        .engine
        .upload(&dev_context(), std::slice::from_ref(&original))
        .unwrap();
    assert_eq!(copies.len(), 1);
    let (service, events) = f.start();
    f.converge(&events, "upload", |f| {
        f.hits("dropped searchable").len() == 1
    });
    // The knowledge base keeps the copy whatever happens to the original.
    std::fs::remove_file(&original).unwrap();
    let again = f.engine.upload(&dev_context(), &copies).unwrap();
    assert_ne!(
        again[0], copies[0],
        "a second drop of the same name gets a new name"
    );
    service.stop();
}

#[test]
fn drops_go_to_a_collection_or_a_watched_folder_the_user_may_write() {
    use knowhub_authz::{RequestContext, Role, UserId};
    use knowhub_engine::{UploadKind, UploadTarget};

    let f = Fixture::new();
    let admin = dev_context();
    f.write("team/readme.md", "The team folder.");
    f.engine
        .watch_folder(&admin, &f.root(), SourceRules::default())
        .unwrap();
    let carol = UserId::new("carol").unwrap();
    f.engine
        .add_user(&admin, &carol, "Carol", Role::User)
        .unwrap();
    let as_carol = RequestContext {
        user: carol,
        role: Role::User,
        ..dev_context()
    };
    let elsewhere = tempfile::tempdir().unwrap();
    let file = elsewhere.path().join("季度报告.md");
    std::fs::write(&file, "Quarterly figures: 4711 units.").unwrap();

    // Into a new collection: created on first use, listed afterwards.
    let copies = f
        .engine
        .upload_to(
            &as_carol,
            std::slice::from_ref(&file),
            &UploadTarget::Uploads {
                collection: Some("项目 Alpha".into()),
            },
        )
        .unwrap();
    assert!(copies[0].ends_with("项目 Alpha/季度报告.md"), "{copies:?}");
    let targets = f.engine.upload_targets(&as_carol).unwrap();
    let kinds: Vec<(UploadKind, &str)> =
        targets.iter().map(|t| (t.kind, t.name.as_str())).collect();
    assert_eq!(
        kinds,
        vec![
            (UploadKind::Uploads, ""),
            (UploadKind::Collection, "项目 Alpha")
        ],
        "carol may not write into the admin's watched folder"
    );

    // Bad collection names are refused before anything is copied.
    for bad in ["../escape", "a/b", ".hidden", "x:y"] {
        let err = f
            .engine
            .upload_to(
                &as_carol,
                std::slice::from_ref(&file),
                &UploadTarget::Uploads {
                    collection: Some(bad.into()),
                },
            )
            .unwrap_err();
        assert!(err.to_string().contains("collection name"), "{bad}: {err}");
    }

    // Another user's watched folder is not a target, even named directly.
    let err = f
        .engine
        .upload_to(
            &as_carol,
            std::slice::from_ref(&file),
            &UploadTarget::Folder { path: f.root() },
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("not a watched folder you may add files to"),
        "{err}"
    );
    assert!(!f.path("季度报告.md").exists(), "nothing copied on refusal");

    // The admin may, and the copy lands in the watched folder itself.
    let admin_targets = f.engine.upload_targets(&admin).unwrap();
    assert!(
        admin_targets
            .iter()
            .any(|t| t.kind == UploadKind::Watched && Path::new(&t.path) == f.root()),
        "{admin_targets:?}"
    );
    assert!(
        !admin_targets.iter().any(|t| t.path.contains("carol")),
        "another user's uploads are never a target: {admin_targets:?}"
    );
    let copies = f
        .engine
        .upload_to(
            &admin,
            std::slice::from_ref(&file),
            &UploadTarget::Folder { path: f.root() },
        )
        .unwrap();
    assert_eq!(copies, vec![f.path("季度报告.md")]);

    // A folder cannot be dropped into itself.
    let err = f
        .engine
        .upload_to(
            &admin,
            &[f.path("team")],
            &UploadTarget::Folder { path: f.root() },
        )
        .map(|_| ())
        .err();
    assert!(
        err.is_none(),
        "a sub-folder copied next to itself gets a new name"
    );
    let err = f
        .engine
        .upload_to(
            &admin,
            &[f.root()],
            &UploadTarget::Folder { path: f.root() },
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("cannot be copied into itself"),
        "{err}"
    );
}
