//! Offline OCR of page images, Chinese and English: PP-OCR text detection and recognition
//! models run by [`rten`] (pure Rust, no native runtime), with the parts the models leave to
//! their caller done here: the detection map's post-processing into rotated line boxes
//! ([`detect`]), cropping and de-skewing each line and CTC decoding ([`recognize`]), and
//! reading order into paragraphs, columns and table rows ([`layout`]).
//!
//! ```no_run
//! # fn main() -> Result<(), knowhub_ocr::OcrError> {
//! let ocr = knowhub_ocr::Ocr::load(std::path::Path::new("models/pp-ocrv6-small"))?;
//! let image = knowhub_ocr::decode_image(&std::fs::read("scan.png")?)?;
//! let page = ocr.read_page(&image)?;
//! for paragraph in &page.paragraphs {
//!     println!("{}", paragraph.text);
//! }
//! # Ok(())
//! # }
//! ```

pub mod detect;
pub mod layout;
pub mod recognize;

use std::path::Path;

pub use image::RgbImage;

pub use layout::{Paragraph, ParagraphKind};

/// File names inside an OCR model directory (`knowhub models fetch pp-ocrv6-small`).
pub const DETECTION_FILE: &str = "det.rten";
pub const RECOGNITION_FILE: &str = "rec.rten";
pub const DICTIONARY_FILE: &str = "dict.txt";

/// Images larger than this (either side, in pixels) are refused rather than decoded: a
/// decompression bomb must not take the parser's memory.
pub const MAX_IMAGE_SIDE: u32 = 20_000;
/// Total pixels of one decoded image at most (about 600 MB as RGB).
pub const MAX_IMAGE_PIXELS: u64 = 200_000_000;

#[derive(Debug, thiserror::Error)]
pub enum OcrError {
    /// The model directory lacks a file or a file is not a model.
    #[error("OCR model {path}: {reason}")]
    Model { path: String, reason: String },
    /// The dictionary does not fit the recognition model's classes.
    #[error(
        "the OCR dictionary has {dictionary} entries but the recognition model has {classes} classes \
         (expected dictionary + 2)"
    )]
    Dictionary { dictionary: usize, classes: usize },
    /// The image could not be decoded (corrupt, truncated, unsupported).
    #[error("cannot read the image: {0}")]
    Image(String),
    /// The image is larger than the limits above.
    #[error("the image is too large to read ({width} × {height} pixels)")]
    TooLarge { width: u32, height: u32 },
    /// A model run failed (an internal error, not the input's fault).
    #[error("OCR model run failed: {0}")]
    Run(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

pub type Result<T, E = OcrError> = std::result::Result<T, E>;

/// One recognised line of text.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub text: String,
    /// Mean probability of the line's characters (0–1).
    pub score: f32,
    /// Axis-aligned box in the page image's pixels: left, top, right, bottom.
    pub bbox: [f32; 4],
}

/// What OCR read on one page image.
#[derive(Debug, Clone, Default)]
pub struct Page {
    /// Lines in reading order, grouped into paragraphs, columns and table rows.
    pub paragraphs: Vec<Paragraph>,
    pub width: u32,
    pub height: u32,
}

