//! A mail's attachments in a knowledge base: each is a document of its own under the mail's
//! path (searched and cited by its own name, its bytes served for download), readable exactly
//! when the mail is, brought up to date when the mail changes, moved with it, and removed
//! with it.

// Test helpers may panic: that is how a test fails.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;

use knowhub_authz::{RequestContext, Role, Scope, ScopeSet, UserId};
use knowhub_engine::{
    DocRef, Engine, EngineConfig, EngineError, MetaFilter, ModelSet, ParserBackend, RealFs,
    SearchOptions, dev_context,
};

fn engine(data: &Path) -> Engine {
    let mut config = EngineConfig::new(data);
    config.parser = ParserBackend::InProcess;
    Engine::open_with(config, Arc::new(RealFs), ModelSet::default()).unwrap()
}

fn ingest(engine: &Engine, folder: &Path) -> knowhub_engine::IngestReport {
    engine
        .ingest(
            &dev_context(),
            &[folder.to_path_buf()],
            &Default::default(),
            &mut |_| {},
        )
        .unwrap()
}

fn hits(engine: &Engine, ctx: &RequestContext, query: &str) -> Vec<(String, String)> {
    engine
        .search(ctx, query, &SearchOptions::default())
        .unwrap()
        .into_iter()
        .map(|h| (h.title, h.path))
        .collect()
}

/// A mail with a Markdown attachment, a text attachment, an executable, and a forwarded
/// message that has an attachment of its own.
fn mail(steps: &str, with_notes: bool) -> String {
    let notes = if with_notes {
        "--m\r\nContent-Type: text/plain; name=\"notes.txt\"\r\n\
         Content-Disposition: attachment; filename=\"notes.txt\"\r\n\r\n\
         The spare keys are kept by the quartermaster.\r\n"
    } else {
        ""
    };
    format!(
        "From: ops@example.com\r\nSubject: Runbook\r\n\
         Content-Type: multipart/mixed; boundary=\"m\"\r\n\r\n\
         --m\r\nContent-Type: text/plain\r\n\r\nSee the attached steps.\r\n\
         --m\r\nContent-Type: text/markdown; name=\"steps.md\"\r\n\
         Content-Disposition: attachment; filename=\"steps.md\"\r\n\r\n\
         # Steps\r\n\r\n{steps}\r\n\
         {notes}\
         --m\r\nContent-Type: application/x-msdownload; name=\"setup.exe\"\r\n\
         Content-Disposition: attachment; filename=\"setup.exe\"\r\n\
         Content-Transfer-Encoding: base64\r\n\r\nTVqQAAMAAAAEAAAA\r\n\
         --m\r\nContent-Type: message/rfc822\r\n\r\n\
         From: finance@example.com\r\nSubject: Budget\r\n\
         Content-Type: multipart/mixed; boundary=\"i\"\r\n\r\n\
         --i\r\nContent-Type: text/plain\r\n\r\nThe budget is attached.\r\n\
         --i\r\nContent-Type: text/plain; name=\"budget.txt\"\r\n\
         Content-Disposition: attachment; filename=\"budget.txt\"\r\n\r\n\
         Travel is capped at CNY 5,000 per quarter for the lighthouse team.\r\n\
         --i--\r\n\
         --m--\r\n"
    )
}

