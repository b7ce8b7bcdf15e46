//! OCR accuracy and speed on pages made from real text: SciFact abstracts (English) and CMRC
//! 2018 passages (Chinese) from ../shared, typeset at 300 dpi in Noto Sans CJK, read clean and
//! as a scan (rotated 1°, speckled, JPEG quality 75). Prints one table: character error rate
//! and seconds per page for KnowHub (PP-OCRv6 small on rten) and, where installed, Tesseract
//! (Debian `tesseract-ocr`, `tesseract-ocr-chi-sim`).
//!
//! ```sh
//! cargo bench -p knowhub-ocr --bench ocr -- [--pages N]
//! ```
//! Needs `models/pp-ocrv6-small` (or `KNOWHUB_OCR_MODEL_DIR`), `../shared` (or
//! `KNOWHUB_SHARED`) and `/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc`.

#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use ab_glyph::{Font, FontRef, PxScale, ScaleFont};
use image::{Rgb, RgbImage};
use knowhub_ocr::Ocr;

#[path = "../tests/support/mod.rs"]
mod support;

const FONT: &str = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc";
/// A4 at 300 dpi.
const PAGE: (u32, u32) = (2480, 3508);
const MARGIN: f32 = 240.0;
/// 11 pt at 300 dpi.
const FONT_PX: f32 = 46.0;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn shared() -> PathBuf {
    std::env::var_os("KNOWHUB_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared"))
}

/// Texts of `count` documents spread over the corpus (every `step`-th), at least 400
/// characters each.
fn texts(corpus: &Path, count: usize, step: usize) -> Vec<String> {
    let data = std::fs::read_to_string(corpus).unwrap();
    data.lines()
        .step_by(step)
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(str::to_owned))
        .filter(|t| t.chars().count() >= 400)
        .take(count)
        .collect()
}

