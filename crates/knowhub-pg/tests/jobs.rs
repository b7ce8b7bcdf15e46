//! The ingestion queue shared by replicas: no job is claimed twice, a killed replica's jobs
//! are taken over when its lease runs out, and a replica that lost a job cannot change it.

#![allow(clippy::print_stderr, clippy::unwrap_used)]

mod common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use common::cluster;
use knowhub_pg::{Database, PgJobs};
use knowhub_store::{JobState, NewJob};

fn job(path: &str, priority: i64) -> NewJob<'_> {
    NewJob {
        path,
        owner: "alice",
        priority,
    }
}

#[test]
fn a_path_is_queued_once_with_its_best_priority() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("queue").unwrap()).unwrap();
    let q = PgJobs::new(&db, "r1");
    assert_eq!(
        q.enqueue(&[job("/a", 2), job("/b", 1), job("/a", 0)])
            .unwrap(),
        2
    );
    assert_eq!(q.enqueue(&[job("/b", 2)]).unwrap(), 0);
    let claimed = q.claim_jobs(10, 60_000).unwrap();
    let order: Vec<(&str, i64)> = claimed
        .iter()
        .map(|j| (j.path.as_str(), j.priority))
        .collect();
    assert_eq!(order, [("/a", 0), ("/b", 1)]);
    assert!(claimed.iter().all(|j| j.state == JobState::Running));

    // While /a runs, it is queued again; re-queuing the running one then closes it.
    assert_eq!(q.enqueue(&[job("/a", 1)]).unwrap(), 1);
    assert!(q.requeue_job(claimed[0].id, 0, true, Some("busy")).unwrap());
    assert!(
        q.finish_job(claimed[1].id, JobState::Done, Some("added"), None)
            .unwrap()
    );
    let counts = q.queue_counts().unwrap();
    assert_eq!(
        (counts.queued, counts.running, counts.done, counts.cancelled),
        (1, 0, 1, 1)
    );
    let superseded = q.jobs(Some(JobState::Cancelled), 10).unwrap();
    assert_eq!(superseded[0].outcome.as_deref(), Some("superseded"));

    // Paused for every replica.
    q.set_queue_paused(true).unwrap();
    assert!(
        PgJobs::new(&db, "r2")
            .claim_jobs(10, 60_000)
            .unwrap()
            .is_empty()
    );
    q.set_queue_paused(false).unwrap();
    assert_eq!(q.cancel_jobs(Some("/a")).unwrap(), 1);
    assert_eq!(q.queue_counts().unwrap().queued, 0);
}

#[test]
fn replicas_share_the_work_and_never_claim_a_job_twice() {
    let Some(pg) = cluster() else { return };
    let url = pg.create_database("share").unwrap();
    let db = Database::connect(&url).unwrap();
    let paths: Vec<String> = (0..200).map(|i| format!("/docs/{i}.md")).collect();
    let jobs: Vec<NewJob<'_>> = paths.iter().map(|p| job(p, 1)).collect();
    assert_eq!(PgJobs::new(&db, "setup").enqueue(&jobs).unwrap(), 200);

    let done = Arc::new(Mutex::new(Vec::new()));
    let replicas: Vec<_> = (0..4)
        .map(|r| {
            let (db, done) = (Database::connect(&url).unwrap(), done.clone());
            std::thread::spawn(move || {
                let q = PgJobs::new(&db, format!("replica-{r}"));
                loop {
                    let claimed = q.claim_jobs(3, 60_000).unwrap();
                    if claimed.is_empty() {
                        break;
                    }
                    for j in claimed {
                        assert!(
                            q.finish_job(j.id, JobState::Done, Some("added"), None)
                                .unwrap()
                        );
                        done.lock().unwrap().push((r, j.id));
                    }
                }
            })
        })
        .collect();
    for r in replicas {
        r.join().unwrap();
    }
    let done = done.lock().unwrap();
    let ids: HashSet<i64> = done.iter().map(|(_, id)| *id).collect();
    assert_eq!((done.len(), ids.len()), (200, 200), "every job once");
    let workers: HashSet<usize> = done.iter().map(|(r, _)| *r).collect();
    assert!(workers.len() > 1, "the work was shared: {workers:?}");
}

#[test]
fn a_dead_replicas_jobs_are_taken_over_and_it_cannot_change_them_later() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("takeover").unwrap()).unwrap();
    let (dead, alive) = (PgJobs::new(&db, "dead"), PgJobs::new(&db, "alive"));
    dead.enqueue(&[job("/x", 1), job("/y", 1)]).unwrap();
    let lost = dead.claim_jobs(1, 1).unwrap();
    let kept = dead.claim_jobs(1, 60_000).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));

    // Only the job whose lease ran out goes back; the other is still being worked on.
    assert_eq!(alive.requeue_expired().unwrap(), 1);
    assert_eq!(
        dead.renew_leases(&[lost[0].id, kept[0].id], 60_000)
            .unwrap(),
        1
    );
    let taken = alive.claim_jobs(10, 60_000).unwrap();
    assert_eq!(taken.iter().map(|j| j.id).collect::<Vec<_>>(), [lost[0].id]);

    // The stalled replica wakes up: its writes to the job it lost change nothing.
    assert!(
        !dead
            .finish_job(lost[0].id, JobState::Failed, None, Some("late"))
            .unwrap()
    );
    assert!(!dead.requeue_job(lost[0].id, 0, true, None).unwrap());
    assert!(
        alive
            .finish_job(lost[0].id, JobState::Done, Some("added"), None)
            .unwrap()
    );
    assert!(
        dead.finish_job(kept[0].id, JobState::Done, Some("added"), None)
            .unwrap()
    );
    let counts = alive.queue_counts().unwrap();
    assert_eq!((counts.done, counts.failed, counts.running), (2, 0, 0));
}

#[test]
fn a_job_is_claimed_only_by_replicas_that_can_read_its_file() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("origin").unwrap()).unwrap();
    let a1 = PgJobs::new(&db, "a:1").with_host("a");
    let a2 = PgJobs::new(&db, "a:2").with_host("a");
    let b1 = PgJobs::new(&db, "b:1").with_host("b");
    a1.enqueue(&[job("/srv/a/report.md", 1)]).unwrap();
    b1.enqueue(&[job("/srv/b/notes.md", 1)]).unwrap();

    // Host b's replica never takes host a's file (it would read it as deleted), nor a b's.
    let on_b: Vec<String> = b1
        .claim_jobs(10, 60_000)
        .unwrap()
        .into_iter()
        .map(|j| j.path)
        .collect();
    assert_eq!(on_b, ["/srv/b/notes.md"]);
    // A replica of host a takes a's job; when it dies, the other replica of a takes it over.
    let claimed = a1.claim_jobs(10, 1).unwrap();
    assert_eq!(claimed.len(), 1);
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(a2.requeue_expired().unwrap(), 1);
    assert!(b1.claim_jobs(10, 60_000).unwrap().is_empty());
    let taken = a2.claim_jobs(10, 60_000).unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].path, "/srv/a/report.md");
}
