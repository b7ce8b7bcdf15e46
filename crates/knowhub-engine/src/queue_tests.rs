//! The queue and sync-mode ingestion over the in-memory file system: moves keep identity,
//! deletes propagate, transient errors retry with backoff, permanent ones fail once, rules
//! apply, owner-only writes hold for background jobs.

use std::path::{Path, PathBuf};

use knowhub_authz::{Role, UserId};

use super::*;
use crate::tests::engine;

fn options() -> ProcessOptions {
    ProcessOptions {
        // FakeFs mtimes are small counters, far in the past: nothing is "still being written".
        settle: std::time::Duration::ZERO,
        ..ProcessOptions::default()
    }
}

fn drain(engine: &Engine) -> BatchReport {
    engine
        .drain_queue(
            &options(),
            Some(std::time::Duration::from_secs(5)),
            &mut |_| {},
        )
        .unwrap()
}

fn paths(engine: &Engine) -> Vec<String> {
    engine
        .documents(&dev_context(), None)
        .unwrap()
        .into_iter()
        .map(|d| d.path)
        .collect()
}

fn id_of(engine: &Engine, path: &str) -> Option<DocumentId> {
    engine
        .documents(&dev_context(), None)
        .unwrap()
        .into_iter()
        .find(|d| d.path == path)
        .map(|d| d.id)
}

fn jobs(engine: &Engine) -> Vec<JobRecord> {
    engine.queue(&dev_context(), 100).unwrap().jobs
}

#[test]
fn watch_reconcile_and_sync_follow_the_folder() {
    let fs = FakeFs::new();
    fs.write("/w/a.md", "# A\n\nalpha text");
    fs.write("/w/sub/b.txt", "bravo text");
    fs.write("/w/~$lock.docx", "lock");
    let (_d, engine) = engine(&fs);
    engine
        .watch_folder(&dev_context(), Path::new("/w"), SourceRules::default())
        .unwrap();
    let r = drain(&engine);
    assert_eq!((r.done, r.failed), (2, 0), "{r:?}");
    assert_eq!(paths(&engine), ["/w/a.md", "/w/sub/b.txt"]);
    let a = id_of(&engine, "/w/a.md").unwrap();

    // Nothing changed: a reconcile queues nothing.
    assert_eq!(engine.reconcile_all().unwrap(), 0);

    // Rename (same content) + delete + add, found by a reconcile.
    fs.rename(Path::new("/w/a.md"), "/w/sub/a-renamed.md");
    fs.remove(Path::new("/w/sub/b.txt"));
    fs.write("/w/c.md", "charlie text");
    assert_eq!(engine.reconcile_all().unwrap(), 4);
    drain(&engine);
    assert_eq!(paths(&engine), ["/w/c.md", "/w/sub/a-renamed.md"]);
    assert_eq!(
        id_of(&engine, "/w/sub/a-renamed.md"),
        Some(a),
        "a move keeps the document id"
    );
    let outcomes: Vec<Option<String>> = jobs(&engine).into_iter().map(|j| j.outcome).collect();
    assert!(outcomes.contains(&Some("moved".into())), "{outcomes:?}");
    assert!(outcomes.contains(&Some("removed".into())), "{outcomes:?}");

    // A job for a whole folder that is gone removes everything under it.
    fs.write("/w/sub/deep/d.md", "delta text");
    engine.reconcile_all().unwrap();
    drain(&engine);
    assert!(paths(&engine).contains(&"/w/sub/deep/d.md".to_string()));
    fs.remove(Path::new("/w/sub/deep/d.md"));
    fs.remove(Path::new("/w/sub/a-renamed.md"));
    engine
        .enqueue(&dev_context(), &[PathBuf::from("/w/c.md")])
        .unwrap();
    engine
        .store()
        .enqueue(&[knowhub_store::NewJob {
            path: "/w/sub",
            owner: "default",
            priority: priority::EVENT,
        }])
        .unwrap();
    drain(&engine);
    assert_eq!(paths(&engine), ["/w/c.md"]);
    let report = engine.check(&dev_context(), true).unwrap();
    assert!(report.is_consistent(), "{:?}", report.problems);
}

