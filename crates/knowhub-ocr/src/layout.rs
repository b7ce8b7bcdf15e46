//! Reading order: recognised lines grouped the way a person reads the page, by a recursive
//! XY-cut. A region splits at its widest white space: a vertical gutter into columns read left
//! to right (or, when the parts line up row by row, a table read row by row with cells
//! separated by " | "), or horizontal gaps clearly wider than the region's own line spacing
//! into blocks read top to bottom. A region with neither is one paragraph.

use crate::Line;

/// What a group of lines is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParagraphKind {
    Text,
    /// One row of a table: cells left to right.
    TableRow,
}

/// Lines read together, with their text joined.
#[derive(Debug, Clone, PartialEq)]
pub struct Paragraph {
    pub kind: ParagraphKind,
    pub text: String,
    pub lines: Vec<Line>,
    /// Lowest line score in the paragraph.
    pub min_score: f32,
}

/// Lines below this score are marked as uncertain by the caller.
pub const LOW_CONFIDENCE: f32 = 0.6;

/// `lines` (any order) grouped into paragraphs in reading order.
///
/// ```
/// use knowhub_ocr::{Line, layout::reading_order};
/// let line = |text: &str, left: f32, top: f32| Line {
///     text: text.into(),
///     score: 0.9,
///     bbox: [left, top, left + 300.0, top + 20.0],
/// };
/// let page = reading_order(vec![line("world", 10.0, 32.0), line("Hello", 10.0, 8.0)]);
/// assert_eq!(page[0].text, "Hello world");
/// ```
pub fn reading_order(lines: Vec<Line>) -> Vec<Paragraph> {
    if lines.is_empty() {
        return Vec::new();
    }
    let line_height = median(lines.iter().map(|l| l.bbox[3] - l.bbox[1]).collect()).max(1.0);
    let mut out = Vec::new();
    cut(lines, line_height, &mut out);
    out
}

fn cut(lines: Vec<Line>, h: f32, out: &mut Vec<Paragraph>) {
    if lines.len() <= 1 {
        leaf(lines, out);
        return;
    }
    let (bands, y_gaps) = split(lines.clone(), Axis::Y, 0.0);
    let (parts, x_gaps) = split(lines.clone(), Axis::X, h);
    let widest = |gaps: &[f32]| gaps.iter().copied().fold(0.0f32, f32::max);
    // The widest white space decides first (XY-cut): a gutter between columns or cells...
    if parts.len() > 1 && widest(&x_gaps) >= widest(&y_gaps) {
        split_columns(lines, parts, h, out);
        return;
    }
    // ...else a gap clearly wider than this region's usual space between lines.
    let threshold = (0.5 * h).max(1.5 * lower_median(y_gaps.clone()));
    if y_gaps.iter().any(|&g| g > threshold) {
        let mut group: Vec<Line> = Vec::new();
        for (i, band) in bands.into_iter().enumerate() {
            if i > 0 && y_gaps[i - 1] > threshold {
                cut(std::mem::take(&mut group), h, out);
            }
            group.extend(band);
        }
        cut(group, h, out);
        return;
    }
    if parts.len() > 1 {
        split_columns(lines, parts, h, out);
        return;
    }
    leaf(lines, out);
}

fn split_columns(region: Vec<Line>, parts: Vec<Vec<Line>>, h: f32, out: &mut Vec<Paragraph>) {
    if is_table(&parts, h) {
        table_rows(region, out);
    } else {
        for part in parts {
            cut(part, h, out);
        }
    }
}

#[derive(Clone, Copy)]
enum Axis {
    X,
    Y,
}