/// Lines of `text` that fit the page width: English wrapped at spaces, Chinese anywhere.
fn wrap(font: &FontRef<'_>, text: &str, cjk: bool) -> Vec<String> {
    let scaled = font.as_scaled(PxScale::from(FONT_PX));
    let width = PAGE.0 as f32 - 2.0 * MARGIN;
    let advance = |s: &str| {
        s.chars()
            .map(|c| scaled.h_advance(scaled.glyph_id(c)))
            .sum::<f32>()
    };
    let mut lines = Vec::new();
    let mut line = String::new();
    let units: Vec<String> = if cjk {
        text.chars()
            .filter(|c| !c.is_whitespace())
            .map(String::from)
            .collect()
    } else {
        text.split_whitespace().map(str::to_owned).collect()
    };
    for unit in units {
        let candidate = if line.is_empty() || cjk {
            format!("{line}{unit}")
        } else {
            format!("{line} {unit}")
        };
        if advance(&candidate) > width && !line.is_empty() {
            lines.push(std::mem::take(&mut line));
            line = unit;
        } else {
            line = candidate;
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

fn render(font: &FontRef<'_>, lines: &[String]) -> RgbImage {
    let scaled = font.as_scaled(PxScale::from(FONT_PX));
    let mut page = RgbImage::from_pixel(PAGE.0, PAGE.1, Rgb([255, 255, 255]));
    for (i, text) in lines.iter().enumerate() {
        let baseline = MARGIN + scaled.ascent() + FONT_PX * 1.5 * i as f32;
        let mut x = MARGIN;
        for c in text.chars() {
            let id = scaled.glyph_id(c);
            let glyph =
                id.with_scale_and_position(PxScale::from(FONT_PX), ab_glyph::point(x, baseline));
            x += scaled.h_advance(id);
            let Some(outline) = font.outline_glyph(glyph) else {
                continue;
            };
            let b = outline.px_bounds();
            outline.draw(|gx, gy, cov| {
                let (px, py) = (b.min.x as i64 + gx as i64, b.min.y as i64 + gy as i64);
                if px >= 0 && py >= 0 && (px as u32) < PAGE.0 && (py as u32) < PAGE.1 {
                    let v = (255.0 * (1.0 - cov.clamp(0.0, 1.0))) as u8;
                    let old = page.get_pixel(px as u32, py as u32)[0];
                    page.put_pixel(px as u32, py as u32, Rgb([old.min(v); 3]));
                }
            });
        }
    }
    page
}

fn tesseract(image: &RgbImage, cjk: bool) -> Option<String> {
    let dir = std::env::temp_dir().join(format!("kh-ocr-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let path = dir.join("page.png");
    image.save(&path).ok()?;
    let out = Command::new("tesseract")
        .arg(&path)
        .arg("stdout")
        .args(["-l", if cjk { "chi_sim" } else { "eng" }])
        .env("OMP_THREAD_LIMIT", "2")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[derive(Default)]
struct Row {
    errors: usize,
    chars: usize,
    seconds: f64,
    pages: usize,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let per_language = args
        .iter()
        .position(|a| a == "--pages")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(3usize);
    let model = std::env::var_os("KNOWHUB_OCR_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("models/pp-ocrv6-small"));
    let (Ok(font_data), true) = (std::fs::read(FONT), shared().is_dir()) else {
        eprintln!("skipped: needs {FONT} and ../shared");
        return;
    };
    let mut ocr = match Ocr::load(&model) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    if let Some(side) = std::env::var("KNOWHUB_OCR_MAX_SIDE")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        ocr.detect_params.max_side = side;
    }
    let font = FontRef::try_from_slice_and_index(&font_data, 2).unwrap();
    let has_tesseract = std::env::var_os("KNOWHUB_BENCH_NO_TESSERACT").is_none()
        && Command::new("tesseract").arg("--version").output().is_ok();
    let corpora = shared().join("corpora");
    let sets = [
        (
            "English (SciFact)",
            false,
            texts(&corpora.join("scifact/corpus.jsonl"), per_language * 2, 997),
        ),
        (
            "Chinese (CMRC 2018)",
            true,
            texts(
                &corpora.join("cmrc2018_zh/corpus.jsonl"),
                per_language * 2,
                97,
            ),
        ),
    ];
    let mut table: Vec<(String, String, String, Row)> = Vec::new();
    for (language, cjk, docs) in &sets {
        // Two documents a page: about a full page of text.
        for pair in docs.chunks(2).take(per_language) {
            let text = pair.join(if *cjk { "" } else { " " });
            let lines = wrap(&font, &text, *cjk);
            let max_lines = ((PAGE.1 as f32 - 2.0 * MARGIN) / (FONT_PX * 1.5)) as usize;
            let lines = &lines[..lines.len().min(max_lines)];
            let want = lines.join(if *cjk { "" } else { " " });
            let clean = render(&font, lines);
            for (variant, image) in [
                ("clean", clean.clone()),
                ("scan", support::scanned(&clean, 1.0, 500, 75)),
            ] {
                let mut runs: Vec<(&str, Option<(String, f64)>)> = Vec::new();
                let t = Instant::now();
                let got = ocr.read_page(&image).unwrap().text();
                runs.push((
                    "KnowHub (PP-OCRv6 small, rten)",
                    Some((got, t.elapsed().as_secs_f64())),
                ));
                if has_tesseract {
                    let t = Instant::now();
                    let got = tesseract(&image, *cjk);
                    runs.push((
                        "Tesseract 5 (Debian)",
                        got.map(|g| (g, t.elapsed().as_secs_f64())),
                    ));
                }
                for (engine, result) in runs {
                    let Some((got, seconds)) = result else {
                        continue;
                    };
                    let (errors, chars) = support::char_errors(&got, &want, *cjk);
                    let key = (
                        engine.to_string(),
                        language.to_string(),
                        variant.to_string(),
                    );
                    let row = match table
                        .iter_mut()
                        .find(|(e, l, v, _)| (e, l, v) == (&key.0, &key.1, &key.2))
                    {
                        Some((_, _, _, row)) => row,
                        None => {
                            table.push((key.0, key.1, key.2, Row::default()));
                            &mut table.last_mut().unwrap().3
                        }
                    };
                    row.errors += errors;
                    row.chars += chars;
                    row.seconds += seconds;
                    row.pages += 1;
                    eprintln!(
                        "{engine} · {language} · {variant}: {errors}/{chars} in {seconds:.1} s"
                    );
                }
            }
        }
    }
    println!("| engine | text | page | pages | CER | s/page |");
    println!("|---|---|---|---|---|---|");
    for (engine, language, variant, row) in &table {
        println!(
            "| {engine} | {language} | {variant} | {} | {:.2}% | {:.2} |",
            row.pages,
            100.0 * row.errors as f64 / row.chars.max(1) as f64,
            row.seconds / row.pages.max(1) as f64
        );
    }
    if !has_tesseract {
        println!("(Tesseract not installed: apt-get install tesseract-ocr tesseract-ocr-chi-sim)");
    }
}