#[test]
fn rules_keep_files_out_and_take_them_out_when_they_change() {
    let fs = FakeFs::new();
    fs.write("/w/keep.md", "keep me");
    fs.write("/w/big.txt", "x".repeat(5_000));
    fs.write("/w/drafts/d.md", "draft");
    fs.write("/w/notes.txt", "plain notes");
    let (_d, engine) = engine(&fs);
    let rules = SourceRules {
        include: vec![],
        exclude: vec!["drafts/".into()],
        max_file_bytes: Some(1_000),
    };
    engine
        .watch_folder(&dev_context(), Path::new("/w"), rules)
        .unwrap();
    drain(&engine);
    // big.txt is stored as failed ("too large"), drafts are left out.
    let docs = engine.documents(&dev_context(), None).unwrap();
    let ok: Vec<&str> = docs
        .iter()
        .filter(|d| d.error_code.is_none())
        .map(|d| d.path.as_str())
        .collect();
    assert_eq!(ok, ["/w/keep.md", "/w/notes.txt"]);
    let big = docs.iter().find(|d| d.path == "/w/big.txt").unwrap();
    assert_eq!(big.error_code.as_deref(), Some("too_large"));

    // Narrow the rules: notes.txt leaves on the next reconcile.
    engine
        .watch_folder(
            &dev_context(),
            Path::new("/w"),
            SourceRules {
                include: vec!["*.md".into()],
                ..SourceRules::default()
            },
        )
        .unwrap();
    drain(&engine);
    assert_eq!(paths(&engine), ["/w/drafts/d.md", "/w/keep.md"]);
}

#[test]
fn transient_errors_retry_with_backoff_and_permanent_ones_fail_once() {
    let fs = FakeFs::new();
    fs.write("/w/locked.md", "locked for now");
    fs.write("/w/broken.pdf", "%PDF-1.7 this is not a real pdf");
    let (_d, engine) = engine(&fs);
    fs.set_unreadable("/w/locked.md", true);
    engine
        .watch_folder(&dev_context(), Path::new("/w"), SourceRules::default())
        .unwrap();
    let r = engine.process_queue(&options(), &mut |_| {}).unwrap();
    assert_eq!((r.jobs, r.failed, r.requeued), (2, 1, 1), "{r:?}");
    let all = jobs(&engine);
    let locked = all.iter().find(|j| j.path == "/w/locked.md").unwrap();
    assert_eq!(locked.state, JobState::Queued);
    assert_eq!(locked.attempts, 1);
    assert!(
        locked
            .error
            .as_deref()
            .unwrap()
            .contains("permission denied")
    );
    let broken = all.iter().find(|j| j.path == "/w/broken.pdf").unwrap();
    assert_eq!(
        broken.state,
        JobState::Failed,
        "a corrupt file is not retried"
    );
    // Not due yet: nothing runs.
    assert_eq!(
        engine.process_queue(&options(), &mut |_| {}).unwrap().jobs,
        0
    );
    assert_eq!(backoff(0).as_secs(), 2);
    assert_eq!(backoff(1).as_secs(), 4);
    assert_eq!(backoff(20).as_secs(), 300);

    // An administrator retries failed jobs by hand; the reconcile never does (unchanged file).
    assert_eq!(engine.reconcile_all().unwrap(), 0);
    assert_eq!(engine.retry_failed(&dev_context(), None).unwrap(), 1);
    assert_eq!(engine.cancel_jobs(&dev_context(), None).unwrap(), 2);
    assert_eq!(engine.queue(&dev_context(), 0).unwrap().counts.queued, 0);
}

#[test]
fn pause_stops_processing_and_background_jobs_respect_owners() {
    let fs = FakeFs::new();
    fs.write("/w/a.md", "alpha");
    let (_d, engine) = engine(&fs);
    let admin = dev_context();
    let bob = UserId::new("bob").unwrap();
    engine.add_user(&admin, &bob, "Bob", Role::User).unwrap();
    let bob_ctx = RequestContext {
        user: bob.clone(),
        role: Role::User,
        ..dev_context()
    };
    // Users may not pause the queue.
    assert!(matches!(
        engine.set_queue_paused(&bob_ctx, true),
        Err(EngineError::Forbidden(_))
    ));
    engine.set_queue_paused(&admin, true).unwrap();
    engine
        .watch_folder(&admin, Path::new("/w"), SourceRules::default())
        .unwrap();
    assert_eq!(
        engine.process_queue(&options(), &mut |_| {}).unwrap().jobs,
        0
    );
    engine.set_queue_paused(&admin, false).unwrap();
    drain(&engine);
    assert_eq!(paths(&engine), ["/w/a.md"]);

    // Bob cannot take over the administrator's folder, and his queued job for a file in it
    // cannot replace the administrator's document.
    assert!(matches!(
        engine.watch_folder(&bob_ctx, Path::new("/w"), SourceRules::default()),
        Err(EngineError::Forbidden(_))
    ));
    fs.write("/w/a.md", "alpha changed by bob");
    engine
        .enqueue(&bob_ctx, &[PathBuf::from("/w/a.md")])
        .unwrap();
    drain(&engine);
    let job = &jobs(&engine)[0];
    assert_eq!(job.owner, "bob");
    assert_eq!(job.outcome.as_deref(), Some("skipped"), "{job:?}");
    // Bob sees only his own jobs.
    let his = engine.queue(&bob_ctx, 100).unwrap().jobs;
    assert!(his.iter().all(|j| j.owner == "bob") && !his.is_empty());

    // A removed owner's jobs fail with the reason instead of running as nobody.
    engine.remove_user(&admin, &bob).unwrap();
    engine
        .store()
        .enqueue(&[knowhub_store::NewJob {
            path: "/w/a.md",
            owner: "bob",
            priority: priority::EVENT,
        }])
        .unwrap();
    drain(&engine);
    let job = &jobs(&engine)[0];
    assert_eq!(job.state, JobState::Failed);
    assert!(job.error.as_deref().unwrap().contains("removed"), "{job:?}");
}