#[test]
fn attachments_are_documents_that_follow_their_mail() {
    let data = tempfile::tempdir().unwrap();
    let docs = tempfile::tempdir().unwrap();
    let inbox = docs.path().join("inbox");
    std::fs::create_dir(&inbox).unwrap();
    let mail_path = inbox.join("runbook.eml");
    std::fs::write(&mail_path, mail("Restart the aardvark node first.", true)).unwrap();
    let engine = engine(data.path());
    let admin = dev_context();

    let report = ingest(&engine, &inbox);
    assert_eq!((report.added, report.failed), (1, 0), "{report:?}");

    // Each attachment is searched and cited under its own name, below the mail's path.
    let mail_str = std::fs::canonicalize(&mail_path)
        .unwrap()
        .display()
        .to_string();
    let found = hits(&engine, &admin, "aardvark");
    assert_eq!(
        found,
        [("Steps".to_string(), format!("{mail_str}/steps.md"))],
        "only the attachment holds the word"
    );
    let budget = hits(&engine, &admin, "lighthouse");
    assert_eq!(
        budget.iter().map(|h| h.1.as_str()).collect::<Vec<_>>(),
        [format!("{mail_str}/Budget.eml/budget.txt")],
        "a forwarded message's attachment is a document too"
    );
    // The mail names what it carried, readable formats or not.
    let text = engine
        .open_document(&admin, DocRef::Path(&mail_path))
        .unwrap();
    assert!(
        text.text.contains(
            "Attachments: steps.md, notes.txt, setup.exe (not a format KnowHub reads), Budget.eml"
        ),
        "{}",
        text.text
    );
    let documents = engine.documents(&admin, None).unwrap();
    let steps = documents
        .iter()
        .find(|d| d.path.ends_with("/steps.md"))
        .unwrap();
    let mail_doc = documents.iter().find(|d| d.path == mail_str).unwrap();
    assert_eq!(steps.parent, Some(mail_doc.id));
    assert!(!documents.iter().any(|d| d.path.ends_with("setup.exe")));
    // Its bytes are served like a file's.
    let (_, mut file) = engine.document_file(&admin, steps.id).unwrap();
    let mut bytes = String::new();
    std::io::Read::read_to_string(&mut file.reader, &mut bytes).unwrap();
    assert_eq!(bytes, "# Steps\r\n\r\nRestart the aardvark node first.");

    let check = engine.check(&admin, false).unwrap();
    assert!(check.problems.is_empty(), "{:?}", check.problems);

    // Readable exactly when the mail is: not by a user the folder does not name, then by one
    // the mail's own ACL names; an attachment's ACL cannot be set apart from its mail.
    let carol = UserId::new("carol").unwrap();
    engine
        .add_user(&admin, &carol, "Carol", Role::User)
        .unwrap();
    let as_carol = RequestContext {
        user: carol.clone(),
        role: Role::User,
        ..dev_context()
    };
    assert!(hits(&engine, &as_carol, "aardvark").is_empty());
    assert!(hits(&engine, &as_carol, "lighthouse").is_empty());
    assert!(matches!(
        engine.document_file(&as_carol, steps.id),
        Err(EngineError::NotFound(_))
    ));
    let readers: ScopeSet = [Scope::User(carol)].into_iter().collect();
    engine
        .set_document_acl(&admin, &mail_path, Some(&readers))
        .unwrap();
    assert_eq!(hits(&engine, &as_carol, "aardvark").len(), 1);
    assert_eq!(hits(&engine, &as_carol, "lighthouse").len(), 1);
    let attachment_path = Path::new(&steps.path).to_path_buf();
    assert!(matches!(
        engine.set_document_acl(&admin, &attachment_path, Some(&readers)),
        Err(EngineError::InvalidInput(_))
    ));
    assert!(matches!(
        engine.remove(&admin, std::slice::from_ref(&attachment_path)),
        Err(EngineError::InvalidInput(_))
    ));

    // The mail changes: one attachment is edited, one is gone. The edit keeps its id.
    std::fs::write(&mail_path, mail("Restart the pangolin node first.", false)).unwrap();
    let report = ingest(&engine, &inbox);
    assert_eq!(report.updated, 1, "{report:?}");
    assert!(hits(&engine, &admin, "aardvark").is_empty());
    assert!(
        hits(&engine, &admin, "quartermaster").is_empty(),
        "notes.txt went"
    );
    let documents = engine.documents(&admin, None).unwrap();
    let steps_now = documents
        .iter()
        .find(|d| d.path.ends_with("/steps.md"))
        .unwrap();
    assert_eq!(steps_now.id, steps.id);
    assert_eq!(hits(&engine, &admin, "pangolin").len(), 1);

    // Moved with the mail.
    let moved = inbox.join("runbook-2026.eml");
    std::fs::rename(&mail_path, &moved).unwrap();
    let report = ingest(&engine, &inbox);
    assert_eq!(report.moved, 1, "{report:?}");
    let moved_str = std::fs::canonicalize(&moved).unwrap().display().to_string();
    assert_eq!(
        hits(&engine, &admin, "pangolin")[0].1,
        format!("{moved_str}/steps.md")
    );

    // Removed with the mail; the index and the store agree afterwards.
    std::fs::remove_file(&moved).unwrap();
    let report = ingest(&engine, &inbox);
    assert_eq!(report.removed, 1, "{report:?}");
    assert!(hits(&engine, &admin, "pangolin").is_empty());
    assert!(hits(&engine, &admin, "lighthouse").is_empty());
    assert!(engine.documents(&admin, None).unwrap().is_empty());
    let check = engine.check(&admin, false).unwrap();
    assert!(check.problems.is_empty(), "{:?}", check.problems);
}

