//! Text detection: the page scaled for the DB (differentiable binarisation) model, and its
//! probability map turned into one rotated box per text line — threshold, connected
//! components' outlines, the smallest rotated rectangle around each, a score filter, and the
//! "unclip" that grows the shrunken kernel the model predicts back to the line's extent.

use image::RgbImage;
use rten_imageproc::{PointF, RetrievalMode, RotatedRect, Vec2, convex_hull, find_contours};
use rten_tensor::prelude::*;
use rten_tensor::{NdTensor, NdTensorView};

use crate::{OcrError, Result};

/// Post-processing settings (PaddleOCR's defaults for its DB detectors).
#[derive(Debug, Clone)]
pub struct Params {
    /// The page is scaled down so that its longer side is at most this many pixels.
    pub max_side: u32,
    /// A pixel is text when its probability exceeds this.
    pub pixel_threshold: f32,
    /// A box is kept when the mean probability inside it reaches this.
    pub box_threshold: f32,
    /// How far the kernel is grown: by area × ratio / perimeter on every side.
    pub unclip_ratio: f32,
    /// Boxes whose shorter side is below this (in map pixels) are noise.
    pub min_size: f32,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            max_side: 2048,
            pixel_threshold: 0.3,
            box_threshold: 0.5,
            unclip_ratio: 1.5,
            min_size: 3.0,
        }
    }
}

/// The model's input size for an image: scaled to `max_side` at most, each side a multiple of
/// 32 (the network downsamples five times).
pub fn input_size(width: u32, height: u32, max_side: u32) -> (u32, u32) {
    let longest = width.max(height).max(1) as f32;
    let scale = (max_side as f32 / longest).min(1.0);
    let round = |v: u32| (((v as f32 * scale) / 32.0).round() as u32).max(1) * 32;
    (round(width), round(height))
}

/// Runs detection on `image`; boxes are in the image's pixels, their width along the text.
pub fn detect(model: &rten::Model, image: &RgbImage, params: &Params) -> Result<Vec<RotatedRect>> {
    let (w, h) = input_size(image.width(), image.height(), params.max_side);
    let scaled = image::imageops::resize(image, w, h, image::imageops::FilterType::Triangle);
    let input = normalized_bgr(&scaled);
    let output = model
        .run_one(input.into(), None)
        .map_err(|e| OcrError::Run(e.to_string()))?;
    let map: NdTensor<f32, 4> = output
        .try_into()
        .map_err(|e: rten::TryFromValueError| OcrError::Run(format!("detection output: {e}")))?;
    let [_, _, mh, mw] = map.shape();
    if (mh, mw) != (h as usize, w as usize) {
        return Err(OcrError::Run(format!(
            "detection map is {mw} × {mh}, expected {w} × {h}"
        )));
    }
    let map = map.slice((0, 0));
    let scale_x = image.width() as f32 / w as f32;
    let scale_y = image.height() as f32 / h as f32;
    Ok(boxes_from_map(map, params)
        .into_iter()
        .map(|r| scale_rect(&r, scale_x, scale_y))
        .collect())
}

/// `image` as a 1 × 3 × H × W tensor of BGR channels scaled to [-1, 1], the input both
/// PP-OCR models take.
pub(crate) fn normalized_bgr(image: &RgbImage) -> NdTensor<f32, 4> {
    let (w, h) = (image.width() as usize, image.height() as usize);
    let mut data = vec![0.0f32; 3 * w * h];
    for (x, y, px) in image.enumerate_pixels() {
        let at = y as usize * w + x as usize;
        for (channel, value) in [px[2], px[1], px[0]].into_iter().enumerate() {
            data[channel * w * h + at] = f32::from(value) / 127.5 - 1.0;
        }
    }
    NdTensor::from_data([1, 3, h, w], data)
}

