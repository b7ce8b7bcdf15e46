//! E-mail tests on messages written out here, so each case shows the MIME it exercises.

use super::*;
use crate::DocKind;

fn run(text: &str) -> Result<ParsedDocument, ParseError> {
    crate::parse(
        DocKind::Eml,
        text.replace('\n', "\r\n").as_bytes(),
        &Limits::default(),
    )
}

fn texts_of(doc: &ParsedDocument) -> Vec<&str> {
    doc.blocks.iter().map(|b| b.text.as_str()).collect()
}

fn blocks(doc: &ParsedDocument) -> Vec<(BlockKind, &str)> {
    doc.blocks
        .iter()
        .map(|b| (b.kind, b.text.as_str()))
        .collect()
}

#[test]
fn subject_people_date_and_an_encoded_body() {
    let doc = run("From: =?UTF-8?B?5byg5LiJ?= <zhang@example.com>
To: hr@example.com, Li Si <li@example.com>
Date: Tue, 1 Sep 2026 09:30:00 +0800
Subject: =?UTF-8?B?5bm05YGH5a6J5o6S?=
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: quoted-printable

=E5=B9=B4=E5=81=87=E8=AF=B7=E5=9C=A8 9 =E6=9C=88=E5=BA=95=E5=89=8D=E6=8F=90=E4=BA=A4=E3=80=82

Thanks.
")
    .unwrap();
    assert_eq!(doc.title.as_deref(), Some("年假安排"));
    assert_eq!(
        blocks(&doc),
        vec![
            (BlockKind::Heading { level: 1 }, "年假安排"),
            (
                BlockKind::Paragraph,
                "From: 张三 <zhang@example.com>\nTo: hr@example.com, Li Si <li@example.com>\nDate: 2026-09-01T09:30:00+08:00"
            ),
            (BlockKind::Paragraph, "年假请在 9 月底前提交。"),
            (BlockKind::Paragraph, "Thanks."),
        ]
    );
    assert_eq!(
        doc.meta,
        DocumentMeta {
            authors: vec!["张三 <zhang@example.com>".into()],
            recipients: vec!["hr@example.com".into(), "Li Si <li@example.com>".into()],
            date: Some("2026-09-01T09:30:00+08:00".into()),
        }
    );
    assert!(doc.meta.is_from("ZHANG@example"));
    assert!(!doc.meta.is_from("li@example.com"));
    assert!(doc.meta.names("li si"));
}

#[test]
fn the_text_part_of_an_alternative_is_read_once_and_html_alone_is_read_as_html() {
    let alternative = run("From: a@example.com
Subject: Rollout
Content-Type: multipart/alternative; boundary=\"b\"

--b
Content-Type: text/plain; charset=us-ascii

Set maxSurge to 25%.
--b
Content-Type: text/html; charset=us-ascii

<p>Set <b>maxSurge</b> to 25%.</p>
--b--
")
    .unwrap();
    let texts = texts_of(&alternative);
    assert_eq!(
        texts,
        ["Rollout", "From: a@example.com", "Set maxSurge to 25%."]
    );

    let html = run("From: a@example.com
Subject: Rollout
Content-Type: text/html; charset=utf-8

<html><body><h2>Plan</h2><p>Set maxSurge to 25%.</p></body></html>
")
    .unwrap();
    let texts = texts_of(&html);
    assert!(texts.contains(&"Set maxSurge to 25%."), "{texts:?}");
    assert!(!texts.iter().any(|t| t.contains('<')), "{texts:?}");
}

#[test]
fn attachments_are_read_under_their_names_or_named_with_a_reason() {
    // "# Steps\n\nRestart the node." and four bytes of a JPEG, base64.
    let doc = run("From: ops@example.com
Subject: Runbook
Content-Type: multipart/mixed; boundary=\"m\"

--m
Content-Type: text/plain

See the attached steps.
--m
Content-Type: text/markdown; name=\"steps.md\"
Content-Disposition: attachment; filename=\"steps.md\"
Content-Transfer-Encoding: base64

IyBTdGVwcwoKUmVzdGFydCB0aGUgbm9kZS4=
--m
Content-Type: image/jpeg; name=\"photo.jpg\"
Content-Disposition: attachment; filename=\"photo.jpg\"
Content-Transfer-Encoding: base64

/9j/4A==
--m--
")
    .unwrap();
    assert_eq!(
        blocks(&doc),
        vec![
            (BlockKind::Heading { level: 1 }, "Runbook"),
            (BlockKind::Paragraph, "From: ops@example.com"),
            (BlockKind::Paragraph, "See the attached steps."),
            (BlockKind::Heading { level: 2 }, "Attachment: steps.md"),
            (BlockKind::Heading { level: 3 }, "Steps"),
            (BlockKind::Paragraph, "Restart the node."),
            (BlockKind::Heading { level: 2 }, "Attachment: photo.jpg"),
            (
                BlockKind::Note,
                "(a picture: OCR does not read mail attachments)"
            ),
        ]
    );
}

#[test]
fn a_forwarded_message_is_read_inside_the_mail() {
    let doc = run("From: a@example.com
Subject: Fwd: Budget
Content-Type: multipart/mixed; boundary=\"m\"

--m
Content-Type: text/plain

FYI
--m
Content-Type: message/rfc822

From: cfo@example.com
Subject: Budget
Content-Type: text/plain

The travel budget is CNY 5,000 per quarter.
--m--
")
    .unwrap();
    let texts = texts_of(&doc);
    assert!(
        texts.contains(&"The travel budget is CNY 5,000 per quarter."),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|t| t.starts_with("Attachment:")),
        "{texts:?}"
    );
}

#[test]
fn text_that_is_not_a_mail_is_refused() {
    let err = run("just some notes\nwithout headers\n").unwrap_err();
    assert!(matches!(err, ParseError::Invalid { .. }), "{err}");
    assert!(run("").is_err());
}

#[test]
fn a_mailbox_is_its_messages_each_under_its_subject() {
    let mbox = "From alice@example.com Mon Nov  2 10:00:00 2026
From: alice@example.com
Subject: Parking

The garage closes at 22:00.

From bob@example.com Tue Nov  3 11:00:00 2026
From: bob@example.com
Subject: Lunch

>From now on lunch is at 12:30.
";
    let doc = crate::parse(DocKind::Eml, mbox.as_bytes(), &Limits::default()).unwrap();
    let headings: Vec<&str> = doc
        .blocks
        .iter()
        .filter(|b| b.kind == BlockKind::Heading { level: 1 })
        .map(|b| b.text.as_str())
        .collect();
    assert_eq!(headings, ["Parking", "Lunch"]);
    assert!(doc.plain_text().contains("The garage closes at 22:00."));
    assert!(doc.plain_text().contains("lunch is at 12:30."));
    assert_eq!(
        crate::detect(Some("archive.mbox"), mbox.as_bytes()),
        Some(DocKind::Eml)
    );
}

fn apart(text: &str) -> ParsedDocument {
    crate::parse_attachments_apart(
        DocKind::Eml,
        text.replace('\n', "\r\n").as_bytes(),
        &Limits::default(),
    )
    .expect("parses")
}

#[test]
fn attachments_apart_are_handed_back_under_safe_unique_names_and_listed() {
    // Two attachments called "steps.md" (the second with a path in its name), a picture, an
    // executable and a logo the HTML body shows by its Content-ID.
    let doc = apart(
        "From: ops@example.com
Subject: Runbook
Content-Type: multipart/mixed; boundary=\"m\"

--m
Content-Type: text/plain

See the attached steps.
--m
Content-Type: text/markdown; name=\"steps.md\"
Content-Disposition: attachment; filename=\"steps.md\"
Content-Transfer-Encoding: base64

IyBTdGVwcwoKUmVzdGFydCB0aGUgbm9kZS4=
--m
Content-Type: text/markdown
Content-Disposition: attachment; filename=\"../old/steps.md\"

# Old steps
--m
Content-Type: image/jpeg; name=\"whiteboard.jpg\"
Content-Disposition: attachment; filename=\"whiteboard.jpg\"
Content-Transfer-Encoding: base64

/9j/4A==
--m
Content-Type: application/x-msdownload; name=\"setup.exe\"
Content-Disposition: attachment; filename=\"setup.exe\"
Content-Transfer-Encoding: base64

TVqQAAMAAAAEAAAA
--m
Content-Type: image/png; name=\"logo.png\"
Content-ID: <logo@example.com>
Content-Transfer-Encoding: base64

iVBORw0KGgo=
--m--
",
    );
    let names: Vec<&str> = doc.attachments.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["steps.md", "_old_steps.md", "whiteboard.jpg"]);
    assert_eq!(doc.attachments[0].bytes, b"# Steps\n\nRestart the node.");
    assert_eq!(doc.attachments[2].bytes, b"\xFF\xD8\xFF\xE0");
    assert_eq!(
        blocks(&doc),
        vec![
            (BlockKind::Heading { level: 1 }, "Runbook"),
            (BlockKind::Paragraph, "From: ops@example.com"),
            (BlockKind::Paragraph, "See the attached steps."),
            (
                BlockKind::Paragraph,
                "Attachments: steps.md, _old_steps.md, whiteboard.jpg, \
                 setup.exe (not a format KnowHub reads)"
            ),
        ]
    );
    // The bytes cross the worker boundary as JSON.
    let wire = serde_json::to_string(&doc).expect("serializes");
    let back: ParsedDocument = serde_json::from_str(&wire).expect("deserializes");
    assert_eq!(back, doc);
}

#[test]
fn a_forwarded_message_apart_is_a_mail_of_its_own() {
    let doc = apart(
        "From: alice@example.com
Subject: Fwd: budget
Content-Type: multipart/mixed; boundary=\"outer\"

--outer
Content-Type: text/plain

Forwarding this.
--outer
Content-Type: message/rfc822

From: finance@example.com
Subject: Budget 2027
Content-Type: text/plain

The travel budget is CNY 5,000 per quarter.
--outer--
",
    );
    assert_eq!(doc.attachments.len(), 1);
    assert_eq!(doc.attachments[0].name, "Budget 2027.eml");
    let inner = crate::parse(DocKind::Eml, &doc.attachments[0].bytes, &Limits::default())
        .expect("the forwarded message parses");
    assert_eq!(inner.title.as_deref(), Some("Budget 2027"));
    assert!(!doc.plain_text().contains("CNY 5,000"));
}

#[test]
fn attachments_apart_in_a_mailbox_sit_under_their_message() {
    let mbox = "From a@example.com Mon Nov  2 10:00:00 2026
From: a@example.com
Subject: One
Content-Type: multipart/mixed; boundary=\"b\"

--b
Content-Type: text/plain

First.
--b
Content-Type: text/plain; name=\"notes.txt\"
Content-Disposition: attachment; filename=\"notes.txt\"

first notes
--b--

From b@example.com Tue Nov  3 11:00:00 2026
From: b@example.com
Subject: Two
Content-Type: multipart/mixed; boundary=\"b\"

--b
Content-Type: text/plain

Second.
--b
Content-Type: text/plain; name=\"notes.txt\"
Content-Disposition: attachment; filename=\"notes.txt\"

second notes
--b--
";
    let doc =
        crate::parse_attachments_apart(DocKind::Eml, mbox.as_bytes(), &Limits::default()).unwrap();
    let names: Vec<&str> = doc.attachments.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["message 1/notes.txt", "message 2/notes.txt"]);
}

#[test]
fn attachment_names_are_one_safe_path_component() {
    for (raw, safe) in [
        ("report.pdf", "report.pdf"),
        ("..", "attachment"),
        ("../../etc/passwd", "_.._etc_passwd"),
        ("C:\\temp\\a.docx", "C__temp_a.docx"),
        (".hidden.txt", "hidden.txt"),
        ("  ", "attachment"),
        ("年度报告.xlsx", "年度报告.xlsx"),
    ] {
        assert_eq!(safe_name(raw), safe, "{raw:?}");
    }
    let long = format!("{}.pdf", "x".repeat(300));
    let cut = safe_name(&long);
    assert_eq!(cut.chars().count(), MAX_NAME_CHARS);
    assert!(cut.ends_with(".pdf"));
    assert_eq!(numbered("report.pdf", 2), "report (2).pdf");
    assert_eq!(numbered("README", 3), "README (3)");
}
