//! PPTX tests, on decks built here from inline XML so each case shows the markup it exercises.

use super::*;
use crate::DocKind;
use crate::test_util::zip_of;

const P: &str = "http://schemas.openxmlformats.org/presentationml/2006/main";
const A: &str = "http://schemas.openxmlformats.org/drawingml/2006/main";
const R: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
const REL: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
const PKG_RELS: &str = "http://schemas.openxmlformats.org/package/2006/relationships";

fn run(bytes: &[u8]) -> Result<ParsedDocument, ParseError> {
    crate::parse(DocKind::Pptx, bytes, &Limits::default())
}

fn texts_of(doc: &ParsedDocument) -> Vec<&str> {
    doc.blocks.iter().map(|b| b.text.as_str()).collect()
}

fn blocks(doc: &ParsedDocument) -> Vec<(BlockKind, Option<u32>, &str)> {
    doc.blocks
        .iter()
        .map(|b| (b.kind, b.page, b.text.as_str()))
        .collect()
}

/// A text shape: a placeholder of `ph` type (`Some("")` for the default body placeholder),
/// or a text box at (x, y).
fn shape(ph: Option<&str>, at: Option<(i64, i64)>, paras: &[&str]) -> String {
    let nvpr = match ph {
        Some("") => "<p:nvPr><p:ph idx=\"1\"/></p:nvPr>".to_string(),
        Some(t) => format!("<p:nvPr><p:ph type=\"{t}\"/></p:nvPr>"),
        None => "<p:nvPr/>".to_string(),
    };
    let xfrm = at
        .map(|(x, y)| {
            format!("<a:xfrm><a:off x=\"{x}\" y=\"{y}\"/><a:ext cx=\"100\" cy=\"100\"/></a:xfrm>")
        })
        .unwrap_or_default();
    let body: String = paras.iter().map(|p| format!("<a:p>{p}</a:p>")).collect();
    format!(
        "<p:sp><p:nvSpPr><p:cNvPr id=\"2\" name=\"s\"/><p:cNvSpPr/>{nvpr}</p:nvSpPr>\
         <p:spPr>{xfrm}</p:spPr><p:txBody><a:bodyPr/>{body}</p:txBody></p:sp>"
    )
}

fn run_text(text: &str) -> String {
    format!("<a:r><a:t>{text}</a:t></a:r>")
}

fn slide(shapes: &str, hidden: bool) -> String {
    let show = if hidden { " show=\"0\"" } else { "" };
    format!(
        "<?xml version=\"1.0\"?><p:sld xmlns:p=\"{P}\" xmlns:a=\"{A}\" xmlns:r=\"{R}\"{show}>\
         <p:cSld><p:spTree><p:nvGrpSpPr/><p:grpSpPr/>{shapes}</p:spTree></p:cSld></p:sld>"
    )
}

fn notes(text: &str) -> String {
    format!(
        "<?xml version=\"1.0\"?><p:notes xmlns:p=\"{P}\" xmlns:a=\"{A}\"><p:cSld><p:spTree>{}{}</p:spTree></p:cSld></p:notes>",
        shape(Some("sldImg"), None, &[]),
        shape(Some("body"), None, &[&run_text(text)])
    )
}

