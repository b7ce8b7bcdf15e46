//! Spreadsheet parser (XLSX/XLSM, XLSB, XLS, ODS) on top of calamine.
//!
//! Cells are collected sparsely (row → cells), never as a dense grid, so a sheet that declares
//! `A1:XFD1048576` but holds a handful of cells costs a handful of cells. For XLSX and XLSB the
//! cells are streamed from calamine's cell readers; XLS and ODS are only available as ranges,
//! which calamine sizes from the real cells (not the declared dimension).
//!
//! Each sheet yields a level-1 heading, one header-aware `TableRow` block per data row, and a
//! typed [`Table`] for the SQL tool.

use std::collections::{BTreeMap, HashSet};
use std::io::{Cursor, Read};
use std::panic::{AssertUnwindSafe, catch_unwind};

use calamine::{
    Data, DataRef, Dimensions, ExcelDateTime, Ods, OdsError, Reader, SheetType, Xls, XlsError,
    Xlsb, XlsbError, Xlsx, XlsxError,
};

use crate::archive::check_zip_directory;
use crate::docx::{OLE_MAGIC, ole_is_encrypted_package};
use crate::{
    Block, BlockKind, Cell, Column, ColumnType, DocKind, Limits, ParseError, ParseNotice,
    ParsedDocument, Table,
};

/// A cell value, owned and reduced to what the output needs.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Text(String),
    Number(f64),
    Bool(bool),
    /// ISO-8601 date or date-time.
    Date(String),
}

impl Value {
    fn display(&self) -> String {
        match self {
            Value::Text(s) | Value::Date(s) => s.clone(),
            Value::Number(n) => format_number(*n),
            Value::Bool(b) => if *b { "TRUE" } else { "FALSE" }.to_string(),
        }
    }
}

/// Numbers as a person reads them: integral values without ".0", binary noise
/// (0.1 + 0.2 = 0.30000000000000004) rounded to 15 significant digits like Excel shows.
fn format_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        return format!("{}", n as i64);
    }
    let rounded: f64 = format!("{n:.14e}").parse().unwrap_or(n);
    format!("{rounded}")
}

fn iso(dt: &ExcelDateTime) -> Option<String> {
    if dt.is_duration() {
        let d = dt.as_duration()?;
        let secs = d.num_seconds();
        let sign = if secs < 0 { "-" } else { "" };
        let secs = secs.unsigned_abs();
        return Some(format!(
            "{sign}{}:{:02}:{:02}",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        ));
    }
    let d = dt.as_datetime()?;
    let time = d.time();
    Some(if time == chrono::NaiveTime::MIN {
        d.format("%Y-%m-%d").to_string()
    } else {
        d.format("%Y-%m-%dT%H:%M:%S").to_string()
    })
}

fn convert(data: &DataRef<'_>) -> Option<Value> {
    Some(match data {
        DataRef::Int(i) => Value::Number(*i as f64),
        DataRef::Float(f) if f.is_finite() => Value::Number(*f),
        DataRef::String(s) => text_value(s)?,
        DataRef::SharedString(s) => text_value(s)?,
        DataRef::Bool(b) => Value::Bool(*b),
        DataRef::DateTime(dt) => match iso(dt) {
            Some(s) if dt.is_datetime() => Value::Date(s),
            Some(s) => Value::Text(s),
            None => Value::Number(dt.as_f64()),
        },
        DataRef::DateTimeIso(s) => Value::Date(s.clone()),
        DataRef::DurationIso(s) => Value::Text(s.clone()),
        // Errors (#DIV/0!, #N/A) are not data.
        DataRef::Error(_) | DataRef::Empty | DataRef::Float(_) => return None,
    })
}

fn convert_owned(data: &Data) -> Option<Value> {
    let r = match data {
        Data::Int(i) => DataRef::Int(*i),
        Data::Float(f) => DataRef::Float(*f),
        Data::String(s) => DataRef::SharedString(s),
        Data::Bool(b) => DataRef::Bool(*b),
        Data::DateTime(d) => DataRef::DateTime(*d),
        Data::DateTimeIso(s) => DataRef::DateTimeIso(s.clone()),
        Data::DurationIso(s) => DataRef::DurationIso(s.clone()),
        Data::Error(_) | Data::Empty => return None,
    };
    convert(&r)
}