/// Groups of lines separated along `axis` by a gap wider than `min_gap`, in order, with the
/// gaps between consecutive groups.
fn split(mut lines: Vec<Line>, axis: Axis, min_gap: f32) -> (Vec<Vec<Line>>, Vec<f32>) {
    let (lo, hi) = match axis {
        Axis::X => (0, 2),
        Axis::Y => (1, 3),
    };
    lines.sort_by(|a, b| a.bbox[lo].total_cmp(&b.bbox[lo]));
    let mut groups: Vec<Vec<Line>> = Vec::new();
    let mut gaps = Vec::new();
    let mut reach = f32::NEG_INFINITY;
    for line in lines {
        let gap = line.bbox[lo] - reach;
        match groups.last_mut() {
            // Lines overlapping a little (skewed scans, descenders) still chain.
            Some(group) if gap <= min_gap => {
                reach = reach.max(line.bbox[hi]);
                group.push(line);
            }
            _ => {
                if !groups.is_empty() {
                    gaps.push(gap);
                }
                reach = line.bbox[hi];
                groups.push(vec![line]);
            }
        }
    }
    (groups, gaps)
}

/// Parts of a band form a table when most of their lines have a partner on the same row in
/// another part; text columns are read as columns (their lines rarely pair up one to one in
/// short cells). A cell is short: tables whose parts are long lines are read as columns.
fn is_table(parts: &[Vec<Line>], h: f32) -> bool {
    let lines: usize = parts.iter().map(Vec::len).sum();
    let widest_median = parts
        .iter()
        .map(|p| median(p.iter().map(|l| l.bbox[2] - l.bbox[0]).collect()))
        .fold(0.0f32, f32::max);
    if widest_median > 20.0 * h {
        return false;
    }
    let paired = parts
        .iter()
        .enumerate()
        .map(|(i, part)| {
            part.iter()
                .filter(|l| {
                    parts
                        .iter()
                        .enumerate()
                        .any(|(j, other)| j != i && other.iter().any(|o| same_row(l, o)))
                })
                .count()
        })
        .sum::<usize>();
    paired * 3 >= lines * 2
}

fn same_row(a: &Line, b: &Line) -> bool {
    let overlap = a.bbox[3].min(b.bbox[3]) - a.bbox[1].max(b.bbox[1]);
    let shorter = (a.bbox[3] - a.bbox[1]).min(b.bbox[3] - b.bbox[1]);
    overlap > 0.5 * shorter
}

/// Rows of a table band: lines on the same row joined left to right with " | ".
fn table_rows(band: Vec<Line>, out: &mut Vec<Paragraph>) {
    for row in rows(band) {
        let text = row
            .iter()
            .map(|l| l.text.as_str())
            .collect::<Vec<_>>()
            .join(" | ");
        out.push(paragraph(ParagraphKind::TableRow, text, row));
    }
}

/// Lines grouped into visual rows (top to bottom), each row left to right.
fn rows(mut lines: Vec<Line>) -> Vec<Vec<Line>> {
    lines.sort_by(|a, b| a.bbox[1].total_cmp(&b.bbox[1]));
    let mut rows: Vec<Vec<Line>> = Vec::new();
    for line in lines {
        match rows.last_mut() {
            Some(row) if row.iter().any(|l| same_row(l, &line)) => row.push(line),
            _ => rows.push(vec![line]),
        }
    }
    for row in &mut rows {
        row.sort_by(|a, b| a.bbox[0].total_cmp(&b.bbox[0]));
    }
    rows
}

/// A region with no wider gap than between its lines: one paragraph, read row by row.
fn leaf(lines: Vec<Line>, out: &mut Vec<Paragraph>) {
    if lines.is_empty() {
        return;
    }
    let lines: Vec<Line> = rows(lines).into_iter().flatten().collect();
    let mut text = String::new();
    for line in &lines {
        join_text(&mut text, &line.text);
    }
    out.push(paragraph(ParagraphKind::Text, text, lines));
}

