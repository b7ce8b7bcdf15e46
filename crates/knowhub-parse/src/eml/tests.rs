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