fn text_value(s: &str) -> Option<Value> {
    let t = s.trim();
    (!t.is_empty()).then(|| Value::Text(t.to_string()))
}

/// The cells of one sheet, sparse: row → (column, value), both 0-based absolute.
#[derive(Debug, Default)]
struct SheetCells {
    name: String,
    rows: BTreeMap<u32, BTreeMap<u32, Value>>,
}

/// Shared cell budget across sheets (`Limits::max_cells`).
#[derive(Debug)]
struct Budget {
    left: u64,
    truncated: bool,
}

impl SheetCells {
    /// Stores a cell; returns false once the budget is spent (the caller stops reading).
    fn put(&mut self, budget: &mut Budget, row: u32, col: u32, value: Value) -> bool {
        if budget.left == 0 {
            budget.truncated = true;
            return false;
        }
        budget.left -= 1;
        self.rows.entry(row).or_default().insert(col, value);
        true
    }

    /// Repeats the value of vertically merged regions down their first column, so each row
    /// block says which group it belongs to. Horizontal spans are left alone: repeating a
    /// banner across columns would only duplicate it.
    fn fill_merged(&mut self, regions: &[Dimensions], budget: &mut Budget) {
        for m in regions {
            let (r0, c0) = m.start;
            let (r1, _) = m.end;
            if r1 <= r0 || r1 - r0 > 10_000 {
                continue;
            }
            let Some(value) = self.rows.get(&r0).and_then(|r| r.get(&c0)).cloned() else {
                continue;
            };
            for r in r0 + 1..=r1 {
                let exists = self.rows.get(&r).is_some_and(|row| row.contains_key(&c0));
                if !exists && !self.put(budget, r, c0, value.clone()) {
                    return;
                }
            }
        }
    }
}

/// Column letters: 0 → A, 25 → Z, 26 → AA.
fn column_letters(mut col: u32) -> String {
    let mut out = Vec::new();
    loop {
        out.push(char::from(b'A' + (col % 26) as u8));
        if col < 26 {
            break;
        }
        col = col / 26 - 1;
    }
    out.iter().rev().collect()
}

fn calamine_error(format: &'static str, password: bool, e: impl std::fmt::Display) -> ParseError {
    if password {
        ParseError::PasswordRequired
    } else {
        ParseError::invalid(format, e)
    }
}

fn xlsx_err(e: XlsxError) -> ParseError {
    calamine_error("XLSX", matches!(e, XlsxError::Password), e)
}
fn xlsb_err(e: XlsbError) -> ParseError {
    calamine_error("XLSB", matches!(e, XlsbError::Password), e)
}
fn xls_err(e: XlsError) -> ParseError {
    calamine_error("XLS", matches!(e, XlsError::Password), e)
}
fn ods_err(e: OdsError) -> ParseError {
    calamine_error("ODS", matches!(e, OdsError::Password), e)
}

fn format_name(kind: DocKind) -> &'static str {
    match kind {
        DocKind::Xls => "XLS",
        DocKind::Xlsb => "XLSB",
        DocKind::Ods => "ODS",
        _ => "XLSX",
    }
}

/// Decides the real format from the bytes: files are often renamed (an XLSX saved as `.xls`,
/// an encrypted XLSX, which is an OLE file, named `.xlsx`).
fn sniff(kind: DocKind, bytes: &[u8]) -> Result<DocKind, ParseError> {
    if bytes.starts_with(&OLE_MAGIC) {
        if ole_is_encrypted_package(bytes) {
            return Err(ParseError::PasswordRequired);
        }
        return Ok(DocKind::Xls);
    }
    if bytes.starts_with(b"PK") {
        let Ok(archive) = zip::ZipArchive::new(Cursor::new(bytes)) else {
            return Ok(if kind == DocKind::Xls {
                DocKind::Xlsx
            } else {
                kind
            });
        };
        let has = |n: &str| archive.index_for_name(n).is_some();
        if has("xl/workbook.bin") {
            return Ok(DocKind::Xlsb);
        }
        if has("content.xml") && (has("mimetype") || has("META-INF/manifest.xml")) {
            return Ok(DocKind::Ods);
        }
        if has("xl/workbook.xml") || kind == DocKind::Xls {
            return Ok(DocKind::Xlsx);
        }
        return Ok(kind);
    }
    let format = format_name(kind);
    if bytes.is_empty() {
        return Err(ParseError::invalid(format, "the file is empty"));
    }
    match kind {
        DocKind::Xls => Ok(kind),
        _ => Err(ParseError::invalid(
            format,
            "not a ZIP container (the file is truncated or not a workbook)",
        )),
    }
}