/// A deck of `slides` (part name, XML), listed in `order` (indexes into `slides`), with
/// extra parts (notes, core properties) and per-slide relationships.
fn deck(slides: &[(&str, String)], order: &[usize], extra: &[(&str, String)]) -> Vec<u8> {
    let ids: String = order
        .iter()
        .enumerate()
        .map(|(i, s)| format!("<p:sldId id=\"{}\" r:id=\"rId{}\"/>", 256 + i, s + 10))
        .collect();
    let presentation = format!(
        "<?xml version=\"1.0\"?><p:presentation xmlns:p=\"{P}\" xmlns:r=\"{R}\"><p:sldIdLst>{ids}</p:sldIdLst></p:presentation>"
    );
    let rels: String = slides
        .iter()
        .enumerate()
        .map(|(i, (name, _))| {
            format!(
                "<Relationship Id=\"rId{}\" Type=\"{REL}/slide\" Target=\"{}\"/>",
                i + 10,
                name.trim_start_matches("ppt/")
            )
        })
        .collect();
    let pres_rels = format!(
        "<?xml version=\"1.0\"?><Relationships xmlns=\"{PKG_RELS}\">{rels}</Relationships>"
    );
    let root_rels = format!(
        "<?xml version=\"1.0\"?><Relationships xmlns=\"{PKG_RELS}\"><Relationship Id=\"rId1\" Type=\"{REL}/officeDocument\" Target=\"ppt/presentation.xml\"/></Relationships>"
    );
    let mut entries: Vec<(&str, &[u8])> = vec![
        ("_rels/.rels", root_rels.as_bytes()),
        ("ppt/presentation.xml", presentation.as_bytes()),
        ("ppt/_rels/presentation.xml.rels", pres_rels.as_bytes()),
    ];
    for (name, xml) in slides {
        entries.push((name, xml.as_bytes()));
    }
    for (name, xml) in extra {
        entries.push((name, xml.as_bytes()));
    }
    zip_of(&entries)
}

fn notes_rels(target: &str) -> String {
    format!(
        "<?xml version=\"1.0\"?><Relationships xmlns=\"{PKG_RELS}\"><Relationship Id=\"rId2\" Type=\"{REL}/notesSlide\" Target=\"{target}\"/></Relationships>"
    )
}

#[test]
fn slides_are_pages_in_the_presentations_order_with_titles_bullets_and_notes() {
    let first = slide(
        &[
            shape(Some("title"), None, &[&run_text("Leave policy")]),
            shape(
                Some(""),
                None,
                &[
                    &run_text("15 days a year"),
                    &format!("<a:pPr><a:buNone/></a:pPr>{}", run_text("Ask your manager")),
                ],
            ),
            shape(Some("sldNum"), None, &[&run_text("1")]),
            shape(Some("ftr"), None, &[&run_text("Confidential")]),
        ]
        .concat(),
        false,
    );
    let second = slide(
        &[
            shape(Some("ctrTitle"), None, &[&run_text("年假")]),
            shape(
                None,
                Some((0, 0)),
                &[&format!("{}<a:br/>{}", run_text("每年"), run_text("15 天"))],
            ),
        ]
        .concat(),
        false,
    );
    let hidden = slide(&shape(Some("title"), None, &[&run_text("Draft")]), true);
    // slide2.xml is listed first: the list decides the order, not the part names.
    let bytes = deck(
        &[
            ("ppt/slides/slide1.xml", first),
            ("ppt/slides/slide2.xml", second),
            ("ppt/slides/slide3.xml", hidden),
        ],
        &[1, 0, 2],
        &[
            (
                "ppt/slides/_rels/slide1.xml.rels",
                notes_rels("../notesSlides/notesSlide1.xml"),
            ),
            (
                "ppt/notesSlides/notesSlide1.xml",
                notes("Mention the carry-over rule."),
            ),
        ],
    );
    let doc = run(&bytes).unwrap();
    assert_eq!(
        blocks(&doc),
        vec![
            (BlockKind::Heading { level: 1 }, Some(1), "年假"),
            (BlockKind::Paragraph, Some(1), "每年\n15 天"),
            (BlockKind::Heading { level: 1 }, Some(2), "Leave policy"),
            (BlockKind::ListItem, Some(2), "15 days a year"),
            (BlockKind::Paragraph, Some(2), "Ask your manager"),
            (BlockKind::Note, Some(2), "Mention the carry-over rule."),
        ]
    );
    assert_eq!(doc.title.as_deref(), Some("年假"));
    assert_eq!(doc.page_count, Some(3));
}

