//! Turns positioned glyphs into paragraphs in reading order.
//!
//! The content stream order of a PDF is whatever the producer wrote, so reading order is
//! rebuilt from geometry: glyphs become runs (stream-order neighbours on one baseline), runs are
//! split into columns at vertical gutters, and each column's runs become lines and paragraphs.
//! Every step is a sort or a linear pass, so large pages stay fast.

use pdf_extract::{MediaBox, OutputDev, OutputError, Transform};

/// One shown glyph, in a frame where its text runs left to right and lines go downwards.
#[derive(Debug, Clone, Copy)]
struct Glyph {
    x: f32,
    y: f32,
    adv: f32,
    size: f32,
    rot: u8,
    start: u32,
    end: u32,
}

/// The glyphs of one page, as pdf-extract showed them.
#[derive(Debug, Default)]
pub(crate) struct PageGlyphs {
    pub(crate) page: u32,
    glyphs: Vec<Glyph>,
    text: String,
    /// The media box's top and bottom edge in the upright (rotation 0) frame, where y grows
    /// downwards.
    edges: Option<(f32, f32)>,
}

impl PageGlyphs {
    /// Whether the page showed any visible character.
    pub(crate) fn has_text(&self) -> bool {
        self.text.chars().any(|c| !c.is_whitespace())
    }

    /// Adds (size, visible character count) pairs to a document-wide size histogram.
    pub(crate) fn size_histogram(&self, hist: &mut std::collections::HashMap<u32, usize>) {
        for g in &self.glyphs {
            if self.glyph_text(g).chars().any(|c| !c.is_whitespace()) {
                *hist.entry(size_key(g.size)).or_default() += 1;
            }
        }
    }

    /// Which glyphs the given upright lines cover.
    fn line_mask(&self, lines: &[EdgeLine]) -> Vec<bool> {
        let mut mask = vec![false; self.glyphs.len()];
        for line in lines {
            for &(first, last) in &line.spans {
                for (m, g) in mask.iter_mut().zip(&self.glyphs).take(last + 1).skip(first) {
                    *m = g.rot == 0;
                }
            }
        }
        mask
    }

    /// Whether some visible text remains once the given lines are gone.
    pub(crate) fn keeps_text_without(&self, lines: &[EdgeLine]) -> bool {
        let mask = self.line_mask(lines);
        self.glyphs
            .iter()
            .zip(mask)
            .any(|(g, gone)| !gone && self.glyph_text(g).chars().any(|c| !c.is_whitespace()))
    }

    /// Drops the glyphs of the given upright lines (running headers and footers).
    pub(crate) fn remove_lines(&mut self, lines: &[EdgeLine]) {
        let mut mask = self.line_mask(lines).into_iter();
        self.glyphs.retain(|_| !mask.next().unwrap_or(false));
    }

    fn glyph_text(&self, g: &Glyph) -> &str {
        self.text
            .get(g.start as usize..g.end as usize)
            .unwrap_or("")
    }
}

/// Font sizes are compared in half-point steps.
pub(crate) fn size_key(size: f32) -> u32 {
    (size * 2.0).round().clamp(0.0, 100_000.0) as u32
}

/// Collects glyphs page by page from pdf-extract.
#[derive(Debug, Default)]
pub(crate) struct Collector {
    pub(crate) pages: Vec<PageGlyphs>,
    /// Stops collecting once this many bytes of text were seen (the text limit).
    pub(crate) max_text: usize,
    pub(crate) total_text: usize,
}

impl Collector {
    fn current(&mut self) -> Option<&mut PageGlyphs> {
        self.pages.last_mut()
    }
}

impl OutputDev for Collector {
    fn begin_page(
        &mut self,
        page_num: u32,
        media_box: &MediaBox,
        _art_box: Option<(f64, f64, f64, f64)>,
    ) -> Result<(), OutputError> {
        let (top, bottom) = (-media_box.ury as f32, -media_box.lly as f32);
        let edges =
            (top.is_finite() && bottom.is_finite() && bottom - top > 1.0).then_some((top, bottom));
        self.pages.push(PageGlyphs {
            page: page_num,
            edges,
            ..PageGlyphs::default()
        });
        Ok(())
    }