/// Decompresses every entry once through a capped reader: ZIP directories can understate
/// sizes, and calamine reads entries without a budget of its own.
fn verify_zip_sizes(bytes: &[u8], format: &'static str, limits: &Limits) -> Result<(), ParseError> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| ParseError::invalid(format, format!("not a ZIP container ({e})")))?;
    let mut budget = limits.max_decompressed_bytes;
    for i in 0..archive.len() {
        let Ok(mut entry) = archive.by_index(i) else {
            // Unreadable entries are reported by calamine if it needs them.
            continue;
        };
        let ratio_cap = entry
            .compressed_size()
            .max(1)
            .saturating_mul(limits.max_compression_ratio.max(1))
            .max(8 << 20);
        let cap = budget.min(ratio_cap);
        let read = std::io::copy(
            &mut (&mut entry).take(cap.saturating_add(1)),
            &mut std::io::sink(),
        )
        .unwrap_or(0);
        if read > cap {
            return Err(ParseError::LimitExceeded(format!(
                "'{}' decompresses to more than {cap} bytes (possible zip bomb)",
                entry.name().unwrap_or_default()
            )));
        }
        budget = budget.saturating_sub(read);
    }
    Ok(())
}

pub(crate) fn parse(
    kind: DocKind,
    bytes: &[u8],
    limits: &Limits,
) -> Result<ParsedDocument, ParseError> {
    let kind = sniff(kind, bytes)?;
    let format = format_name(kind);
    if kind != DocKind::Xls {
        check_zip_directory(bytes, format, limits)?;
        verify_zip_sizes(bytes, format, limits)?;
    }
    let mut budget = Budget {
        left: limits.max_cells,
        truncated: false,
    };
    // calamine can panic on hostile input (index arithmetic on corrupt records); a bad file
    // must fail as invalid, not take the worker down.
    let read = catch_unwind(AssertUnwindSafe(|| match kind {
        DocKind::Xlsb => read_xlsb(bytes, &mut budget),
        DocKind::Xls => read_xls(bytes, &mut budget),
        DocKind::Ods => read_ods(bytes, &mut budget),
        _ => read_xlsx(bytes, &mut budget),
    }));
    let (title, sheets) = match read {
        Ok(result) => result?,
        Err(_) => {
            return Err(ParseError::invalid(
                format,
                "the workbook is malformed (the reader failed on it)",
            ));
        }
    };
    let mut doc = ParsedDocument {
        title: title
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty()),
        ..ParsedDocument::default()
    };
    for sheet in sheets {
        render_sheet(sheet, &mut doc);
    }
    if budget.truncated {
        doc.notices.push(ParseNotice::Truncated);
    }
    Ok(doc)
}

type Workbook = (Option<String>, Vec<SheetCells>);

fn worksheet_names<RS: std::io::Read + std::io::Seek, R: Reader<RS>>(wb: &R) -> Vec<String> {
    wb.sheets_metadata()
        .iter()
        .filter(|s| matches!(s.typ, SheetType::WorkSheet))
        .map(|s| s.name.clone())
        .collect()
}

fn read_xlsx(bytes: &[u8], budget: &mut Budget) -> Result<Workbook, ParseError> {
    let mut wb: Xlsx<_> = Xlsx::new(Cursor::new(bytes)).map_err(xlsx_err)?;
    let title = wb.workbook_properties().ok().and_then(|p| p.title);
    let mut sheets = Vec::new();
    for name in worksheet_names(&wb) {
        let mut sheet = SheetCells {
            name: name.clone(),
            ..SheetCells::default()
        };
        {
            let mut reader = wb.worksheet_cells_reader(&name).map_err(xlsx_err)?;
            while let Some(cell) = reader.next_cell().map_err(xlsx_err)? {
                let (r, c) = cell.get_position();
                if let Some(v) = convert(cell.get_value())
                    && !sheet.put(budget, r, c, v)
                {
                    break;
                }
            }
        }
        if let Ok(merged) = wb.merge_cells_by_sheet_name(&name) {
            sheet.fill_merged(&merged, budget);
        }
        sheets.push(sheet);
        if budget.truncated {
            break;
        }
    }
    Ok((title, sheets))
}

