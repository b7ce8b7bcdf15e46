//! Spreadsheet tests over fixtures from `tests/fixtures/make_office_fixtures.py`, plus
//! archives built here for the hostile cases.

use super::*;

const TYPED_XLSX: &[u8] = include_bytes!("../../../../tests/fixtures/sheets/typed.xlsx");
const TYPED_XLS: &[u8] = include_bytes!("../../../../tests/fixtures/sheets/typed.xls");
const TYPED_ODS: &[u8] = include_bytes!("../../../../tests/fixtures/sheets/typed.ods");
const SPARSE_HUGE: &[u8] = include_bytes!("../../../../tests/fixtures/sheets/sparse_huge.xlsx");
const ENCRYPTED: &[u8] = include_bytes!("../../../../tests/fixtures/sheets/encrypted.xlsx");

fn run(kind: DocKind, bytes: &[u8]) -> Result<ParsedDocument, ParseError> {
    crate::parse(kind, bytes, &Limits::default())
}

fn texts(doc: &ParsedDocument) -> Vec<(BlockKind, &str)> {
    doc.blocks
        .iter()
        .map(|b| (b.kind, b.text.as_str()))
        .collect()
}

use crate::test_util::zip_of;

#[test]
fn xlsx_rows_header_types_and_merges() {
    let doc = run(DocKind::Xlsx, TYPED_XLSX).unwrap();
    assert_eq!(doc.title.as_deref(), Some("Staff list"));
    assert_eq!(
        texts(&doc),
        vec![
            (BlockKind::Heading { level: 1 }, "Staff"),
            (BlockKind::Paragraph, "Staff directory"),
            (
                BlockKind::TableRow,
                "Name: Ann; Age: 34; Salary: 5200.5; Active: TRUE; Started: 2020-03-01; Name_2: dup; H: x; Team: Team A"
            ),
            (
                BlockKind::TableRow,
                "Name: Bob; Age: 41; Salary: 4800; Active: FALSE; Started: 2019-07-15T09:30:00; Name_2: dup2; Note: ok; Team: Team A"
            ),
            (
                BlockKind::TableRow,
                "Name: Cyd; Salary: 6100.25; Active: TRUE; Team: Team B"
            ),
            (BlockKind::Heading { level: 1 }, "Numbers"),
            (BlockKind::TableRow, "A: 1; B: 1.5; C: t1"),
            (BlockKind::TableRow, "A: 2; B: 3; C: t2"),
            (BlockKind::TableRow, "A: 3; B: 4.5; C: t3"),
            (BlockKind::Heading { level: 1 }, "Empty"),
        ]
    );
    let staff = &doc.tables[0];
    let cols: Vec<(&str, ColumnType)> = staff
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.ty))
        .collect();
    assert_eq!(
        cols,
        vec![
            ("Name", ColumnType::Text),
            ("Age", ColumnType::Integer),
            ("Salary", ColumnType::Real),
            ("Active", ColumnType::Boolean),
            ("Started", ColumnType::DateTime),
            ("Name_2", ColumnType::Text),
            ("H", ColumnType::Text),
            ("Note", ColumnType::Text),
            ("Team", ColumnType::Text),
        ]
    );
    assert_eq!(
        staff.rows[0],
        vec![
            Cell::Text("Ann".into()),
            Cell::Int(34),
            Cell::Float(5200.5),
            Cell::Bool(true),
            Cell::Text("2020-03-01".into()),
            Cell::Text("dup".into()),
            Cell::Text("x".into()),
            Cell::Null, // #DIV/0!
            Cell::Text("Team A".into()),
        ]
    );
    assert_eq!(staff.rows.len(), 3);
    assert_eq!(doc.tables[1].columns[0].ty, ColumnType::Integer);
    assert_eq!(doc.tables.len(), 2, "empty sheets get no table");
}

#[test]
fn xls_and_ods_read_like_xlsx() {
    let xls = run(DocKind::Xls, TYPED_XLS).unwrap();
    assert_eq!(
        texts(&xls),
        vec![
            (BlockKind::Heading { level: 1 }, "People"),
            (
                BlockKind::TableRow,
                "Name: Ann; Score: 91; Joined: 2021-05-04"
            ),
            (
                BlockKind::TableRow,
                "Name: Bob; Score: 78.5; Joined: 2022-01-31"
            ),
        ]
    );
    let tys: Vec<ColumnType> = xls.tables[0].columns.iter().map(|c| c.ty).collect();
    assert_eq!(
        tys,
        vec![ColumnType::Text, ColumnType::Real, ColumnType::DateTime]
    );

    let ods = run(DocKind::Ods, TYPED_ODS).unwrap();
    assert_eq!(ods.title.as_deref(), Some("Norwegian cities"));
    assert_eq!(
        texts(&ods),
        vec![
            (BlockKind::Heading { level: 1 }, "Cities"),
            (
                BlockKind::TableRow,
                "City: Oslo; Population: 709037; Founded: 1040-01-01; Capital: TRUE"
            ),
            (
                BlockKind::TableRow,
                "City: Bergen; Population: 289330; Founded: 1070-01-01; Capital: FALSE"
            ),
        ]
    );
    let tys: Vec<ColumnType> = ods.tables[0].columns.iter().map(|c| c.ty).collect();
    assert_eq!(
        tys,
        vec![
            ColumnType::Text,
            ColumnType::Integer,
            ColumnType::DateTime,
            ColumnType::Boolean
        ]
    );
}