#[test]
fn a_search_keeps_mails_by_sender_and_day() {
    let data = tempfile::tempdir().unwrap();
    let docs = tempfile::tempdir().unwrap();
    let message = |from: &str, date: &str, body: &str| {
        format!(
            "From: {from}\r\nTo: staff@example.com\r\nDate: {date}\r\nSubject: Harbour notice\r\n\
             Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n"
        )
    };
    std::fs::write(
        docs.path().join("march.eml"),
        message(
            "Dana Lee <dana@example.com>",
            "Mon, 2 Mar 2026 09:30:00 +0800",
            "The harbour ferry leaves at seven in March.",
        ),
    )
    .unwrap();
    std::fs::write(
        docs.path().join("may.eml"),
        message(
            "=?UTF-8?B?5byg5LiJ?= <zhang@example.com>",
            "Fri, 1 May 2026 23:30:00 -0700",
            "The harbour ferry leaves at eight in May.",
        ),
    )
    .unwrap();
    std::fs::write(
        docs.path().join("notes.md"),
        "# Harbour\n\nThe harbour ferry is free for staff.\n",
    )
    .unwrap();
    let engine = engine(data.path());
    ingest(&engine, docs.path());

    let search = |meta: MetaFilter| -> Vec<String> {
        let mut names: Vec<String> = engine
            .search(
                &dev_context(),
                "harbour ferry",
                &SearchOptions {
                    meta,
                    ..SearchOptions::default()
                },
            )
            .unwrap()
            .into_iter()
            .map(|h| {
                Path::new(&h.path)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into()
            })
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        search(MetaFilter::default()),
        ["march.eml", "may.eml", "notes.md"]
    );
    // A sender by part of the name or address, in any case; recipients do not count.
    let from = |who: &str| MetaFilter {
        from: Some(who.into()),
        ..MetaFilter::default()
    };
    assert_eq!(search(from("DANA")), ["march.eml"]);
    assert_eq!(search(from("张三")), ["may.eml"]);
    assert!(search(from("staff@example.com")).is_empty());
    // Days are the mail's own: sent 1 May 23:30 at -07:00 is a May 1st mail (May 2nd in UTC).
    let day = |d: &str| Some(MetaFilter::parse_day(d).unwrap());
    let between = |since: &str, until: &str| MetaFilter {
        since: day(since),
        until: day(until),
        ..MetaFilter::default()
    };
    assert_eq!(search(between("2026-05-01", "2026-05-01")), ["may.eml"]);
    assert_eq!(search(between("2026-03-02", "2026-04-30")), ["march.eml"]);
    assert!(MetaFilter::parse_day("March 2").is_err());

    // A hit carries the mail's people and date for its citation.
    let hit = engine
        .search(&dev_context(), "seven", &SearchOptions::default())
        .unwrap()
        .remove(0);
    assert_eq!(hit.meta.authors, ["Dana Lee <dana@example.com>"]);
    assert_eq!(hit.meta.recipients, ["staff@example.com"]);
    assert_eq!(hit.meta.date.as_deref(), Some("2026-03-02T09:30:00+08:00"));
}