/// Line boxes in the coordinates of `map` (H × W text probabilities).
pub fn boxes_from_map(map: NdTensorView<'_, f32, 2>, params: &Params) -> Vec<RotatedRect> {
    let mask = map.map(|&p| p > params.pixel_threshold);
    let contours = find_contours(mask.view(), RetrievalMode::External);
    let mut boxes = Vec::new();
    for polygon in contours.iter() {
        if polygon.len() < 4 {
            continue;
        }
        let points: Vec<PointF> = polygon.iter().map(|p| p.to_f32()).collect();
        let Some(rect) = smallest_rect(&points) else {
            continue;
        };
        if rect.width().min(rect.height()) < params.min_size {
            continue;
        }
        if mean_inside(map, &rect) < params.box_threshold {
            continue;
        }
        let grown = unclip(&rect, params.unclip_ratio);
        if grown.width().min(grown.height()) < params.min_size + 2.0 {
            continue;
        }
        boxes.push(along_text(&grown));
    }
    boxes
}

/// The rotated rectangle of least area around `points` (one of its sides lies on an edge of
/// their convex hull). Written here rather than taken from `rten-imageproc`, whose version
/// assumes one winding order of the hull and returns flat rectangles for the other.
fn smallest_rect(points: &[PointF]) -> Option<RotatedRect> {
    let hull = convex_hull(points);
    let first = *hull.first()?;
    if hull.len() < 3 {
        let last = hull[hull.len() - 1];
        let center = PointF::from_yx((first.y + last.y) / 2.0, (first.x + last.x) / 2.0);
        let along = Vec2::from_yx(last.y - first.y, last.x - first.x);
        let length = along.length();
        let up = if length > 0.0 {
            along.normalized().perpendicular()
        } else {
            Vec2::from_yx(-1.0, 0.0)
        };
        return Some(RotatedRect::new(center, up, length, 0.0));
    }
    let mut best: Option<(f32, RotatedRect)> = None;
    for (i, &start) in hull.iter().enumerate() {
        let end = hull[(i + 1) % hull.len()];
        let edge = Vec2::from_yx(end.y - start.y, end.x - start.x);
        if edge.length() == 0.0 {
            continue;
        }
        let along = edge.normalized();
        let across = along.perpendicular();
        let (mut a0, mut a1, mut c0, mut c1) = (f32::MAX, f32::MIN, f32::MAX, f32::MIN);
        for p in &hull {
            let d = Vec2::from_yx(p.y - start.y, p.x - start.x);
            let (a, c) = (along.dot(d), across.dot(d));
            (a0, a1, c0, c1) = (a0.min(a), a1.max(a), c0.min(c), c1.max(c));
        }
        let area = (a1 - a0) * (c1 - c0);
        if best.as_ref().is_none_or(|(b, _)| area < *b) {
            let mid_a = (a0 + a1) / 2.0;
            let mid_c = (c0 + c1) / 2.0;
            let center = PointF::from_yx(
                start.y + along.y * mid_a + across.y * mid_c,
                start.x + along.x * mid_a + across.x * mid_c,
            );
            best = Some((area, RotatedRect::new(center, across, a1 - a0, c1 - c0)));
        }
    }
    best.map(|(_, r)| r)
}

/// Mean of `map` over the pixels inside `rect`.
fn mean_inside(map: NdTensorView<'_, f32, 2>, rect: &RotatedRect) -> f32 {
    let [h, w] = map.shape();
    let [left, top, right, bottom] = bounds(rect);
    let (x0, y0) = (
        left.floor().max(0.0) as usize,
        top.floor().max(0.0) as usize,
    );
    let x1 = (right.ceil().max(0.0) as usize).min(w.saturating_sub(1));
    let y1 = (bottom.ceil().max(0.0) as usize).min(h.saturating_sub(1));
    let (mut sum, mut n) = (0.0f32, 0u32);
    for y in y0..=y1 {
        for x in x0..=x1 {
            if rect.contains(PointF::from_yx(y as f32, x as f32)) {
                sum += map[[y, x]];
                n += 1;
            }
        }
    }
    if n == 0 { 0.0 } else { sum / n as f32 }
}

/// The model predicts a shrunken kernel of each line; it is grown by the offset the training
/// shrank it by (area × ratio / perimeter) on every side.
fn unclip(rect: &RotatedRect, ratio: f32) -> RotatedRect {
    let (w, h) = (rect.width(), rect.height());
    let perimeter = 2.0 * (w + h);
    if perimeter <= 0.0 {
        return *rect;
    }
    let distance = w * h * ratio / perimeter;
    rect.expanded(2.0 * distance, 2.0 * distance)
}

