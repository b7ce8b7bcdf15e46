use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../tests/fixtures/pdf/{name}",
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string())
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn parse_fixture(name: &str) -> ParsedDocument {
    parse(&fixture(name), &Limits::default()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn simple_document_has_pages_title_headings_and_paragraphs() {
    let doc = parse_fixture("simple.pdf");
    assert_eq!(doc.page_count, Some(2));
    assert_eq!(doc.title.as_deref(), Some("Leave Policy Handbook"));
    assert!(doc.pages_without_text.is_empty());
    let headings: Vec<(&str, Option<u32>)> = doc
        .blocks
        .iter()
        .filter(|b| matches!(b.kind, BlockKind::Heading { level: 1 }))
        .map(|b| (b.text.as_str(), b.page))
        .collect();
    assert_eq!(
        headings,
        vec![("Annual Leave", Some(1)), ("Sick Leave", Some(2))]
    );
    let text = doc.plain_text();
    // Wrapped lines are joined into one paragraph, and the split word is mended.
    assert!(text.contains("ahead, and the manager"), "{text}");
    assert!(text.contains("further information from"), "{text}");
    assert!(doc.blocks.iter().all(|b| b.page.is_some()));
}

#[test]
fn two_columns_are_read_left_then_right() {
    let doc = parse_fixture("two_column.pdf");
    let text = doc.plain_text();
    let last_left = text.find("Leftword119").expect("left column");
    let first_right = text.find("Rightword0").expect("right column");
    assert!(last_left < first_right, "{text}");
    assert!(text.contains("Leftword10 Leftword11"), "{text}");
}

#[test]
fn chinese_cid_font_is_decoded() {
    let doc = parse_fixture("chinese.pdf");
    let text = doc.plain_text();
    assert!(text.contains("员工每年享有十五天带薪年假"), "{text}");
}

#[test]
fn ligatures_are_expanded() {
    let doc = parse_fixture("ligature.pdf");
    assert_eq!(doc.plain_text(), "The first office flow is efficient.");
}

#[test]
fn user_password_is_required() {
    let err = parse(&fixture("encrypted_user.pdf"), &Limits::default()).unwrap_err();
    assert_eq!(err, ParseError::PasswordRequired);
}

#[test]
fn owner_password_only_files_open() {
    let doc = parse_fixture("encrypted_owner.pdf");
    assert_eq!(doc.plain_text(), "Confidential salary bands for 2024.");
}

#[test]
fn scanned_document_reports_no_text_layer() {
    let doc = parse_fixture("scanned.pdf");
    assert!(doc.blocks.is_empty());
    assert_eq!(doc.pages_without_text, vec![1]);
    assert_eq!(doc.notices, vec![ParseNotice::NoTextLayer]);
}

#[test]
fn scanned_page_among_text_pages_is_listed() {
    let doc = parse_fixture("mixed_scan.pdf");
    assert_eq!(doc.page_count, Some(2));
    assert_eq!(doc.pages_without_text, vec![2]);
    assert_eq!(doc.notices, vec![ParseNotice::NoTextLayer]);
    assert_eq!(doc.plain_text(), "This page has a text layer.");
}

#[test]
fn garbage_and_truncated_files_are_invalid() {
    let err = parse(b"hello world", &Limits::default()).unwrap_err();
    assert!(matches!(err, ParseError::Invalid { format: "PDF", .. }));
    let bytes = fixture("simple.pdf");
    for cut in [9, 200, bytes.len() / 2] {
        // Whatever survives a cut must come back as a result, never a panic.
        match parse(&bytes[..cut], &Limits::default()) {
            Ok(_) | Err(ParseError::Invalid { .. }) => {}
            Err(e) => panic!("cut {cut}: unexpected {e}"),
        }
    }
    let err = parse(&bytes[..200], &Limits::default()).unwrap_err();
    assert!(matches!(err, ParseError::Invalid { .. }), "{err}");
}

#[test]
fn page_limit_is_enforced() {
    let limits = Limits {
        max_pages: 1,
        ..Limits::default()
    };
    let err = parse(&fixture("simple.pdf"), &limits).unwrap_err();
    assert!(matches!(err, ParseError::LimitExceeded(_)));
}

#[test]
fn shared_corpus_samples() {
    let root = format!(
        "{}/../../../shared/corpora/documents/pdf",
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string())
    );
    if !std::path::Path::new(&root).exists() {
        eprintln!("skipping: {root} is absent");
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "under CI=true a test may not skip"
        );
        return;
    }
    let read = |p: &str| std::fs::read(format!("{root}/{p}")).expect("corpus file");
    let doc = parse(&read("pypdf_resources/crazyones.pdf"), &Limits::default()).expect("crazyones");
    assert!(
        doc.plain_text().contains("Here’s to the crazy ones")
            || doc.plain_text().contains("Heres to the crazy ones")
    );
    let err = parse(
        &read("pypdf_resources/encryption/r6-both-passwords.pdf"),
        &Limits::default(),
    )
    .unwrap_err();
    assert_eq!(err, ParseError::PasswordRequired);
}