#[test]
fn content_wins_over_a_wrong_extension() {
    // An XLSX named .xls and an ODS named .xlsx still parse.
    assert_eq!(run(DocKind::Xls, TYPED_XLSX).unwrap().tables.len(), 2);
    assert_eq!(run(DocKind::Xlsx, TYPED_ODS).unwrap().tables.len(), 1);
}

#[test]
fn huge_declared_range_with_few_cells_is_cheap() {
    let doc = run(DocKind::Xlsx, SPARSE_HUGE).unwrap();
    assert_eq!(
        texts(&doc),
        vec![
            (BlockKind::Heading { level: 1 }, "Sparse"),
            (BlockKind::TableRow, "Key: alpha; Value: 1"),
            (BlockKind::TableRow, "XFD: far away"),
        ]
    );
    assert_eq!(doc.tables[0].columns.len(), 3);
}

#[test]
fn cell_limit_truncates_with_notice() {
    let limits = Limits {
        max_cells: 12,
        ..Limits::default()
    };
    let doc = crate::parse(DocKind::Xlsx, TYPED_XLSX, &limits).unwrap();
    assert!(doc.notices.contains(&ParseNotice::Truncated));
    assert_eq!(doc.tables.len(), 1, "reading stops at the limit");
}

#[test]
fn broken_files_fail_cleanly() {
    let not_a_workbook = zip_of(&[("hello.txt", b"hello")]);
    let bad_sheet = zip_of(&[
        ("[Content_Types].xml", b"<Types/>"),
        (
            "xl/workbook.xml",
            b"<workbook><sheets><sheet name=\"S\" r:id=\"rId1\"",
        ),
    ]);
    // (name, kind, bytes, expected code)
    let cases: Vec<(&str, DocKind, Vec<u8>, &str)> = vec![
        (
            "truncated xlsx",
            DocKind::Xlsx,
            TYPED_XLSX[..TYPED_XLSX.len() / 2].to_vec(),
            "invalid",
        ),
        (
            "truncated xls",
            DocKind::Xls,
            TYPED_XLS[..TYPED_XLS.len() / 2].to_vec(),
            "invalid",
        ),
        (
            "truncated ods",
            DocKind::Ods,
            TYPED_ODS[..TYPED_ODS.len() / 2].to_vec(),
            "invalid",
        ),
        (
            "random zip",
            DocKind::Xlsx,
            not_a_workbook.clone(),
            "invalid",
        ),
        ("random zip as ods", DocKind::Ods, not_a_workbook, "invalid"),
        ("malformed workbook", DocKind::Xlsx, bad_sheet, "invalid"),
        (
            "garbage xls",
            DocKind::Xls,
            b"not an excel file at all".to_vec(),
            "invalid",
        ),
        ("empty", DocKind::Xlsx, Vec::new(), "invalid"),
        (
            "encrypted xlsx",
            DocKind::Xlsx,
            ENCRYPTED.to_vec(),
            "password_required",
        ),
        (
            "encrypted named xls",
            DocKind::Xls,
            ENCRYPTED.to_vec(),
            "password_required",
        ),
    ];
    for (name, kind, bytes, code) in cases {
        let err = run(kind, &bytes).expect_err(name);
        assert_eq!(err.code(), code, "{name}: {err}");
        assert!(!err.to_string().contains('\n'), "{name}: {err}");
    }
}

#[test]
fn zip_bomb_is_refused_before_calamine() {
    let mut sheet = b"<worksheet><sheetData>".to_vec();
    sheet.extend(std::iter::repeat_n(b' ', 20 << 20));
    sheet.extend_from_slice(b"</sheetData></worksheet>");
    let bomb = zip_of(&[
        ("xl/workbook.xml", b"<workbook/>"),
        ("xl/worksheets/sheet1.xml", &sheet),
    ]);
    assert_eq!(
        run(DocKind::Xlsx, &bomb).unwrap_err().code(),
        "limit_exceeded"
    );
}

#[test]
fn helpers() {
    let letters = [
        (0, "A"),
        (25, "Z"),
        (26, "AA"),
        (701, "ZZ"),
        (702, "AAA"),
        (16383, "XFD"),
    ];
    for (col, want) in letters {
        assert_eq!(column_letters(col), want);
    }
    let numbers = [
        (15.0, "15"),
        (0.1 + 0.2, "0.3"),
        (-2.5, "-2.5"),
        (1e20, "100000000000000000000"),
    ];
    for (n, want) in numbers {
        assert_eq!(format_number(n), want);
    }
}

/// Runs over the shared calamine corpus when present (not part of the repository).
#[test]
fn shared_corpus_smoke() {
    let dir = std::path::Path::new(
        &std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("../../../shared/corpora/documents/xlsx/calamine_tests");
    if !dir.is_dir() {
        println!("skipping: {} not present", dir.display());
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "under CI=true a test may not skip"
        );
        return;
    }
    for (name, kind) in [
        ("pass_protected.xlsx", DocKind::Xlsx),
        ("pass_protected.xlsb", DocKind::Xlsb),
        ("pass_protected.ods", DocKind::Ods),
    ] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        assert_eq!(
            run(kind, &bytes).unwrap_err(),
            ParseError::PasswordRequired,
            "{name}"
        );
    }
    for (name, kind) in [
        ("too_small.xls", DocKind::Xls),
        ("issue_594_dos.ods", DocKind::Ods),
    ] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        // Must return (either way) rather than hang or panic.
        let _ = run(kind, &bytes);
    }
}
