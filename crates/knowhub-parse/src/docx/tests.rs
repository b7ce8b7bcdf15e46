//! DOCX tests. Most fixtures are built here from inline XML, so each case shows exactly the
//! markup it exercises; binary fixtures (an encrypted package) come from
//! `tests/fixtures/make_office_fixtures.py`.

use super::*;
use crate::{DocKind, ParseError};

const W: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";
const STRICT_W: &str = "http://purl.oclc.org/ooxml/wordprocessingml/main";
const DOC_REL: &str =
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument";
const R: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";

use crate::test_util::zip_of;

fn root_rels(target: &str) -> String {
    format!(
        r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="{DOC_REL}" Target="{target}"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/></Relationships>"#
    )
}

fn document(body: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="{W}" xmlns:r="{R}" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" xmlns:wps="x" xmlns:v="urn:schemas-microsoft-com:vml"><w:body>{body}<w:sectPr/></w:body></w:document>"#
    )
}

/// A DOCX with `document.xml` holding `body` plus extra parts.
fn docx(body: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let rels = root_rels("word/document.xml");
    let doc = document(body);
    let mut entries: Vec<(&str, &[u8])> = vec![
        ("_rels/.rels", rels.as_bytes()),
        ("word/document.xml", doc.as_bytes()),
    ];
    for (n, d) in extra {
        entries.push((n, d.as_bytes()));
    }
    zip_of(&entries)
}

fn p(text: &str) -> String {
    format!("<w:p><w:r><w:t>{text}</w:t></w:r></w:p>")
}