fn read_xlsb(bytes: &[u8], budget: &mut Budget) -> Result<Workbook, ParseError> {
    let mut wb: Xlsb<_> = Xlsb::new(Cursor::new(bytes)).map_err(xlsb_err)?;
    let title = wb.workbook_properties().ok().and_then(|p| p.title);
    let mut sheets = Vec::new();
    for name in worksheet_names(&wb) {
        let mut sheet = SheetCells {
            name: name.clone(),
            ..SheetCells::default()
        };
        let mut reader = wb.worksheet_cells_reader(&name).map_err(xlsb_err)?;
        while let Some(cell) = reader.next_cell().map_err(xlsb_err)? {
            let (r, c) = cell.get_position();
            if let Some(v) = convert(cell.get_value())
                && !sheet.put(budget, r, c, v)
            {
                break;
            }
        }
        sheets.push(sheet);
        if budget.truncated {
            break;
        }
    }
    Ok((title, sheets))
}

/// Copies a calamine range (absolute positions) into sparse cells.
fn from_range(name: String, range: &calamine::Range<Data>, budget: &mut Budget) -> SheetCells {
    let mut sheet = SheetCells {
        name,
        ..SheetCells::default()
    };
    let (r0, c0) = range.start().unwrap_or((0, 0));
    for (r, c, data) in range.used_cells() {
        if let Some(v) = convert_owned(data) {
            let (Ok(r), Ok(c)) = (u32::try_from(r), u32::try_from(c)) else {
                continue;
            };
            if !sheet.put(budget, r0.saturating_add(r), c0.saturating_add(c), v) {
                break;
            }
        }
    }
    sheet
}

fn read_xls(bytes: &[u8], budget: &mut Budget) -> Result<Workbook, ParseError> {
    let mut wb: Xls<_> = Xls::new(Cursor::new(bytes)).map_err(xls_err)?;
    let title = wb.workbook_properties().ok().and_then(|p| p.title);
    let mut sheets = Vec::new();
    for name in worksheet_names(&wb) {
        let range = wb.worksheet_range(&name).map_err(xls_err)?;
        let mut sheet = from_range(name.clone(), &range, budget);
        drop(range);
        if let Ok(merged) = wb.merge_cells_by_sheet_name(&name) {
            sheet.fill_merged(&merged, budget);
        }
        sheets.push(sheet);
        if budget.truncated {
            break;
        }
    }
    Ok((title, sheets))
}

fn read_ods(bytes: &[u8], budget: &mut Budget) -> Result<Workbook, ParseError> {
    let mut wb: Ods<_> = Ods::new(Cursor::new(bytes)).map_err(ods_err)?;
    let title = wb.workbook_properties().ok().and_then(|p| p.title);
    let mut sheets = Vec::new();
    for name in worksheet_names(&wb) {
        let range = wb.worksheet_range(&name).map_err(ods_err)?;
        sheets.push(from_range(name, &range, budget));
        if budget.truncated {
            break;
        }
    }
    Ok((title, sheets))
}

/// Finds the header row: skips leading one-cell banner rows ("Staff directory") in multi-column
/// sheets, then accepts the next row if its cells are mostly distinct text labels.
/// Returns (banner rows, header row index).
fn detect_header(sheet: &SheetCells, used_cols: usize) -> (Vec<u32>, Option<u32>) {
    let mut banners = Vec::new();
    for (&r, cells) in sheet.rows.iter().take(4) {
        if cells.len() == 1 && used_cols >= 2 && banners.len() < 3 {
            banners.push(r);
            continue;
        }
        let texts: Vec<String> = cells
            .values()
            .filter_map(|v| match v {
                Value::Text(s) => Some(s.to_lowercase()),
                _ => None,
            })
            .collect();
        let distinct = texts.iter().collect::<HashSet<_>>().len();
        let mostly_text = texts.len() * 3 >= cells.len() * 2;
        let has_data_below = sheet.rows.range(r + 1..).next().is_some();
        let single_col_ok = cells.len() >= 2
            || sheet
                .rows
                .range(r + 1..)
                .any(|(_, row)| row.values().any(|v| !matches!(v, Value::Text(_))));
        let header = mostly_text
            && distinct * 4 >= texts.len() * 3
            && has_data_below
            && single_col_ok
            && texts.iter().all(|t| t.chars().count() <= 100);
        return (banners, header.then_some(r));
    }
    // Only banner rows: they are data, not banners.
    (Vec::new(), None)
}

