//! What the OCR tests and the OCR bench share: a scan-like copy of a rendered page, and the
//! character error rate.

use image::{Rgb, RgbImage};

/// A scan-like copy: rotated by `degrees`, speckled (one pixel in `speckle` darkened), and
/// read back from a JPEG of `quality`.
pub(crate) fn scanned(page: &RgbImage, degrees: f32, speckle: u32, quality: u8) -> RgbImage {
    let (w, h) = page.dimensions();
    let (sin, cos) = degrees.to_radians().sin_cos();
    let (cx, cy) = (w as f32 / 2.0, h as f32 / 2.0);
    let mut out = RgbImage::from_pixel(w, h, Rgb([255, 255, 255]));
    let mut seed = 12345u32;
    for y in 0..h {
        for x in 0..w {
            let (dx, dy) = (x as f32 - cx, y as f32 - cy);
            let (sx, sy) = (cx + dx * cos + dy * sin, cy - dx * sin + dy * cos);
            let mut v = if sx >= 0.0 && sy >= 0.0 && (sx as u32) < w && (sy as u32) < h {
                page.get_pixel(sx as u32, sy as u32)[0]
            } else {
                255
            };
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            if (seed >> 16).is_multiple_of(speckle) {
                v = v.saturating_sub(120);
            }
            out.put_pixel(x, y, Rgb([v; 3]));
        }
    }
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, quality)
        .encode_image(&out)
        .expect("jpeg");
    knowhub_ocr::decode_image(&jpeg).expect("decode")
}

/// Character errors (edit distance) of `got` against `want`, and `want`'s length, after
/// removing all whitespace (`cjk`) or folding runs of it into one space.
pub(crate) fn char_errors(got: &str, want: &str, cjk: bool) -> (usize, usize) {
    let norm = |s: &str| -> Vec<char> {
        if cjk {
            s.chars().filter(|c| !c.is_whitespace()).collect()
        } else {
            s.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .collect()
        }
    };
    let (a, b) = (norm(got), norm(want));
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    (row[b.len()], b.len())
}