/// Appends `next` to `text` as the following line: words across a line break get a space,
/// Chinese and Japanese characters none, and a word hyphenated at the break is joined.
fn join_text(text: &mut String, next: &str) {
    let (Some(last), Some(first)) = (text.chars().last(), next.chars().next()) else {
        text.push_str(next);
        return;
    };
    if last == '-' && first.is_lowercase() {
        text.pop();
    } else if !(is_cjk(last) || is_cjk(first)) {
        text.push(' ');
    }
    text.push_str(next);
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3000..=0x303F | 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF
        | 0xF900..=0xFAFF | 0xFF00..=0xFFEF)
}

fn paragraph(kind: ParagraphKind, text: String, lines: Vec<Line>) -> Paragraph {
    let min_score = lines.iter().map(|l| l.score).fold(1.0f32, f32::min);
    Paragraph {
        kind,
        text,
        lines,
        min_score,
    }
}

fn median(mut values: Vec<f32>) -> f32 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f32::total_cmp);
    values[values.len() / 2]
}

/// The lower of the two middle values (of two gaps, the smaller: the line spacing rather
/// than the paragraph break).
fn lower_median(mut values: Vec<f32>) -> f32 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f32::total_cmp);
    values[(values.len() - 1) / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str, left: f32, top: f32, right: f32) -> Line {
        Line {
            text: text.into(),
            score: 0.9,
            bbox: [left, top, right, top + 20.0],
        }
    }

    fn texts(paragraphs: &[Paragraph]) -> Vec<(ParagraphKind, &str)> {
        paragraphs
            .iter()
            .map(|p| (p.kind, p.text.as_str()))
            .collect()
    }

    type Case = (&'static str, Vec<Line>, Vec<(ParagraphKind, &'static str)>);

    #[test]
    fn reading_order_table() {
        use ParagraphKind::{TableRow, Text};
        let cases: Vec<Case> = vec![
            (
                "lines of one paragraph, shuffled, joined with spaces or not",
                vec![
                    line("second line", 10.0, 35.0, 400.0),
                    line("The first", 10.0, 10.0, 400.0),
                    line("第三行", 10.0, 60.0, 200.0),
                ],
                vec![(Text, "The first second line第三行")],
            ),
            (
                "a gap taller than a line starts a paragraph; a hyphenated word is joined",
                vec![
                    line("para-", 10.0, 10.0, 400.0),
                    line("graph one", 10.0, 35.0, 400.0),
                    line("paragraph two", 10.0, 100.0, 400.0),
                ],
                vec![(Text, "paragraph one"), (Text, "paragraph two")],
            ),
            (
                "two columns under a title are read column by column",
                vec![
                    line("Title across the page", 10.0, 10.0, 1200.0),
                    line("left one", 10.0, 50.0, 580.0),
                    line("right one", 620.0, 50.0, 1200.0),
                    line("left two", 10.0, 75.0, 580.0),
                    line("right two", 620.0, 75.0, 1200.0),
                    line("left three", 10.0, 100.0, 560.0),
                ],
                vec![
                    (Text, "Title across the page"),
                    (Text, "left one left two left three"),
                    (Text, "right one right two"),
                ],
            ),
            (
                "a table is read row by row",
                vec![
                    line("Name", 10.0, 10.0, 90.0),
                    line("Days", 300.0, 10.0, 370.0),
                    line("Annual leave", 10.0, 40.0, 200.0),
                    line("25", 300.0, 40.0, 330.0),
                    line("病假", 10.0, 70.0, 60.0),
                    line("10", 300.0, 70.0, 330.0),
                ],
                vec![
                    (TableRow, "Name | Days"),
                    (TableRow, "Annual leave | 25"),
                    (TableRow, "病假 | 10"),
                ],
            ),
            (
                "widely spaced lines are still one paragraph",
                vec![
                    line("first", 10.0, 10.0, 400.0),
                    line("second", 10.0, 50.0, 400.0),
                    line("third", 10.0, 90.0, 400.0),
                ],
                vec![(Text, "first second third")],
            ),
            ("nothing", vec![], vec![]),
        ];
        for (name, lines, expected) in cases {
            let got = reading_order(lines);
            assert_eq!(texts(&got), expected, "{name}");
        }
    }
}