fn styled(style: &str, text: &str) -> String {
    format!(r#"<w:p><w:pPr><w:pStyle w:val="{style}"/></w:pPr><w:r><w:t>{text}</w:t></w:r></w:p>"#)
}

fn run(bytes: &[u8]) -> Result<ParsedDocument, ParseError> {
    crate::parse(DocKind::Docx, bytes, &Limits::default())
}

fn texts(doc: &ParsedDocument) -> Vec<(BlockKind, &str)> {
    doc.blocks
        .iter()
        .map(|b| (b.kind, b.text.as_str()))
        .collect()
}

const STYLES: &str = r#"<w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
<w:style w:type="paragraph" w:styleId="Normal"><w:name w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="1"><w:name w:val="标题 1"/></w:style>
<w:style w:type="paragraph" w:styleId="a3"><w:name w:val="heading 2"/></w:style>
<w:style w:type="paragraph" w:styleId="Custom"><w:name w:val="My Chapter"/><w:pPr><w:outlineLvl w:val="2"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="Derived"><w:name w:val="Derived"/><w:basedOn w:val="Custom"/></w:style>
<w:style w:type="paragraph" w:styleId="Loop1"><w:name w:val="Loop1"/><w:basedOn w:val="Loop2"/></w:style>
<w:style w:type="paragraph" w:styleId="Loop2"><w:name w:val="Loop2"/><w:basedOn w:val="Loop1"/></w:style>
<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/></w:style>
<w:style w:type="paragraph" w:styleId="ListBullet"><w:name w:val="List Bullet"/><w:pPr><w:numPr><w:numId w:val="1"/></w:numPr></w:pPr></w:style>
</w:styles>"#;

const NUMBERING: &str = r#"<w:numbering xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
<w:abstractNum w:abstractNumId="10"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="bullet"/><w:lvlText w:val="&#61623;"/></w:lvl></w:abstractNum>
<w:abstractNum w:abstractNumId="20"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl><w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="%1.%2)"/></w:lvl></w:abstractNum>
<w:num w:numId="1"><w:abstractNumId w:val="10"/></w:num>
<w:num w:numId="2"><w:abstractNumId w:val="20"/></w:num>
</w:numbering>"#;

fn list_item(num: u32, lvl: u32, text: &str) -> String {
    format!(
        r#"<w:p><w:pPr><w:numPr><w:ilvl w:val="{lvl}"/><w:numId w:val="{num}"/></w:numPr></w:pPr><w:r><w:t>{text}</w:t></w:r></w:p>"#
    )
}

#[test]
fn headings_title_and_lists_follow_styles() {
    let body = [
        styled("Title", "Annual Report"),
        styled("1", "第一章"),
        styled("a3", "Scope"),
        styled("Derived", "Deep"),
        styled("Loop1", "Cyclic styles are plain"),
        styled("Heading4", "No styles entry"),
        r#"<w:p><w:pPr><w:outlineLvl w:val="1"/></w:pPr><w:r><w:t>Direct outline</w:t></w:r></w:p>"#
            .to_string(),
        list_item(1, 0, "apple"),
        styled("ListBullet", "banana"),
        list_item(2, 0, "first"),
        list_item(2, 1, "sub"),
        list_item(2, 0, "second"),
        list_item(0, 0, "numbering removed"),
    ]
    .concat();
    let doc = run(&docx(
        &body,
        &[
            ("word/styles.xml", STYLES),
            ("word/numbering.xml", NUMBERING),
        ],
    ))
    .unwrap();
    assert_eq!(doc.title.as_deref(), Some("Annual Report"));
    assert_eq!(
        texts(&doc),
        vec![
            (BlockKind::Heading { level: 1 }, "Annual Report"),
            (BlockKind::Heading { level: 1 }, "第一章"),
            (BlockKind::Heading { level: 2 }, "Scope"),
            (BlockKind::Heading { level: 3 }, "Deep"),
            (BlockKind::Paragraph, "Cyclic styles are plain"),
            (BlockKind::Heading { level: 4 }, "No styles entry"),
            (BlockKind::Heading { level: 2 }, "Direct outline"),
            (BlockKind::ListItem, "• apple"),
            (BlockKind::ListItem, "• banana"),
            (BlockKind::ListItem, "1. first"),
            (BlockKind::ListItem, "1.a) sub"),
            (BlockKind::ListItem, "2. second"),
            (BlockKind::Paragraph, "numbering removed"),
        ]
    );
}

#[test]
fn core_properties_title_wins() {
    let core = r#"<cp:coreProperties xmlns:cp="c" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Handbook 2024</dc:title></cp:coreProperties>"#;
    let doc = run(&docx(
        &styled("Title", "Body title"),
        &[("docProps/core.xml", core)],
    ))
    .unwrap();
    assert_eq!(doc.title.as_deref(), Some("Handbook 2024"));
    let none = run(&docx(&p("plain"), &[])).unwrap();
    assert_eq!(none.title, None);
}

#[test]
fn inline_content_table() {
    // (body markup, expected text of the single block)
    let cases: &[(&str, &str)] = &[
        (
            r#"<w:p><w:hyperlink r:id="rId9"><w:r><w:t>Know</w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t>Hub</w:t></w:r></w:hyperlink><w:r><w:t xml:space="preserve"> site</w:t></w:r></w:p>"#,
            "KnowHub site",
        ),
        (
            r#"<w:p><w:r><w:t>a</w:t><w:tab/><w:t>b</w:t><w:br/><w:t>c</w:t></w:r></w:p>"#,
            "a\tb\nc",
        ),
        (
            r#"<w:p><w:r><w:t xml:space="preserve">keep </w:t></w:r><w:del><w:r><w:delText>gone</w:delText></w:r></w:del><w:ins><w:r><w:t>new</w:t></w:r></w:ins><w:moveFrom><w:r><w:t>moved</w:t></w:r></w:moveFrom></w:p>"#,
            "keep new",
        ),
        (
            r#"<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> HYPERLINK "http://x" </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>shown</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>"#,
            "shown",
        ),
        (
            r#"<w:p><w:fldSimple w:instr="PAGE"><w:r><w:t>7</w:t></w:r></w:fldSimple><w:sdt><w:sdtContent><w:r><w:t> in control</w:t></w:r></w:sdtContent></w:sdt></w:p>"#,
            "7 in control",
        ),
        (
            r#"<w:p><w:pPr><w:tabs><w:tab w:val="left" w:pos="720"/></w:tabs></w:pPr><w:r><w:t>tab stops are not tabs</w:t></w:r></w:p>"#,
            "tab stops are not tabs",
        ),
        (
            r#"<w:p><w:r><w:t>x &amp; y &lt; z</w:t></w:r></w:p>"#,
            "x & y < z",
        ),
    ];
    for (body, want) in cases {
        let doc = run(&docx(body, &[])).unwrap();
        assert_eq!(doc.blocks.len(), 1, "{body}");
        assert_eq!(doc.blocks[0].text, *want, "{body}");
    }
}

#[test]
fn text_boxes_are_notes_without_fallback_duplicates() {
    let body = r#"<w:p><w:r><w:t>Anchor</w:t></w:r><w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><wps:wsp><wps:txbx><w:txbxContent><w:p><w:r><w:t>Datum plane</w:t></w:r></w:p></w:txbxContent></wps:txbx></wps:wsp></w:drawing></mc:Choice><mc:Fallback><w:pict><v:shape><v:textbox><w:txbxContent><w:p><w:r><w:t>Datum plane</w:t></w:r></w:p></w:txbxContent></v:textbox></v:shape></w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>
<w:p><w:r><w:pict><v:shape><v:textbox><w:txbxContent><w:p><w:r><w:t>VML only</w:t></w:r></w:p></w:txbxContent></v:textbox></v:shape></w:pict></w:r></w:p>"#;
    let doc = run(&docx(body, &[])).unwrap();
    assert_eq!(
        texts(&doc),
        vec![
            (BlockKind::Paragraph, "Anchor"),
            (BlockKind::Note, "Datum plane"),
            (BlockKind::Note, "VML only"),
        ]
    );
}

fn tc(text: &str) -> String {
    format!("<w:tc>{}</w:tc>", p(text))
}

fn tr(cells: &[&str]) -> String {
    format!(
        "<w:tr>{}</w:tr>",
        cells.iter().map(|c| tc(c)).collect::<String>()
    )
}

#[test]
fn tables_are_header_aware_rows() {
    let header_table = format!(
        "<w:tbl><w:tblPr/>{}{}{}</w:tbl>",
        tr(&["Name", "Days"]),
        tr(&["Annual leave", "15"]),
        tr(&["Sick leave", ""]),
    );
    let numeric_table = format!("<w:tbl>{}{}</w:tbl>", tr(&["1", "2"]), tr(&["3", "4"]));
    let merged = r#"<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Region</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>City</w:t></w:r></w:p></w:tc></w:tr>
<w:tr><w:tc><w:tcPr><w:vMerge w:val="restart"/></w:tcPr><w:p><w:r><w:t>North</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Oslo</w:t></w:r></w:p></w:tc></w:tr>
<w:tr><w:tc><w:tcPr><w:vMerge/></w:tcPr><w:p/></w:tc><w:tc><w:p><w:r><w:t>Bergen</w:t></w:r></w:p></w:tc></w:tr>
<w:tr><w:tc><w:tcPr><w:gridSpan w:val="2"/></w:tcPr><w:p><w:r><w:t>Total</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"#;
    let nested = format!(
        "<w:tbl>{}<w:tr>{}<w:tc><w:tbl>{}{}</w:tbl><w:p/></w:tc></w:tr></w:tbl>",
        tr(&["Item", "Parts"]),
        tc("Bike"),
        tr(&["wheel", "2"]),
        tr(&["bell", "1"]),
    );
    let layout = format!(
        "<w:tbl><w:tr><w:tc>{}{}</w:tc></w:tr></w:tbl>",
        styled("Heading1", "Boxed heading"),
        p("Boxed text")
    );
    let body = [
        header_table,
        numeric_table,
        merged.to_string(),
        nested,
        layout,
    ]
    .concat();
    let doc = run(&docx(&body, &[])).unwrap();
    assert_eq!(
        texts(&doc),
        vec![
            (BlockKind::TableRow, "Name: Annual leave; Days: 15"),
            (BlockKind::TableRow, "Name: Sick leave"),
            (BlockKind::TableRow, "1 | 2"),
            (BlockKind::TableRow, "3 | 4"),
            (BlockKind::TableRow, "Region: North; City: Oslo"),
            (BlockKind::TableRow, "Region: North; City: Bergen"),
            (BlockKind::TableRow, "Region: Total"),
            (
                BlockKind::TableRow,
                "Item: Bike; Parts: wheel | 2 / bell | 1"
            ),
            (BlockKind::Heading { level: 1 }, "Boxed heading"),
            (BlockKind::Paragraph, "Boxed text"),
        ]
    );
}

#[test]
fn notes_and_comments_become_note_blocks() {
    let footnotes = format!(
        r#"<w:footnotes xmlns:w="{W}"><w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote><w:footnote w:type="continuationSeparator" w:id="0"><w:p><w:r><w:t>sep</w:t></w:r></w:p></w:footnote><w:footnote w:id="1"><w:p><w:r><w:footnoteRef/></w:r><w:r><w:t xml:space="preserve"> A footnote.</w:t></w:r></w:p></w:footnote></w:footnotes>"#
    );
    let endnotes = format!(
        r#"<w:endnotes xmlns:w="{W}"><w:endnote w:id="2"><w:p><w:r><w:t>An endnote.</w:t></w:r></w:p></w:endnote></w:endnotes>"#
    );
    let comments = format!(
        r#"<w:comments xmlns:w="{W}"><w:comment w:id="0" w:author="Ann"><w:p><w:r><w:t>Check this.</w:t></w:r></w:p></w:comment></w:comments>"#
    );
    let rels = r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="a" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/footnotes" Target="notes/fn.xml"/>
<Relationship Id="b" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/endnotes" Target="/word/en.xml"/>
<Relationship Id="c" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/comments" Target="comments.xml"/>
<Relationship Id="d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="http://x" TargetMode="External"/></Relationships>"#;
    let body = r#"<w:p><w:r><w:t>Text</w:t></w:r><w:r><w:footnoteReference w:id="1"/></w:r><w:commentRangeStart w:id="0"/><w:r><w:commentReference w:id="0"/></w:r></w:p>"#;
    let doc = run(&docx(
        body,
        &[
            ("word/_rels/document.xml.rels", rels),
            ("word/notes/fn.xml", &footnotes),
            ("word/en.xml", &endnotes),
            ("word/comments.xml", &comments),
        ],
    ))
    .unwrap();
    assert_eq!(
        texts(&doc),
        vec![
            (BlockKind::Paragraph, "Text"),
            (BlockKind::Note, "A footnote."),
            (BlockKind::Note, "An endnote."),
            (BlockKind::Note, "Check this."),
        ]
    );
}

#[test]
fn strict_ooxml_bom_and_renamed_parts() {
    let strict = format!(
        "\u{feff}<?xml version=\"1.0\"?><w:document xmlns:w=\"{STRICT_W}\"><w:body><w:p><w:r><w:t>Test</w:t></w:r></w:p></w:body></w:document>"
    );
    let rels = r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://purl.oclc.org/ooxml/officeDocument/relationships/officeDocument" Target="/content/main.xml"/></Relationships>"#;
    let bytes = zip_of(&[
        ("_rels/.rels", rels.as_bytes()),
        ("content/main.xml", strict.as_bytes()),
    ]);
    let doc = run(&bytes).unwrap();
    assert_eq!(doc.plain_text(), "Test");

    // No relationships at all: the content-type override still finds the part.
    let types = r#"<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/w/doc.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#;
    let doc_xml = document(&p("via content types"));
    let bytes = zip_of(&[
        ("[Content_Types].xml", types.as_bytes()),
        ("w/doc.xml", doc_xml.as_bytes()),
    ]);
    assert_eq!(run(&bytes).unwrap().plain_text(), "via content types");
}

#[test]
fn broken_and_foreign_files_fail_with_one_line_reasons() {
    let valid = docx(&p("hello"), &[]);
    let not_docx = zip_of(&[("hello.txt", b"hello")]);
    let xlsx_like = zip_of(&[
        (
            "[Content_Types].xml",
            br#"<Types><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>"#,
        ),
        ("_rels/.rels", root_rels("xl/workbook.xml").as_bytes()),
        ("xl/workbook.xml", b"<workbook/>"),
    ]);
    let not_word = zip_of(&[
        ("_rels/.rels", root_rels("word/document.xml").as_bytes()),
        ("word/document.xml", b"<html><body>hi</body></html>"),
    ]);
    let malformed = zip_of(&[
        ("_rels/.rels", root_rels("word/document.xml").as_bytes()),
        (
            "word/document.xml",
            b"<w:document><w:body><w:p><w:r><w:t>x</w:t></w:r></w:p><!-- unterminated",
        ),
    ]);
    let mut legacy_doc = OLE_MAGIC.to_vec();
    legacy_doc.extend_from_slice(&[0u8; 600]);
    // (input, expected error code, substring of the message)
    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        (
            "zip without document",
            not_docx,
            "invalid",
            "could not find main document part",
        ),
        ("spreadsheet renamed", xlsx_like, "invalid", "spreadsheet"),
        (
            "wrong root element",
            not_word,
            "invalid",
            "not a Word document",
        ),
        ("malformed xml", malformed, "invalid", "malformed XML"),
        (
            "truncated",
            valid[..valid.len() / 2].to_vec(),
            "invalid",
            "not a ZIP container",
        ),
        ("empty", Vec::new(), "invalid", "ZIP"),
        ("legacy doc", legacy_doc, "invalid", ".doc"),
        ("rtf", b"{\\rtf1\\ansi hello}".to_vec(), "invalid", "RTF"),
    ];
    for (name, bytes, code, needle) in cases {
        let err = run(&bytes).expect_err(name);
        assert_eq!(err.code(), code, "{name}: {err}");
        let msg = err.to_string();
        assert!(msg.contains(needle), "{name}: {msg}");
        assert!(!msg.contains('\n'), "{name}: {msg}");
    }
}