/// Throwaway corpus probe: `KH_PDF=file.pdf KH_OUT=out.txt cargo test -p knowhub-parse
/// pdf::tests::probe -- --ignored`.
#[test]
#[ignore]
#[allow(clippy::print_stdout)]
fn probe() {
    let Ok(path) = std::env::var("KH_PDF") else {
        return;
    };
    let bytes = std::fs::read(&path).expect("read");
    let t = std::time::Instant::now();
    let r = parse(&bytes, &Limits::default());
    let ms = t.elapsed().as_millis();
    match r {
        Ok(mut d) => {
            crate::normalize(&mut d, &Limits::default());
            let text = d
                .blocks
                .iter()
                .map(|b| match b.kind {
                    BlockKind::Heading { level } => format!("[H{level} p{:?}] {}", b.page, b.text),
                    _ => b.text.clone(),
                })
                .collect::<Vec<_>>()
                .join("\n");
            if let Ok(out) = std::env::var("KH_OUT") {
                std::fs::write(out, d.plain_text()).expect("write");
            }
            if let Ok(out) = std::env::var("KH_DEBUG") {
                std::fs::write(out, &text).expect("write");
            }
            println!(
                "RESULT ok pages={:?} chars={} blocks={} nontext={:?} title={:?} ms={ms}",
                d.page_count,
                d.text_len(),
                d.blocks.len(),
                d.pages_without_text.len(),
                d.title
            );
        }
        Err(e) => println!("RESULT err {} ({e}) ms={ms}", e.code()),
    }
}

#[test]
fn user_password_with_a_direct_encrypt_dictionary_is_required() {
    // lopdf loads such a file as an empty document; it must not read as "no text layer".
    let err = parse(&fixture("encrypted_user_direct.pdf"), &Limits::default()).unwrap_err();
    assert_eq!(err, ParseError::PasswordRequired);
}

#[test]
fn running_headers_and_page_numbers_are_dropped() {
    let doc = parse_fixture("running_heads.pdf");
    assert_eq!(doc.page_count, Some(4));
    let text = doc.plain_text();
    assert!(!text.contains("Contoso Travel Guidelines"), "{text}");
    assert!(!text.contains("of 4"), "{text}");
    for (n, topic) in ["flights", "hotels", "meals", "expenses"]
        .iter()
        .enumerate()
    {
        let n = n + 1;
        assert!(
            text.contains(&format!("Rule {n} covers {topic}.")),
            "{text}"
        );
        assert!(
            text.contains(&format!("see page {} of the appendix", n + 1)),
            "{text}"
        );
        let page = u32::try_from(n).unwrap();
        assert!(doc.blocks.iter().any(|b| b.page == Some(page)), "{n}");
    }
}

#[test]
fn demo_policy_loses_its_running_header_and_footer() {
    let path = format!(
        "{}/../../assets/demo/policies/security-policy.pdf",
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string())
    );
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let doc = parse(&bytes, &Limits::default()).unwrap();
    let text = doc.plain_text();
    assert!(!text.contains("(SEC-001 v2.1) - Internal"), "{text}");
    assert!(!text.contains("Page 1 of 3"), "{text}");
    assert!(!text.contains("Page 3 of 3"), "{text}");
    assert!(text.contains("Information Security Policy"), "{text}");
    assert!(text.contains("Policy SEC-001 - Version 2.1"), "{text}");
    assert!(
        text.contains("Next scheduled review: March 2025."),
        "{text}"
    );
}

#[test]
fn single_page_documents_keep_their_edge_lines() {
    // One page gives no evidence of what repeats; its text is left as it is.
    let doc = parse_fixture("ligature.pdf");
    assert_eq!(doc.plain_text(), "The first office flow is efficient.");
}