    fn end_page(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn output_character(
        &mut self,
        trm: &Transform,
        width: f64,
        _spacing: f64,
        font_size: f64,
        ch: &str,
    ) -> Result<(), OutputError> {
        if ch.is_empty() || self.total_text > self.max_text {
            return Ok(());
        }
        let sx = trm.m11.hypot(trm.m12);
        let sy = trm.m21.hypot(trm.m22);
        let size = (font_size.abs() * sy) as f32;
        let adv = (width * font_size.abs() * sx) as f32;
        if !size.is_finite() || !adv.is_finite() || size <= 0.01 || size > 5000.0 {
            return Ok(());
        }
        let angle = trm.m12.atan2(trm.m11);
        let rot = ((angle / std::f64::consts::FRAC_PI_2)
            .round()
            .rem_euclid(4.0)) as u8;
        let (dx, dy) = match rot {
            0 => (1.0, 0.0),
            1 => (0.0, 1.0),
            2 => (-1.0, 0.0),
            _ => (0.0, -1.0),
        };
        // Reading direction d, and "down" is d turned clockwise.
        let x = (trm.m31 * dx + trm.m32 * dy) as f32;
        let y = (trm.m31 * dy - trm.m32 * dx) as f32;
        if !x.is_finite() || !y.is_finite() {
            return Ok(());
        }
        let Some(page) = self.current() else {
            return Ok(());
        };
        // Fake bold draws a glyph twice, a hair apart.
        if let Some(prev) = page.glyphs.last()
            && prev.rot == rot
            && (prev.x - x).abs() < 0.15 * size
            && (prev.y - y).abs() < 0.15 * size
            && page.glyph_text(prev) == ch
            && ch.chars().any(|c| !c.is_whitespace())
        {
            return Ok(());
        }
        let start = page.text.len();
        push_expanded(&mut page.text, ch);
        let end = page.text.len();
        let added = end - start;
        page.glyphs.push(Glyph {
            x,
            y,
            adv: adv.max(0.0),
            size,
            rot,
            start: start as u32,
            end: end as u32,
        });
        self.total_text += added;
        Ok(())
    }

    fn begin_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_line(&mut self) -> Result<(), OutputError> {
        Ok(())
    }
}

/// Appends `s`, expanding the Latin ligature code points (U+FB00–FB06) as NFKC would.
fn push_expanded(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '\u{FB00}' => out.push_str("ff"),
            '\u{FB01}' => out.push_str("fi"),
            '\u{FB02}' => out.push_str("fl"),
            '\u{FB03}' => out.push_str("ffi"),
            '\u{FB04}' => out.push_str("ffl"),
            '\u{FB05}' | '\u{FB06}' => out.push_str("st"),
            // Unmapped glyphs and stray controls would only add noise.
            '\t' | '\n' | '\r' | '\u{a0}' => out.push(' '),
            '\u{0}'..='\u{1f}' | '\u{fffd}' => {}
            _ => out.push(c),
        }
    }
}

/// A paragraph (or a heading candidate) in reading order.
#[derive(Debug, Clone)]
pub(crate) struct Para {
    pub(crate) text: String,
    /// Average glyph size.
    pub(crate) size: f32,
    pub(crate) lines: usize,
}

/// A stream-order run of glyphs on one baseline with no large gap.
#[derive(Debug, Clone)]
struct Run {
    /// Indices of the run's first and last glyph in [`PageGlyphs::glyphs`].
    first: usize,
    last: usize,
    x0: f32,
    x1: f32,
    y: f32,
    size: f32,
    text: String,
    chars: usize,
    size_sum: f32,
}

#[derive(Debug)]
struct Line {
    /// Indices of the line's runs.
    runs: Vec<usize>,
    x0: f32,
    x1: f32,
    y: f32,
    size: f32,
    text: String,
    chars: usize,
    size_sum: f32,
}

