//! Text recognition: each detected line cut out of the page along its own axis (so a skewed
//! scan reads as level text), scaled to the recogniser's height of 48 pixels, and the model's
//! per-column class probabilities decoded greedily (CTC: drop blanks and repeats).

use image::{Rgb, RgbImage};
#[cfg(test)]
use rten_imageproc::PointF;
use rten_imageproc::RotatedRect;
use rten_tensor::NdTensor;
use rten_tensor::prelude::*;

use crate::detect::normalized_bgr;
use crate::{OcrError, Result};

/// The recogniser's input height.
pub const LINE_HEIGHT: u32 = 48;
/// Crops wider than this (after scaling to [`LINE_HEIGHT`]) are cut into pieces: one very
/// long line must not make one huge model run.
pub const MAX_LINE_WIDTH: u32 = 1920;

/// `rect` of `image`, resampled along the rectangle's axes to [`LINE_HEIGHT`] rows.
pub fn crop_line(image: &RgbImage, rect: &RotatedRect) -> RgbImage {
    let (width, height) = (rect.width().max(1.0), rect.height().max(1.0));
    let out_h = LINE_HEIGHT;
    let out_w = ((LINE_HEIGHT as f32 * width / height).round() as u32).clamp(8, 8 * MAX_LINE_WIDTH);
    let up = rect.up_axis();
    // "Right" along the text: up turned a quarter clockwise (image y grows downwards).
    let (right_x, right_y) = (-up.y, up.x);
    let center = rect.center();
    let mut out = RgbImage::new(out_w, out_h);
    for v in 0..out_h {
        let across = ((v as f32 + 0.5) / out_h as f32 - 0.5) * height;
        for u in 0..out_w {
            let along = ((u as f32 + 0.5) / out_w as f32 - 0.5) * width;
            let x = center.x + right_x * along - up.x * across;
            let y = center.y + right_y * along - up.y * across;
            out.put_pixel(u, v, sample(image, x, y));
        }
    }
    out
}

/// Bilinear sample at (x, y) (pixel centres at +0.5); white outside the image, the usual
/// paper around a scan.
fn sample(image: &RgbImage, x: f32, y: f32) -> Rgb<u8> {
    let (w, h) = (image.width() as i64, image.height() as i64);
    let (fx, fy) = (x - 0.5, y - 0.5);
    let (x0, y0) = (fx.floor() as i64, fy.floor() as i64);
    let (tx, ty) = (fx - x0 as f32, fy - y0 as f32);
    let at = |xi: i64, yi: i64| -> [f32; 3] {
        if xi < 0 || yi < 0 || xi >= w || yi >= h {
            [255.0; 3]
        } else {
            let p = image.get_pixel(xi as u32, yi as u32);
            [f32::from(p[0]), f32::from(p[1]), f32::from(p[2])]
        }
    };
    let (a, b, c, d) = (
        at(x0, y0),
        at(x0 + 1, y0),
        at(x0, y0 + 1),
        at(x0 + 1, y0 + 1),
    );
    let mut px = [0u8; 3];
    for i in 0..3 {
        let top = a[i] * (1.0 - tx) + b[i] * tx;
        let bottom = c[i] * (1.0 - tx) + d[i] * tx;
        px[i] = (top * (1.0 - ty) + bottom * ty).round().clamp(0.0, 255.0) as u8;
    }
    Rgb(px)
}

/// Recognises line crops (height [`LINE_HEIGHT`]); `None` for a crop where nothing was read.
/// A crop wider than [`MAX_LINE_WIDTH`] is read in pieces. Each piece is one model run:
/// batching lines of similar width (padded) measured slower and less accurate on two cores.
pub fn recognize_all(
    model: &rten::Model,
    crops: &[RgbImage],
    dictionary: &[String],
) -> Result<Vec<Option<(String, f32)>>> {
    let mut out = Vec::with_capacity(crops.len());
    for crop in crops {
        let mut text = String::new();
        let mut scores = Vec::new();
        let mut start = 0;
        while start < crop.width() {
            let w = (crop.width() - start).min(MAX_LINE_WIDTH);
            let piece = image::imageops::crop_imm(crop, start, 0, w, crop.height()).to_image();
            let (piece_text, piece_scores) = recognize_piece(model, &piece, dictionary)?;
            text.push_str(&piece_text);
            scores.extend(piece_scores);
            start += w;
        }
        let text = text.trim().to_owned();
        out.push((!text.is_empty() && !scores.is_empty()).then(|| {
            let score = scores.iter().sum::<f32>() / scores.len() as f32;
            (text, score)
        }));
    }
    Ok(out)
}