/// The same rectangle with its width along the text (the longer side) and "up" pointing up
/// the page, so that crops read left to right; a vertical line reads top to bottom.
pub(crate) fn along_text(rect: &RotatedRect) -> RotatedRect {
    let (mut up, width, height) = if rect.height() > rect.width() {
        (rect.up_axis().perpendicular(), rect.height(), rect.width())
    } else {
        (rect.up_axis(), rect.width(), rect.height())
    };
    if up.y > 0.0 || (up.y == 0.0 && up.x < 0.0) {
        up = Vec2::from_yx(-up.y, -up.x);
    }
    RotatedRect::new(rect.center(), up, width, height)
}

fn scale_rect(rect: &RotatedRect, sx: f32, sy: f32) -> RotatedRect {
    let corners = rect.corners().map(|c| PointF::from_yx(c.y * sy, c.x * sx));
    match smallest_rect(&corners) {
        Some(r) => along_text(&r),
        None => *rect,
    }
}

/// Axis-aligned bounds of `rect`: left, top, right, bottom.
pub fn bounds(rect: &RotatedRect) -> [f32; 4] {
    let corners = rect.corners();
    let xs = corners.iter().map(|c| c.x);
    let ys = corners.iter().map(|c| c.y);
    [
        xs.clone().fold(f32::INFINITY, f32::min),
        ys.clone().fold(f32::INFINITY, f32::min),
        xs.fold(f32::NEG_INFINITY, f32::max),
        ys.fold(f32::NEG_INFINITY, f32::max),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map_with(
        h: usize,
        w: usize,
        blobs: &[(usize, usize, usize, usize, f32)],
    ) -> NdTensor<f32, 2> {
        let mut map = NdTensor::zeros([h, w]);
        for &(top, left, bottom, right, p) in blobs {
            for y in top..bottom {
                for x in left..right {
                    map[[y, x]] = p;
                }
            }
        }
        map
    }

    #[test]
    fn input_sizes_are_multiples_of_32_within_the_limit() {
        for (w, h, max, expected) in [
            (2480, 3508, 2048, (1440, 2048)),
            (640, 480, 2048, (640, 480)),
            (100, 20, 2048, (96, 32)),
            (1, 1, 2048, (32, 32)),
            (4000, 100, 1024, (1024, 32)),
        ] {
            assert_eq!(input_size(w, h, max), expected, "{w}×{h} max {max}");
        }
    }

    #[test]
    fn each_line_kernel_becomes_one_box_grown_to_the_line() {
        // Two line kernels and one faint blob below the box threshold.
        let map = map_with(
            100,
            200,
            &[
                (10, 20, 18, 180, 0.9),
                (40, 20, 48, 100, 0.8),
                (70, 20, 78, 60, 0.4),
            ],
        );
        let boxes = boxes_from_map(map.view(), &Params::default());
        assert_eq!(boxes.len(), 2, "{boxes:?}");
        let mut found: Vec<[f32; 4]> = boxes.iter().map(bounds).collect();
        found.sort_by(|a, b| a[1].total_cmp(&b[1]));
        let [l, t, r, b] = found[0];
        // The outline through pixel centres is 159 × 7: grown by 159·7·1.5/332 ≈ 5 px on
        // every side.
        assert!(
            (l - 15.0).abs() < 1.0 && (r - 184.0).abs() < 1.0,
            "{:?}",
            found[0]
        );
        assert!(
            (t - 5.0).abs() < 1.0 && (b - 22.0).abs() < 1.0,
            "{:?}",
            found[0]
        );
        assert!(found[1][2] < 110.0, "{:?}", found[1]);
    }

    #[test]
    fn boxes_run_along_the_text_and_point_up() {
        let map = map_with(200, 60, &[(20, 25, 180, 35, 0.9)]);
        let boxes = boxes_from_map(map.view(), &Params::default());
        assert_eq!(boxes.len(), 1);
        assert!(boxes[0].width() > boxes[0].height(), "{:?}", boxes[0]);
        // Vertical: "up" points right, so the crop reads top to bottom.
        assert!(boxes[0].up_axis().x > 0.99, "{:?}", boxes[0]);
    }

    #[test]
    fn specks_are_not_lines() {
        let map = map_with(50, 50, &[(10, 10, 12, 12, 0.99)]);
        assert!(boxes_from_map(map.view(), &Params::default()).is_empty());
    }
}