/// Lays out one page.
pub(crate) fn layout(page: &PageGlyphs) -> Vec<Para> {
    let mut paras = Vec::new();
    for rot in 0..4u8 {
        let runs = build_runs(page, rot);
        if runs.is_empty() {
            continue;
        }
        let idx: Vec<usize> = (0..runs.len()).collect();
        let mut groups = Vec::new();
        split_columns(&runs, idx, 0, &mut groups);
        for group in groups {
            let lines = build_lines(&runs, group);
            build_paras(&lines, &mut paras);
        }
    }
    paras
}

/// An upright line near the top or bottom edge of a page: a running header or footer candidate.
#[derive(Debug, Clone)]
pub(crate) struct EdgeLine {
    pub(crate) text: String,
    /// 0 for the line closest to its edge, 1 for the next one in.
    pub(crate) rank: usize,
    /// Glyph index ranges (inclusive) of the line's runs.
    spans: Vec<(usize, usize)>,
}

/// The upright lines within `band` (a fraction of the page height) of the top and bottom edge,
/// at most `per_edge` from each, outermost first. Without a usable media box the extent of the
/// text stands in for the page.
pub(crate) fn edge_lines(page: &PageGlyphs, band: f32, per_edge: usize) -> Vec<EdgeLine> {
    let runs = build_runs(page, 0);
    if runs.is_empty() {
        return Vec::new();
    }
    let lines = build_lines(&runs, (0..runs.len()).collect());
    let text_top = lines.iter().map(|l| l.y).fold(f32::INFINITY, f32::min);
    let text_bottom = lines.iter().map(|l| l.y).fold(f32::NEG_INFINITY, f32::max);
    let (top, bottom) = match page.edges {
        // Text far outside the media box means the box does not describe the page.
        Some((t, b)) if text_top >= t - 0.1 * (b - t) && text_bottom <= b + 0.1 * (b - t) => (t, b),
        _ => (text_top, text_bottom),
    };
    let height = bottom - top;
    if height.is_nan() || height <= 0.0 {
        return Vec::new();
    }
    let edge = |line: &Line, rank: usize| EdgeLine {
        text: line.text.clone(),
        rank,
        spans: line
            .runs
            .iter()
            .map(|&i| (runs[i].first, runs[i].last))
            .collect(),
    };
    let mut out = Vec::new();
    let n_top = lines
        .iter()
        .take(per_edge)
        .take_while(|l| l.y <= top + band * height)
        .count();
    for (rank, line) in lines.iter().take(n_top).enumerate() {
        out.push(edge(line, rank));
    }
    for (rank, line) in lines[n_top..]
        .iter()
        .rev()
        .take(per_edge)
        .take_while(|l| l.y >= bottom - band * height)
        .enumerate()
    {
        out.push(edge(line, rank));
    }
    out
}

fn build_runs(page: &PageGlyphs, rot: u8) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    let mut prev: Option<Glyph> = None;
    for (gi, g) in page.glyphs.iter().enumerate().filter(|(_, g)| g.rot == rot) {
        let text = page.glyph_text(g);
        let is_space = text.chars().all(char::is_whitespace);
        let continues = prev.is_some_and(|p| {
            let size = p.size.max(g.size);
            let gap = g.x - (p.x + p.adv);
            (g.y - p.y).abs() <= 0.3 * size && gap > -0.5 * size && gap < 1.5 * size
        });
        match (continues, runs.last_mut(), prev) {
            (true, Some(run), Some(p)) => {
                if is_space {
                    if !run.text.ends_with(' ') {
                        run.text.push(' ');
                    }
                } else {
                    let gap = g.x - (p.x + p.adv);
                    if gap > 0.15 * p.size.max(g.size) && !run.text.ends_with(' ') {
                        run.text.push(' ');
                    }
                    run.text.push_str(text);
                    run.chars += 1;
                    run.size_sum += g.size;
                    run.size = run.size.max(g.size);
                }
                run.x0 = run.x0.min(g.x);
                run.x1 = run.x1.max(g.x + g.adv);
                run.last = gi;
            }
            _ => {
                if is_space {
                    // A run never starts with a space; the gap speaks for itself.
                    prev = None;
                    continue;
                }
                runs.push(Run {
                    first: gi,
                    last: gi,
                    x0: g.x,
                    x1: g.x + g.adv,
                    y: g.y,
                    size: g.size,
                    text: text.to_string(),
                    chars: 1,
                    size_sum: g.size,
                });
            }
        }
        prev = Some(*g);
    }
    for r in &mut runs {
        let t = r.text.trim_end();
        r.text.truncate(t.len());
    }
    runs.retain(|r| !r.text.is_empty());
    runs
}

