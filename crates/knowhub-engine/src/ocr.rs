//! OCR inside a parser worker: a picture, or the scans of a PDF's pages without a text layer,
//! read with the OCR model (loaded once per worker process); each page's paragraphs become
//! blocks on that page, so citations name it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use knowhub_ocr::{Ocr, OcrError, ParagraphKind, RgbImage};
use knowhub_parse::{Block, BlockKind, DocKind, Limits, ParseNotice, ParsedDocument, Raster};

use crate::sandbox::{ParseErrorWire, SandboxError};

/// The model of the last folder asked for: one per worker process (a worker serves one engine).
static LOADED: Mutex<Option<(PathBuf, Arc<Ocr>)>> = Mutex::new(None);

fn model(dir: &Path) -> Result<Arc<Ocr>, OcrError> {
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((at, ocr)) = loaded.as_ref()
        && at == dir
    {
        return Ok(Arc::clone(ocr));
    }
    let ocr = Arc::new(Ocr::load(dir)?);
    *loaded = Some((dir.to_path_buf(), Arc::clone(&ocr)));
    Ok(ocr)
}

fn wire(code: &str, e: &OcrError) -> SandboxError {
    SandboxError::Parse(ParseErrorWire {
        code: code.to_owned(),
        message: e.to_string(),
    })
}

/// Reads `pages` of the picture or PDF in `bytes`: a document with the text of the pages read
/// and, in `pages_without_text`, those that were not (no decodable scan, or no text found).
/// A picture that does not decode is an error.
/// A page whose lines OCR read with a mean score below this is marked uncertain. Clean and
/// lightly degraded scans read at 0.9 and above (the bench's pages); below 0.75 misread
/// characters become common.
pub(crate) const UNCERTAIN_BELOW: f32 = 0.75;

/// What a document's note says about pages OCR read unsurely.
pub(crate) fn uncertain_note(pages: &[u32]) -> Option<String> {
    match pages {
        [] => None,
        [one] => Some(format!(
            "OCR was unsure of page {one}: quotes from it may hold misread characters"
        )),
        many => Some(format!(
            "OCR was unsure of pages {}: quotes from them may hold misread characters",
            many.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

pub(crate) fn read_pages(
    kind: DocKind,
    bytes: &[u8],
    limits: &Limits,
    dir: &Path,
    pages: &[u32],
) -> Result<ParsedDocument, SandboxError> {
    let images: Vec<(u32, RgbImage)> = match kind {
        DocKind::Image => {
            let wanted = pages.iter().copied().max().unwrap_or(1) as usize;
            knowhub_ocr::decode_pages(bytes, wanted)
                .map_err(|e| match e {
                    OcrError::TooLarge { .. } => wire("too_large", &e),
                    _ => wire("invalid", &e),
                })?
                .into_iter()
                .zip(1u32..)
                .filter(|(_, page)| pages.contains(page))
                .map(|(image, page)| (page, image))
                .collect()
        }
        DocKind::Pdf => knowhub_parse::pdf_page_images(bytes, pages, limits)
            .into_iter()
            .filter_map(|p| raster(p.raster).map(|image| (p.page, image)))
            .collect(),
        _ => Vec::new(),
    };
    let mut doc = ParsedDocument {
        pages_without_text: pages.to_vec(),
        ..ParsedDocument::default()
    };
    if images.is_empty() {
        return Ok(doc);
    }
    let ocr = model(dir).map_err(|e| wire("ocr", &e))?;
    for (page, image) in images {
        let read = ocr.read_page(&image).map_err(|e| wire("ocr", &e))?;
        if read.paragraphs.is_empty() {
            continue;
        }
        doc.pages_without_text.retain(|p| *p != page);
        if read.mean_score() < UNCERTAIN_BELOW {
            doc.uncertain_pages.push(page);
        }
        doc.blocks
            .extend(read.paragraphs.into_iter().map(|p| Block {
                kind: match p.kind {
                    ParagraphKind::Text => BlockKind::Paragraph,
                    ParagraphKind::TableRow => BlockKind::TableRow,
                },
                text: p.text,
                page: Some(page),
            }));
    }
    Ok(doc)
}

/// A PDF page's scan as RGB; `None` when it does not decode.
fn raster(raster: Raster) -> Option<RgbImage> {
    match raster {
        Raster::Jpeg(bytes) => knowhub_ocr::decode_image(&bytes).ok(),
        Raster::Pixels {
            width,
            height,
            channels,
            data,
        } => knowhub_ocr::image_from_samples(width, height, channels, data),
    }
}

/// Adds what OCR read of the pages `asked` (`read`, from [`read_pages`]) to the parsed
/// document, in page order.
pub(crate) fn merge(doc: &mut ParsedDocument, read: ParsedDocument, asked: &[u32]) {
    if read.blocks.is_empty() {
        return;
    }
    doc.blocks.extend(read.blocks);
    // Stable: each page's own blocks keep their order.
    doc.blocks.sort_by_key(|b| b.page.unwrap_or(0));
    doc.pages_without_text
        .retain(|p| !asked.contains(p) || read.pages_without_text.contains(p));
    doc.uncertain_pages.extend(read.uncertain_pages);
    doc.uncertain_pages.sort_unstable();
    if doc.pages_without_text.is_empty() {
        doc.notices.retain(|n| *n != ParseNotice::NoTextLayer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_merge_in_page_order_and_only_clear_the_pages_they_read() {
        let mut doc = ParsedDocument {
            blocks: vec![Block::paragraph("typed page 2").on_page(2)],
            pages_without_text: vec![1, 3, 4],
            notices: vec![ParseNotice::NoTextLayer],
            ..ParsedDocument::default()
        };
        let read = |pages: &[(u32, &str)], blank: &[u32], unsure: &[u32]| ParsedDocument {
            blocks: pages
                .iter()
                .map(|(p, t)| Block::paragraph(*t).on_page(*p))
                .collect(),
            pages_without_text: blank.to_vec(),
            uncertain_pages: unsure.to_vec(),
            ..ParsedDocument::default()
        };
        // Pages 3 and 4 first (page 4 blank), then page 1, read unsurely.
        merge(&mut doc, read(&[(3, "scan 3")], &[4], &[]), &[3, 4]);
        assert_eq!(doc.pages_without_text, [1, 4]);
        merge(&mut doc, read(&[(1, "scan 1")], &[], &[1]), &[1]);
        let order: Vec<&str> = doc.blocks.iter().map(|b| b.text.as_str()).collect();
        assert_eq!(order, ["scan 1", "typed page 2", "scan 3"]);
        assert_eq!(doc.pages_without_text, [4]);
        assert_eq!(doc.uncertain_pages, [1]);
        assert_eq!(
            doc.notices,
            [ParseNotice::NoTextLayer],
            "page 4 is still unread"
        );
    }

    #[test]
    fn uncertain_pages_are_named() {
        assert_eq!(uncertain_note(&[]), None);
        assert!(uncertain_note(&[3]).is_some_and(|n| n.contains("page 3:")));
        assert!(uncertain_note(&[2, 7]).is_some_and(|n| n.contains("pages 2, 7:")));
    }
}