#[test]
fn text_boxes_read_top_to_bottom_then_left_to_right() {
    let shapes = [
        shape(None, Some((5000, 100)), &[&run_text("right column")]),
        shape(None, Some((0, 900)), &[&run_text("footnote")]),
        shape(None, Some((0, 100)), &[&run_text("left column")]),
        shape(Some("title"), None, &[&run_text("Plan")]),
    ]
    .concat();
    let doc = run(&deck(
        &[("ppt/slides/slide1.xml", slide(&shapes, false))],
        &[0],
        &[],
    ))
    .unwrap();
    let texts = texts_of(&doc);
    assert_eq!(texts, ["Plan", "left column", "right column", "footnote"]);
}

#[test]
fn tables_become_rows_named_by_their_header() {
    let cell = |t: &str| {
        format!(
            "<a:tc><a:txBody><a:bodyPr/><a:p>{}</a:p></a:txBody></a:tc>",
            run_text(t)
        )
    };
    let row = |cells: &[&str]| {
        format!(
            "<a:tr h=\"1\">{}</a:tr>",
            cells.iter().map(|c| cell(c)).collect::<String>()
        )
    };
    let table = |first_row: bool| {
        format!(
            "<p:graphicFrame><p:nvGraphicFramePr/><p:xfrm><a:off x=\"0\" y=\"0\"/></p:xfrm><a:graphic><a:graphicData>\
             <a:tbl><a:tblPr firstRow=\"{}\"/>{}{}{}</a:tbl></a:graphicData></a:graphic></p:graphicFrame>",
            u8::from(first_row),
            row(&["Region", "Sales"]),
            row(&["North", "120"]),
            row(&["South", ""]),
        )
    };
    let doc = run(&deck(
        &[("ppt/slides/slide1.xml", slide(&table(true), false))],
        &[0],
        &[],
    ))
    .unwrap();
    assert_eq!(
        blocks(&doc),
        vec![
            (BlockKind::TableRow, Some(1), "Region: North; Sales: 120"),
            (BlockKind::TableRow, Some(1), "Region: South"),
        ]
    );
    let doc = run(&deck(
        &[("ppt/slides/slide1.xml", slide(&table(false), false))],
        &[0],
        &[],
    ))
    .unwrap();
    let texts = texts_of(&doc);
    assert_eq!(texts, ["Region | Sales", "North | 120", "South"]);
}

#[test]
fn legacy_encrypted_and_mislabelled_files_say_what_they_are() {
    let mut ole = OLE_MAGIC.to_vec();
    ole.extend_from_slice(&[0; 600]);
    let err = run(&ole).unwrap_err().to_string();
    assert!(err.contains(".ppt") && err.contains("re-save"), "{err}");

    let mut encrypted = OLE_MAGIC.to_vec();
    encrypted.extend("EncryptedPackage".encode_utf16().flat_map(u16::to_le_bytes));
    assert!(matches!(run(&encrypted), Err(ParseError::PasswordRequired)));

    let word = zip_of(&[
        (
            "_rels/.rels",
            format!(
                "<?xml version=\"1.0\"?><Relationships xmlns=\"{PKG_RELS}\"><Relationship Id=\"rId1\" Type=\"{REL}/officeDocument\" Target=\"word/document.xml\"/></Relationships>"
            )
            .as_bytes(),
        ),
        ("word/document.xml", b"<w:document xmlns:w=\"x\"><w:body/></w:document>"),
    ]);
    let err = run(&word).unwrap_err().to_string();
    assert!(err.contains("Word document renamed"), "{err}");

    let err = run(b"not a zip at all").unwrap_err();
    assert!(matches!(err, ParseError::Invalid { .. }), "{err}");
}

#[test]
fn a_missing_or_broken_slide_loses_only_that_slide() {
    let good = slide(&shape(Some("title"), None, &[&run_text("Kept")]), false);
    let bytes = deck(
        &[
            ("ppt/slides/slide1.xml", "<p:sld><unclosed".to_string()),
            ("ppt/slides/slide2.xml", good),
        ],
        &[0, 1],
        &[],
    );
    let doc = run(&bytes).unwrap();
    assert_eq!(
        blocks(&doc),
        vec![(BlockKind::Heading { level: 1 }, Some(2), "Kept")]
    );
}