/// Splits runs into groups in reading order: full-width bands top to bottom, and within a band
/// the left column before the right one. Recurses so three-column pages also work.
fn split_columns(runs: &[Run], mut idx: Vec<usize>, depth: u32, out: &mut Vec<Vec<usize>>) {
    if idx.len() < 8 || depth > 4 {
        out.push(idx);
        return;
    }
    let Some(gutter) = find_gutter(runs, &idx) else {
        out.push(idx);
        return;
    };
    idx.sort_by(|&a, &b| runs[a].y.total_cmp(&runs[b].y));
    let mut left = Vec::new();
    let mut right = Vec::new();
    let mut span: Vec<usize> = Vec::new();
    let flush = |left: &mut Vec<usize>, right: &mut Vec<usize>, out: &mut Vec<Vec<usize>>| {
        if !left.is_empty() {
            split_columns(runs, std::mem::take(left), depth + 1, out);
        }
        if !right.is_empty() {
            split_columns(runs, std::mem::take(right), depth + 1, out);
        }
    };
    for i in idx {
        let r = &runs[i];
        if r.x1 <= gutter {
            if !span.is_empty() {
                out.push(std::mem::take(&mut span));
            }
            left.push(i);
        } else if r.x0 >= gutter {
            if !span.is_empty() {
                out.push(std::mem::take(&mut span));
            }
            right.push(i);
        } else {
            flush(&mut left, &mut right, out);
            span.push(i);
        }
    }
    if !span.is_empty() {
        out.push(span);
    }
    flush(&mut left, &mut right, out);
}

/// Finds the x of a vertical gutter that few runs cross, with plenty of text on both sides.
fn find_gutter(runs: &[Run], idx: &[usize]) -> Option<f32> {
    let x0 = idx
        .iter()
        .map(|&i| runs[i].x0)
        .fold(f32::INFINITY, f32::min);
    let x1 = idx
        .iter()
        .map(|&i| runs[i].x1)
        .fold(f32::NEG_INFINITY, f32::max);
    let mut sizes: Vec<f32> = idx.iter().map(|&i| runs[i].size).collect();
    sizes.sort_by(f32::total_cmp);
    let size = sizes.get(sizes.len() / 2).copied().unwrap_or(10.0);
    let width = x1 - x0;
    if width.is_nan() || width <= 12.0 * size {
        return None;
    }
    let bins = 2000usize.min(width.ceil() as usize).max(1);
    let scale = bins as f32 / width;
    let mut diff = vec![0i32; bins + 1];
    for &i in idx {
        let a = (((runs[i].x0 - x0) * scale) as usize).min(bins);
        let b = (((runs[i].x1 - x0) * scale).ceil() as usize).min(bins);
        diff[a] += 1;
        diff[b] -= 1;
    }
    let mut cov = Vec::with_capacity(bins);
    let mut c = 0i32;
    for d in &diff[..bins] {
        c += d;
        cov.push(c);
    }
    // The gutter is a deep valley in the coverage profile: few runs cross it (titles, wide
    // figures) compared with the columns on either side.
    let lo = (bins as f32 * 0.2) as usize;
    let hi = ((bins as f32 * 0.8) as usize).max(lo + 1).min(bins);
    let m = *cov[lo..hi].iter().min()?;
    let t = m + (m / 5).max(1);
    let mut best: Option<(usize, usize)> = None;
    let mut start: Option<usize> = None;
    let scan = cov[lo..hi]
        .iter()
        .enumerate()
        .map(|(i, c)| (i + lo, *c))
        .chain(std::iter::once((hi, i32::MAX)));
    for (b, c) in scan {
        if c <= t {
            start.get_or_insert(b);
        } else if let Some(s) = start.take()
            && best.is_none_or(|(bs, be)| b - s > be - bs)
        {
            best = Some((s, b));
        }
    }
    let (s, e) = best?;
    if ((e - s) as f32) / scale < 0.8 * size {
        return None;
    }
    let left_peak = cov[..s].iter().copied().max().unwrap_or(0);
    let right_peak = cov[e..].iter().copied().max().unwrap_or(0);
    if (m as f32) > 0.3 * left_peak.min(right_peak) as f32 {
        return None;
    }
    let gutter = x0 + (s + e) as f32 / 2.0 / scale;
    // Both sides must hold real columns that sit side by side, not a caption over a table.
    let (mut nl, mut nr) = (0usize, 0usize);
    let (mut l_top, mut l_bot, mut r_top, mut r_bot) = (
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::INFINITY,
        f32::NEG_INFINITY,
    );
    for &i in idx {
        let r = &runs[i];
        if r.x1 <= gutter {
            nl += 1;
            l_top = l_top.min(r.y);
            l_bot = l_bot.max(r.y);
        } else if r.x0 >= gutter {
            nr += 1;
            r_top = r_top.min(r.y);
            r_bot = r_bot.max(r.y);
        }
    }
    let min_side = 4usize.max(idx.len() / 8);
    if nl < min_side || nr < min_side {
        return None;
    }
    let overlap = l_bot.min(r_bot) - l_top.max(r_top);
    let shorter = (l_bot - l_top).min(r_bot - r_top);
    if overlap < 0.3 * shorter || shorter < 3.0 * size {
        return None;
    }
    Some(gutter)
}