/// One model run over a piece of a line: its text and its characters' scores.
fn recognize_piece(
    model: &rten::Model,
    piece: &RgbImage,
    dictionary: &[String],
) -> Result<(String, Vec<f32>)> {
    let input = normalized_bgr(piece);
    let output = model
        .run_one(input.into(), None)
        .map_err(|e| OcrError::Run(e.to_string()))?;
    let probs: NdTensor<f32, 3> = output
        .try_into()
        .map_err(|e: rten::TryFromValueError| OcrError::Run(format!("recognition output: {e}")))?;
    let [_, steps, classes] = probs.shape();
    if classes != dictionary.len() + 2 {
        return Err(OcrError::Dictionary {
            dictionary: dictionary.len(),
            classes,
        });
    }
    let data: Vec<f32> = probs.iter().copied().collect();
    let mut text = String::new();
    let mut scores = Vec::new();
    for (class, p) in ctc_greedy(&data, steps, classes) {
        match dictionary.get(class - 1) {
            Some(entry) => text.push_str(entry),
            None => text.push(' '),
        }
        scores.push(p);
    }
    Ok((text, scores))
}

/// Greedy CTC decoding of `steps` × `classes` probabilities (class 0 the blank): the best
/// class of each step, repeats merged and blanks dropped, with each kept class's probability.
pub fn ctc_greedy(probs: &[f32], steps: usize, classes: usize) -> Vec<(usize, f32)> {
    let mut out = Vec::new();
    let mut previous = 0;
    for step in probs.chunks_exact(classes).take(steps) {
        let (best, p) =
            step.iter()
                .copied()
                .enumerate()
                .fold(
                    (0, f32::NEG_INFINITY),
                    |acc, (i, p)| if p > acc.1 { (i, p) } else { acc },
                );
        if best != 0 && best != previous {
            out.push((best, p));
        }
        previous = best;
    }
    out
}

/// Where a point of a crop came from on the page (for tests of the sampling's orientation).
#[cfg(test)]
fn page_point(rect: &RotatedRect, u: f32, v: f32) -> PointF {
    let up = rect.up_axis();
    let (right_x, right_y) = (-up.y, up.x);
    let along = (u - 0.5) * rect.width();
    let across = (v - 0.5) * rect.height();
    let c = rect.center();
    PointF::from_yx(
        c.y + right_y * along - up.y * across,
        c.x + right_x * along - up.x * across,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rten_imageproc::Vec2;

    #[test]
    fn ctc_drops_blanks_and_merges_repeats() {
        // Steps (classes 0..4): a a _ a b b _ → "a a b".
        let best = [1, 1, 0, 1, 2, 2, 0];
        let mut probs = Vec::new();
        for &b in &best {
            let mut row = vec![0.05f32; 4];
            row[b] = 0.85;
            probs.extend(row);
        }
        let decoded: Vec<usize> = ctc_greedy(&probs, best.len(), 4)
            .into_iter()
            .map(|(c, _)| c)
            .collect();
        assert_eq!(decoded, vec![1, 1, 2]);
    }

    #[test]
    fn a_level_crop_reads_left_to_right_and_top_to_bottom() {
        let rect = RotatedRect::new(
            PointF::from_yx(50.0, 100.0),
            Vec2::from_yx(-1.0, 0.0),
            80.0,
            20.0,
        );
        let left_top = page_point(&rect, 0.0, 0.0);
        assert!(
            (left_top.x - 60.0).abs() < 1e-3 && (left_top.y - 40.0).abs() < 1e-3,
            "{left_top:?}"
        );
        let right_bottom = page_point(&rect, 1.0, 1.0);
        assert!((right_bottom.x - 140.0).abs() < 1e-3 && (right_bottom.y - 60.0).abs() < 1e-3);
    }

    #[test]
    fn a_crop_samples_the_rectangle_it_names() {
        // A black bar on white; the crop of exactly the bar is dark, the crop beside it white.
        let mut page = RgbImage::from_pixel(200, 100, Rgb([255, 255, 255]));
        for y in 40..60 {
            for x in 60..140 {
                page.put_pixel(x, y, Rgb([0, 0, 0]));
            }
        }
        let bar = RotatedRect::new(
            PointF::from_yx(50.0, 100.0),
            Vec2::from_yx(-1.0, 0.0),
            76.0,
            16.0,
        );
        let crop = crop_line(&page, &bar);
        assert_eq!(crop.height(), LINE_HEIGHT);
        assert_eq!(crop.width(), 228);
        assert!(crop.pixels().all(|p| p[0] < 10), "the bar's crop is black");
        let beside = RotatedRect::new(
            PointF::from_yx(20.0, 100.0),
            Vec2::from_yx(-1.0, 0.0),
            76.0,
            16.0,
        );
        assert!(crop_line(&page, &beside).pixels().all(|p| p[0] > 245));
    }
}