impl Page {
    /// The page's text: paragraphs separated by blank lines.
    pub fn text(&self) -> String {
        self.paragraphs
            .iter()
            .map(|p| p.text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// Characters read, each weighted by its line's score: how much a reading says, and how
    /// surely (to choose between readings of one page turned different ways).
    pub fn confident_chars(&self) -> f32 {
        self.paragraphs
            .iter()
            .flat_map(|p| p.lines.iter())
            .map(|l| l.score * l.text.chars().count() as f32)
            .sum()
    }

    /// Mean line score over the page (1.0 for a page without text).
    pub fn mean_score(&self) -> f32 {
        let scores: Vec<f32> = self
            .paragraphs
            .iter()
            .flat_map(|p| p.lines.iter().map(|l| l.score))
            .collect();
        if scores.is_empty() {
            1.0
        } else {
            scores.iter().sum::<f32>() / scores.len() as f32
        }
    }
}

/// Pages whose mean line score is below this are also read turned half a turn: upright
/// print scores above 0.9, text read upside down well below.
const RETRY_BELOW: f32 = 0.8;

/// The detection and recognition models with their dictionary, loaded once and shared: a
/// run takes `&self`.
#[derive(Debug)]
pub struct Ocr {
    detector: rten::Model,
    recognizer: rten::Model,
    /// Class `i` (1-based; 0 is the CTC blank) is `dictionary[i - 1]`; the class after the
    /// last entry is a space.
    dictionary: Vec<String>,
    pub detect_params: detect::Params,
}

impl Ocr {
    /// Loads `det.rten`, `rec.rten` and `dict.txt` from `dir`.
    pub fn load(dir: &Path) -> Result<Ocr> {
        let model = |name: &str| {
            let path = dir.join(name);
            rten::Model::load_file(&path).map_err(|e| OcrError::Model {
                path: path.display().to_string(),
                reason: e.to_string(),
            })
        };
        let detector = model(DETECTION_FILE)?;
        let recognizer = model(RECOGNITION_FILE)?;
        let dict_path = dir.join(DICTIONARY_FILE);
        let text = std::fs::read_to_string(&dict_path).map_err(|e| OcrError::Model {
            path: dict_path.display().to_string(),
            reason: e.to_string(),
        })?;
        let dictionary: Vec<String> = text
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned())
            .collect();
        // A trailing newline leaves one empty entry that is not a class.
        let dictionary = match dictionary.last() {
            Some(last) if last.is_empty() => dictionary[..dictionary.len() - 1].to_vec(),
            _ => dictionary,
        };
        Ok(Ocr {
            detector,
            recognizer,
            dictionary,
            detect_params: detect::Params::default(),
        })
    }

    /// Reads one page image: lines detected, recognised and put in reading order. A page whose
    /// lines run mostly up and down is a scan fed sideways: it is turned a quarter first. A page
    /// read with low confidence is read again turned half a turn (fed upside down, or sideways
    /// the other way), and the reading with the most confidently read characters is kept. The
    /// boxes are in the pixels of the page as it was read.
    pub fn read_page(&self, image: &RgbImage) -> Result<Page> {
        let boxes = detect::detect(&self.detector, image, &self.detect_params)?;
        let vertical = boxes
            .iter()
            .filter(|b| b.up_axis().x.abs() > b.up_axis().y.abs())
            .count();
        let turned;
        let (image, page) = if boxes.len() >= 3 && vertical * 2 > boxes.len() {
            turned = image::imageops::rotate90(image);
            (&turned, self.read_lines(&turned, None)?)
        } else {
            (image, self.read_lines(image, Some(boxes))?)
        };
        if page.paragraphs.is_empty() || page.mean_score() >= RETRY_BELOW {
            return Ok(page);
        }
        let other = self.read_lines(&image::imageops::rotate180(image), None)?;
        Ok(if other.confident_chars() > page.confident_chars() {
            other
        } else {
            page
        })
    }

    /// Recognises the lines of `image` (detected here unless `boxes` are given).
    fn read_lines(
        &self,
        image: &RgbImage,
        boxes: Option<Vec<rten_imageproc::RotatedRect>>,
    ) -> Result<Page> {
        let boxes = match boxes {
            Some(b) => b,
            None => detect::detect(&self.detector, image, &self.detect_params)?,
        };
        let crops: Vec<RgbImage> = boxes
            .iter()
            .map(|r| recognize::crop_line(image, r))
            .collect();
        let read = recognize::recognize_all(&self.recognizer, &crops, &self.dictionary)?;
        let lines = boxes
            .iter()
            .zip(read)
            .filter_map(|(rect, read)| {
                read.map(|(text, score)| Line {
                    text,
                    score,
                    bbox: detect::bounds(rect),
                })
            })
            .collect();
        Ok(Page {
            paragraphs: layout::reading_order(lines),
            width: image.width(),
            height: image.height(),
        })
    }
}

/// An image from 8-bit samples (`channels` 1: gray, 3: RGB), rows top to bottom; `None` when
/// the data is shorter than the size says or the size is past the limits.
pub fn image_from_samples(
    width: u32,
    height: u32,
    channels: u8,
    data: Vec<u8>,
) -> Option<RgbImage> {
    if width > MAX_IMAGE_SIDE
        || height > MAX_IMAGE_SIDE
        || u64::from(width) * u64::from(height) > MAX_IMAGE_PIXELS
    {
        return None;
    }
    let pixels = width as usize * height as usize;
    match channels {
        1 if data.len() >= pixels => {
            image::GrayImage::from_raw(width, height, data[..pixels].to_vec())
                .map(|g| image::DynamicImage::ImageLuma8(g).to_rgb8())
        }
        3 if data.len() >= 3 * pixels => {
            RgbImage::from_raw(width, height, data[..3 * pixels].to_vec())
        }
        _ => None,
    }
}

/// Decodes every page of a picture: each image of a multi-page TIFF (a fax, a scanner's
/// batch), up to `max_pages`; one page for the other formats ([`decode_image`]).
pub fn decode_pages(bytes: &[u8], max_pages: usize) -> Result<Vec<RgbImage>> {
    if !(bytes.starts_with(b"II*\0") || bytes.starts_with(b"MM\0*")) {
        return Ok(vec![decode_image(bytes)?]);
    }
    let image_error = |e: tiff::TiffError| OcrError::Image(e.to_string());
    let mut decoder =
        tiff::decoder::Decoder::new(std::io::Cursor::new(bytes)).map_err(image_error)?;
    let mut pages = Vec::new();
    loop {
        let (width, height) = decoder.dimensions().map_err(image_error)?;
        if width > MAX_IMAGE_SIDE
            || height > MAX_IMAGE_SIDE
            || u64::from(width) * u64::from(height) > MAX_IMAGE_PIXELS
        {
            return Err(OcrError::TooLarge { width, height });
        }
        let color = decoder.colortype().map_err(image_error)?;
        let data = decoder.read_image().map_err(image_error)?;
        pages.push(tiff_page(width, height, color, data)?);
        if pages.len() >= max_pages || !decoder.more_images() {
            return Ok(pages);
        }
        decoder.next_image().map_err(image_error)?;
    }
}

/// One decoded TIFF image as RGB (the decoder has already turned WhiteIsZero into black = 0).
fn tiff_page(
    width: u32,
    height: u32,
    color: tiff::ColorType,
    data: tiff::decoder::DecodingResult,
) -> Result<RgbImage> {
    use tiff::ColorType;
    use tiff::decoder::DecodingResult;
    let (w, h) = (width as usize, height as usize);
    let short = || OcrError::Image("the TIFF image has fewer samples than its size".into());
    let (channels, samples): (u8, Vec<u8>) = match (color, data) {
        (ColorType::Gray(1), DecodingResult::U8(packed)) => {
            let row = w.div_ceil(8);
            if packed.len() < row * h {
                return Err(short());
            }
            let mut out = Vec::with_capacity(w * h);
            for y in 0..h {
                for x in 0..w {
                    let bit = packed[y * row + x / 8] >> (7 - x % 8) & 1;
                    out.push(if bit == 1 { 255 } else { 0 });
                }
            }
            (1, out)
        }
        (ColorType::Gray(8), DecodingResult::U8(v)) => (1, v),
        (ColorType::Gray(16), DecodingResult::U16(v)) => {
            (1, v.iter().map(|s| (s >> 8) as u8).collect())
        }
        (ColorType::RGB(8), DecodingResult::U8(v)) => (3, v),
        (ColorType::RGBA(8), DecodingResult::U8(v)) => (
            3,
            v.chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect(),
        ),
        (ColorType::GrayA(8), DecodingResult::U8(v)) => {
            (1, v.chunks_exact(2).map(|p| p[0]).collect())
        }
        (other, _) => {
            return Err(OcrError::Image(format!(
                "TIFF images of colour type {other:?} are not read"
            )));
        }
    };
    image_from_samples(width, height, channels, samples).ok_or_else(short)
}

/// Decodes a PNG, JPEG, TIFF (first page), WebP or BMP image to RGB, refusing images past
/// [`MAX_IMAGE_SIDE`] / [`MAX_IMAGE_PIXELS`] before their pixels are allocated.
pub fn decode_image(bytes: &[u8]) -> Result<RgbImage> {
    let reader = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| OcrError::Image(e.to_string()))?;
    let (width, height) = reader
        .into_dimensions()
        .map_err(|e| OcrError::Image(e.to_string()))?;
    if width > MAX_IMAGE_SIDE
        || height > MAX_IMAGE_SIDE
        || u64::from(width) * u64::from(height) > MAX_IMAGE_PIXELS
    {
        return Err(OcrError::TooLarge { width, height });
    }
    let mut reader = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| OcrError::Image(e.to_string()))?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_IMAGE_SIDE);
    limits.max_image_height = Some(MAX_IMAGE_SIDE);
    reader.limits(limits);
    let decoded = reader
        .decode()
        .map_err(|e| OcrError::Image(e.to_string()))?;
    Ok(decoded.to_rgb8())
}