fn build_lines(runs: &[Run], mut idx: Vec<usize>) -> Vec<Line> {
    idx.sort_by(|&a, &b| runs[a].y.total_cmp(&runs[b].y));
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut ref_y = f32::NEG_INFINITY;
    let mut ref_size = 0.0f32;
    for i in idx {
        let r = &runs[i];
        match groups.last_mut() {
            Some(g) if (r.y - ref_y).abs() < 0.5 * ref_size.max(r.size) => {
                g.push(i);
                if r.size > ref_size {
                    ref_size = r.size;
                    ref_y = r.y;
                }
            }
            _ => {
                groups.push(vec![i]);
                ref_y = r.y;
                ref_size = r.size;
            }
        }
    }
    let mut lines = Vec::with_capacity(groups.len());
    for mut g in groups {
        g.sort_by(|&a, &b| runs[a].x0.total_cmp(&runs[b].x0));
        let mut line = Line {
            runs: Vec::with_capacity(g.len()),
            x0: f32::INFINITY,
            x1: f32::NEG_INFINITY,
            y: 0.0,
            size: 0.0,
            text: String::new(),
            chars: 0,
            size_sum: 0.0,
        };
        let mut last_x1 = f32::NEG_INFINITY;
        for i in g {
            let r = &runs[i];
            if !line.text.is_empty() {
                let gap = r.x0 - last_x1;
                let cjk = line.text.chars().next_back().is_some_and(is_cjk)
                    && r.text.chars().next().is_some_and(is_cjk);
                if gap > 0.1 * r.size && !(cjk && gap < 0.5 * r.size) {
                    line.text.push(' ');
                }
            }
            line.text.push_str(&r.text);
            line.runs.push(i);
            if r.size >= line.size {
                line.size = r.size;
                line.y = r.y;
            }
            line.x0 = line.x0.min(r.x0);
            line.x1 = line.x1.max(r.x1);
            line.chars += r.chars;
            line.size_sum += r.size_sum;
            last_x1 = last_x1.max(r.x1);
        }
        lines.push(line);
    }
    lines
}