#[test]
fn zip_bombs_and_deep_nesting_are_refused() {
    // 20 MB of one repeated byte compresses ~1000:1, past the ratio limit.
    let mut big = document("").into_bytes();
    big.extend(std::iter::repeat_n(b' ', 20 << 20));
    let rels = root_rels("word/document.xml");
    let bomb = zip_of(&[
        ("_rels/.rels", rels.as_bytes()),
        ("word/document.xml", &big),
    ]);
    assert_eq!(run(&bomb).unwrap_err().code(), "limit_exceeded");

    let deep = document(&format!(
        "{}{}",
        "<w:sdt><w:sdtContent>".repeat(400),
        "</w:sdtContent></w:sdt>".repeat(400)
    ));
    let bytes = zip_of(&[
        ("_rels/.rels", rels.as_bytes()),
        ("word/document.xml", deep.as_bytes()),
    ]);
    let err = run(&bytes).unwrap_err();
    assert_eq!(err.code(), "limit_exceeded", "{err}");
}

#[test]
fn encrypted_package_requires_password() {
    let mut fake = OLE_MAGIC.to_vec();
    fake.extend_from_slice(&[0u8; 100]);
    fake.extend("EncryptedPackage".encode_utf16().flat_map(u16::to_le_bytes));
    assert_eq!(run(&fake).unwrap_err(), ParseError::PasswordRequired);

    let real = include_bytes!("../../../../tests/fixtures/docx/encrypted.docx");
    assert_eq!(run(real).unwrap_err(), ParseError::PasswordRequired);
}

/// Runs over the shared evaluation corpus when it is present (it is not in the repository).
#[test]
fn shared_corpus_smoke() {
    let dir = std::path::Path::new(
        &std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("../../../shared/corpora/documents/docx/mammoth.js_test-data");
    if !dir.is_dir() {
        println!("skipping: {} not present", dir.display());
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "under CI=true a test may not skip"
        );
        return;
    }
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let cases = [
        ("single-paragraph.docx", "Walking on imported air"),
        ("text-box.docx", "Datum plane"),
        ("strict-format.docx", "Test"),
        ("utf8-bom.docx", "This XML has a byte order mark."),
    ];
    for (name, needle) in cases {
        let doc = run(&read(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            doc.plain_text().contains(needle),
            "{name}: {}",
            doc.plain_text()
        );
    }
    for name in ["empty.zip", "hello.zip"] {
        let err = run(&read(name)).unwrap_err();
        assert!(
            err.to_string()
                .contains("could not find main document part"),
            "{err}"
        );
    }
}