#[test]
fn a_watched_folder_that_disappears_as_a_whole_keeps_its_documents() {
    let fs = FakeFs::new();
    fs.write("/mnt/usb/a.md", "alpha");
    fs.write("/mnt/usb/sub/b.md", "bravo");
    let (_d, engine) = engine(&fs);
    engine
        .watch_folder(
            &dev_context(),
            Path::new("/mnt/usb"),
            SourceRules::default(),
        )
        .unwrap();
    drain(&engine);
    assert_eq!(paths(&engine).len(), 2);
    // The drive is unplugged: every file is gone, and so is the folder itself.
    fs.remove(Path::new("/mnt/usb/a.md"));
    fs.remove(Path::new("/mnt/usb/sub/b.md"));
    assert_eq!(
        engine.reconcile_all().unwrap(),
        0,
        "nothing to compare with"
    );
    // Watcher events for the files and the folder do not remove anything either.
    engine
        .store()
        .enqueue(&[
            knowhub_store::NewJob {
                path: "/mnt/usb/a.md",
                owner: "default",
                priority: priority::EVENT,
            },
            knowhub_store::NewJob {
                path: "/mnt/usb",
                owner: "default",
                priority: priority::EVENT,
            },
        ])
        .unwrap();
    drain(&engine);
    assert_eq!(paths(&engine), ["/mnt/usb/a.md", "/mnt/usb/sub/b.md"]);
    // Back again with one file deleted meanwhile: the reconcile removes just that one.
    fs.write("/mnt/usb/a.md", "alpha");
    engine.reconcile_all().unwrap();
    drain(&engine);
    assert_eq!(paths(&engine), ["/mnt/usb/a.md"]);
}

#[test]
fn check_finds_each_kind_of_inconsistency() {
    let fs = FakeFs::new();
    fs.write("/w/a.md", "# A\n\nalpha text");
    fs.write("/w/b.md", "# B\n\nbravo text");
    let (_d, engine) = engine(&fs);
    engine
        .watch_folder(&dev_context(), Path::new("/w"), SourceRules::default())
        .unwrap();
    drain(&engine);
    assert!(engine.check(&dev_context(), true).unwrap().is_consistent());
    let a = id_of(&engine, "/w/a.md").unwrap();

    // The index loses a document's chunks behind the store's back.
    engine.index.delete_document(a.0 as u64).unwrap();
    engine.index.commit().unwrap();
    // A file appears that was never ingested, and one is edited.
    fs.write("/w/c.md", "charlie");
    fs.write("/w/b.md", "# B\n\nbravo changed");
    let report = engine.check(&dev_context(), true).unwrap();
    let text = report.problems.join("\n");
    assert!(text.contains("full-text index: document"), "{text}");
    assert!(text.contains("1 file(s) not stored: /w/c.md"), "{text}");
    assert!(text.contains("older than their file: /w/b.md"), "{text}");
    // Users may not run it.
    let bob = UserId::new("bob").unwrap();
    engine
        .add_user(&dev_context(), &bob, "Bob", Role::User)
        .unwrap();
    let bob_ctx = RequestContext {
        user: bob,
        role: Role::User,
        ..dev_context()
    };
    assert!(matches!(
        engine.check(&bob_ctx, false),
        Err(EngineError::Forbidden(_))
    ));
}