fn infer_type(values: &[Option<&Value>]) -> ColumnType {
    let present: Vec<&Value> = values.iter().flatten().copied().collect();
    if present.is_empty() {
        return ColumnType::Text;
    }
    if present
        .iter()
        .all(|v| matches!(v, Value::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15))
    {
        ColumnType::Integer
    } else if present.iter().all(|v| matches!(v, Value::Number(_))) {
        ColumnType::Real
    } else if present.iter().all(|v| matches!(v, Value::Bool(_))) {
        ColumnType::Boolean
    } else if present.iter().all(|v| matches!(v, Value::Date(_))) {
        ColumnType::DateTime
    } else {
        ColumnType::Text
    }
}

fn typed_cell(value: Option<&Value>, ty: ColumnType) -> Cell {
    match (value, ty) {
        (None, _) => Cell::Null,
        (Some(Value::Number(n)), ColumnType::Integer) => Cell::Int(*n as i64),
        (Some(Value::Number(n)), ColumnType::Real) => Cell::Float(*n),
        (Some(Value::Bool(b)), ColumnType::Boolean) => Cell::Bool(*b),
        (Some(v), _) => Cell::Text(v.display()),
    }
}

fn render_sheet(sheet: SheetCells, doc: &mut ParsedDocument) {
    doc.blocks.push(Block::heading(1, sheet.name.clone()));
    let cols: Vec<u32> = {
        let set: std::collections::BTreeSet<u32> = sheet
            .rows
            .values()
            .flat_map(|r| r.keys().copied())
            .collect();
        set.into_iter().collect()
    };
    if cols.is_empty() {
        return;
    }
    let (banners, header_row) = detect_header(&sheet, cols.len());
    for r in &banners {
        if let Some(v) = sheet.rows.get(r).and_then(|row| row.values().next()) {
            doc.blocks.push(Block::paragraph(v.display()));
        }
    }

    // Column names: header text, else the column letter; deduplicated.
    let header = header_row.and_then(|r| sheet.rows.get(&r));
    let mut seen = HashSet::new();
    let names: Vec<String> = cols
        .iter()
        .map(|&c| {
            let base = header
                .and_then(|h| h.get(&c))
                .map(Value::display)
                .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| column_letters(c));
            let mut name = base.clone();
            let mut n = 2;
            while !seen.insert(name.to_lowercase()) {
                name = format!("{base}_{n}");
                n += 1;
            }
            name
        })
        .collect();

    let first_data = header_row.map_or(0, |r| r + 1);
    let data: Vec<&BTreeMap<u32, Value>> = sheet
        .rows
        .range(first_data..)
        .filter(|(r, _)| !banners.contains(r))
        .map(|(_, row)| row)
        .collect();
    for row in &data {
        let parts: Vec<String> = cols
            .iter()
            .zip(&names)
            .filter_map(|(c, name)| row.get(c).map(|v| format!("{name}: {}", v.display())))
            .collect();
        if !parts.is_empty() {
            doc.blocks
                .push(Block::new(BlockKind::TableRow, parts.join("; ")));
        }
    }

    let types: Vec<ColumnType> = cols
        .iter()
        .map(|c| infer_type(&data.iter().map(|row| row.get(c)).collect::<Vec<_>>()))
        .collect();
    let rows = data
        .iter()
        .map(|row| {
            cols.iter()
                .zip(&types)
                .map(|(c, ty)| typed_cell(row.get(c), *ty))
                .collect()
        })
        .collect();
    doc.tables.push(Table {
        name: sheet.name,
        columns: names
            .into_iter()
            .zip(types)
            .map(|(name, ty)| Column { name, ty })
            .collect(),
        rows,
    });
}

#[cfg(test)]
mod tests;