fn build_paras(lines: &[Line], out: &mut Vec<Para>) {
    if lines.is_empty() {
        return;
    }
    let col_x0 = lines.iter().map(|l| l.x0).fold(f32::INFINITY, f32::min);
    let col_x1 = lines.iter().map(|l| l.x1).fold(f32::NEG_INFINITY, f32::max);
    let mut gaps: Vec<f32> = lines
        .windows(2)
        .filter(|w| similar_size(w[0].avg_size(), w[1].avg_size()))
        .map(|w| w[1].y - w[0].y)
        .filter(|d| *d > 0.0)
        .collect();
    gaps.sort_by(f32::total_cmp);
    let spacing = gaps.get(gaps.len() / 2).copied();

    let mut cur: Option<(String, usize, f32, usize)> = None; // text, chars, size sum, lines
    let mut prev: Option<&Line> = None;
    for line in lines {
        let brk = match prev {
            None => true,
            Some(p) => {
                let dy = line.y - p.y;
                let size = p.avg_size().max(line.avg_size());
                let limit = match spacing {
                    Some(s) if gaps.len() >= 2 => (1.35 * s).max(1.1 * size).min(2.5 * size),
                    _ => 1.7 * size,
                };
                let indented = line.x0 > col_x0 + 0.8 * size
                    && line.x0 < col_x0 + 5.0 * size
                    && p.x0 < col_x0 + 0.5 * size;
                let short_end = p.x1 < col_x1 - 3.0 * size
                    && p.text
                        .ends_with(['.', '!', '?', ':', '。', '！', '？', '：']);
                dy > limit
                    || dy < 0.0
                    || !similar_size(p.avg_size(), line.avg_size())
                    || indented
                    || short_end
            }
        };
        if brk {
            if let Some((text, chars, sum, n)) = cur.take() {
                out.push(finish_para(text, chars, sum, n));
            }
            cur = Some((line.text.clone(), line.chars, line.size_sum, 1));
        } else if let Some((text, chars, sum, n)) = cur.as_mut() {
            join_line(text, &line.text);
            *chars += line.chars;
            *sum += line.size_sum;
            *n += 1;
        }
        prev = Some(line);
    }
    if let Some((text, chars, sum, n)) = cur.take() {
        out.push(finish_para(text, chars, sum, n));
    }
}

fn finish_para(text: String, chars: usize, size_sum: f32, lines: usize) -> Para {
    Para {
        text,
        size: if chars > 0 {
            size_sum / chars as f32
        } else {
            0.0
        },
        lines,
    }
}

impl Line {
    fn avg_size(&self) -> f32 {
        if self.chars > 0 {
            self.size_sum / self.chars as f32
        } else {
            self.size
        }
    }
}

fn similar_size(a: f32, b: f32) -> bool {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    hi <= lo * 1.15 + 0.3
}

/// Joins a wrapped line onto its paragraph, undoing end-of-line hyphenation where the word
/// clearly continues ("infor-" + "mation").
fn join_line(text: &mut String, next: &str) {
    let mut tail = text.chars().rev();
    let last = tail.next();
    let before = tail.next();
    let first = next.chars().next();
    if last == Some('-')
        && before.is_some_and(char::is_alphabetic)
        && first.is_some_and(char::is_lowercase)
    {
        text.pop();
        text.push_str(next);
        return;
    }
    let cjk = last.is_some_and(is_cjk) || first.is_some_and(is_cjk);
    if !cjk && !text.ends_with(' ') {
        text.push(' ');
    }
    text.push_str(next);
}

/// Scripts written without spaces between words, where a line break is not a space.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x2E80..=0x2FDF | 0x3000..=0x303F | 0x3040..=0x30FF | 0x3100..=0x312F | 0x31A0..=0x31FF
        | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF
        | 0x20000..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyphenated_words_are_joined() {
        let mut t = String::from("the infor-");
        join_line(&mut t, "mation age");
        assert_eq!(t, "the information age");
        let mut t = String::from("well-");
        join_line(&mut t, "Known");
        assert_eq!(t, "well- Known");
        let mut t = String::from("中文");
        join_line(&mut t, "文本");
        assert_eq!(t, "中文文本");
    }

    #[test]
    fn ligatures_expand() {
        let mut s = String::new();
        push_expanded(&mut s, "\u{FB01}nd \u{FB03}");
        assert_eq!(s, "find ffi");
    }
}
