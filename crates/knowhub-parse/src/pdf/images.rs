//! The scanned image of each page that has no text layer, for OCR: the page's largest image
//! (a scanner writes the page as one picture), decoded here when its encoding is a plain
//! bitmap or CCITT fax, or handed over as JPEG bytes. JBIG2 and JPEG 2000 scans are not
//! decoded (no maintained pure-Rust decoder); their pages keep their "no text layer" notice.

use std::panic::{AssertUnwindSafe, catch_unwind};

use lopdf::{Dictionary, Document, Object, ObjectId, Stream};

use crate::Limits;

/// Images smaller than this on either side are logos or rules, not a page.
const MIN_SIDE: i64 = 200;
/// Pixels of one page image at most (a 600-dpi A3 scan is about 70 million).
const MAX_PIXELS: i64 = 120_000_000;

/// One page's scan.
#[derive(Debug, Clone, PartialEq)]
pub struct PageImage {
    /// 1-based page number.
    pub page: u32,
    pub raster: Raster,
}

/// A page image as OCR takes it.
#[derive(Debug, Clone, PartialEq)]
pub enum Raster {
    /// 8-bit samples, `channels` (1 gray, 3 RGB) per pixel, rows top to bottom.
    Pixels {
        width: u32,
        height: u32,
        channels: u8,
        data: Vec<u8>,
    },
    /// A JPEG file (the PDF's DCTDecode stream), for an image decoder.
    Jpeg(Vec<u8>),
}

/// The scans of `pages` (1-based) of the PDF in `bytes`, page order; pages without a
/// decodable scan are left out. Never fails: a page that cannot be read is skipped.
pub fn page_images(bytes: &[u8], pages: &[u32], limits: &Limits) -> Vec<PageImage> {
    let Ok(doc) = super::open(bytes) else {
        return Vec::new();
    };
    let all = doc.get_pages();
    let mut out = Vec::new();
    let mut budget = limits.max_decompressed_bytes;
    for &page in pages {
        let Some(&id) = all.get(&page) else {
            continue;
        };
        let raster = catch_unwind(AssertUnwindSafe(|| largest_image(&doc, id)))
            .ok()
            .flatten()
            .and_then(|stream| decode(&stream));
        if let Some(raster) = raster {
            let size = match &raster {
                Raster::Pixels { data, .. } | Raster::Jpeg(data) => data.len() as u64,
            };
            if size > budget {
                break;
            }
            budget -= size;
            out.push(PageImage { page, raster });
        }
    }
    out
}

/// The page's largest image XObject (also inside form XObjects, one level down).
fn largest_image(doc: &Document, page: ObjectId) -> Option<Stream> {
    let mut best: Option<(i64, Stream)> = None;
    let mut consider = |stream: &Stream| {
        let (w, h) = (
            int(doc, &stream.dict, b"Width")?,
            int(doc, &stream.dict, b"Height")?,
        );
        if w < MIN_SIDE || h < MIN_SIDE || w.saturating_mul(h) > MAX_PIXELS {
            return None;
        }
        if best.as_ref().is_none_or(|(area, _)| w * h > *area) {
            best = Some((w * h, stream.clone()));
        }
        Some(())
    };
    for stream in xobjects(doc, resources_owner(doc, page)?) {
        match name(&stream.dict, b"Subtype").as_deref() {
            Some("Image") => {
                consider(&stream);
            }
            Some("Form") => {
                for inner in xobjects(doc, &stream.dict) {
                    if name(&inner.dict, b"Subtype").as_deref() == Some("Image") {
                        consider(&inner);
                    }
                }
            }
            _ => {}
        }
    }
    best.map(|(_, s)| s)
}

/// The page or the nearest ancestor that holds the (inheritable) resources.
fn resources_owner(doc: &Document, page: ObjectId) -> Option<&Dictionary> {
    let mut dict = doc.get_dictionary(page).ok();
    for _ in 0..32 {
        let d = dict?;
        if d.has(b"Resources") {
            return Some(d);
        }
        dict = d
            .get(b"Parent")
            .and_then(Object::as_reference)
            .and_then(|p| doc.get_dictionary(p))
            .ok();
    }
    None
}

fn xobjects<'a>(doc: &'a Document, owner: &'a Dictionary) -> Vec<Stream> {
    let Some(x) = super::fixup::xobject_dict(doc, owner) else {
        return Vec::new();
    };
    x.iter()
        .filter_map(|(_, o)| doc.dereference(o).ok())
        .filter_map(|(_, o)| o.as_stream().ok().cloned())
        .collect()
}

fn int(doc: &Document, dict: &Dictionary, key: &[u8]) -> Option<i64> {
    let (_, o) = doc.dereference(dict.get(key).ok()?).ok()?;
    o.as_i64().ok()
}

fn name(dict: &Dictionary, key: &[u8]) -> Option<String> {
    match dict.get(key).ok()? {
        Object::Name(n) => Some(String::from_utf8_lossy(n).into_owned()),
        Object::Array(a) => match a.last()? {
            Object::Name(n) => Some(String::from_utf8_lossy(n).into_owned()),
            _ => None,
        },
        _ => None,
    }
}

/// The image's pixels, or its JPEG bytes; `None` for encodings not read here.
fn decode(stream: &Stream) -> Option<Raster> {
    let dict = &stream.dict;
    let width = u32::try_from(dict.get(b"Width").ok()?.as_i64().ok()?).ok()?;
    let height = u32::try_from(dict.get(b"Height").ok()?.as_i64().ok()?).ok()?;
    let filters: Vec<String> = match dict.get(b"Filter") {
        Ok(Object::Name(n)) => vec![String::from_utf8_lossy(n).into_owned()],
        Ok(Object::Array(a)) => a
            .iter()
            .filter_map(|o| o.as_name().ok())
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .collect(),
        _ => Vec::new(),
    };
    match filters.last().map(String::as_str) {
        Some("DCTDecode" | "DCT") if filters.len() == 1 => {
            Some(Raster::Jpeg(stream.content.clone()))
        }
        Some("CCITTFaxDecode" | "CCF") if filters.len() == 1 => ccitt(stream, width, height),
        Some("JBIG2Decode" | "JPXDecode") => None,
        _ => {
            let data = if filters.is_empty() {
                stream.content.clone()
            } else {
                stream.decompressed_content().ok()?
            };
            samples(dict, width, height, &data)
        }
    }
}

/// Uncompressed samples: 8-bit gray, RGB or CMYK (told apart by the data's length, which also
/// covers ICC-based spaces), or 1-bit (a bilevel scan or an image mask).
fn samples(dict: &Dictionary, width: u32, height: u32, data: &[u8]) -> Option<Raster> {
    let bits = dict.get(b"BitsPerComponent").ok()?.as_i64().ok()?;
    let indexed = match dict.get(b"ColorSpace") {
        Ok(Object::Array(a)) => a.first().and_then(|o| o.as_name().ok()) == Some(b"Indexed"),
        _ => false,
    };
    let inverted = decode_inverted(dict);
    let (w, h) = (width as usize, height as usize);
    if indexed {
        return None;
    }
    if bits == 1 {
        // Each row is padded to a byte; 0 is black for gray, "paint" for an image mask,
        // unless /Decode [1 0] swaps them.
        let row = w.div_ceil(8);
        if data.len() < row * h {
            return None;
        }
        let mut out = Vec::with_capacity(w * h);
        for y in 0..h {
            for x in 0..w {
                let bit = data[y * row + x / 8] >> (7 - x % 8) & 1;
                out.push(if (bit == 1) != inverted { 255 } else { 0 });
            }
        }
        return Some(gray(width, height, out));
    }
    if bits != 8 {
        return None;
    }
    let pixels = w * h;
    match data.len() / pixels.max(1) {
        1 => Some(gray(width, height, data[..pixels].to_vec())),
        3 => Some(Raster::Pixels {
            width,
            height,
            channels: 3,
            data: data[..3 * pixels].to_vec(),
        }),
        4 => {
            let mut out = Vec::with_capacity(3 * pixels);
            for px in data[..4 * pixels].chunks_exact(4) {
                let k = 255 - u16::from(px[3]);
                for c in &px[..3] {
                    out.push(((255 - u16::from(*c)) * k / 255) as u8);
                }
            }
            Some(Raster::Pixels {
                width,
                height,
                channels: 3,
                data: out,
            })
        }
        _ => None,
    }
}

/// Whether /Decode is [1 0]: sample 0 is white instead of black.
fn decode_inverted(dict: &Dictionary) -> bool {
    let Ok(Object::Array(d)) = dict.get(b"Decode") else {
        return false;
    };
    let number = |o: &Object| {
        o.as_float()
            .ok()
            .or_else(|| o.as_i64().ok().map(|i| i as f32))
    };
    matches!((d.first().and_then(number), d.get(1).and_then(number)), (Some(a), Some(b)) if a > b)
}

fn gray(width: u32, height: u32, data: Vec<u8>) -> Raster {
    Raster::Pixels {
        width,
        height,
        channels: 1,
        data,
    }
}

/// CCITT Group 4 (K < 0), the usual compression of bilevel office scans.
fn ccitt(stream: &Stream, width: u32, height: u32) -> Option<Raster> {
    let params = match stream.dict.get(b"DecodeParms") {
        Ok(Object::Dictionary(d)) => Some(d.clone()),
        Ok(Object::Array(a)) => a.first().and_then(|o| o.as_dict().ok()).cloned(),
        _ => None,
    };
    let get = |key: &[u8]| params.as_ref().and_then(|p| p.get(key).ok());
    let k = get(b"K").and_then(|o| o.as_i64().ok()).unwrap_or(0);
    if k >= 0 {
        return None;
    }
    let columns = get(b"Columns")
        .and_then(|o| o.as_i64().ok())
        .and_then(|c| u32::try_from(c).ok())
        .unwrap_or(width);
    let black_is_1 = get(b"BlackIs1").and_then(|o| o.as_bool().ok()) == Some(true);
    let inverted = decode_inverted(&stream.dict);
    let mut data = Vec::with_capacity(columns as usize * height as usize);
    let mut rows = 0u32;
    fax::decoder::decode_g4(
        stream.content.iter().copied(),
        columns,
        Some(height),
        |line| {
            if rows < height {
                data.extend(fax::decoder::pels(line, columns).map(|c| {
                    // Black runs are samples of 0 unless BlackIs1; a sample of 1 is white unless
                    // /Decode [1 0].
                    let sample_is_1 = (c == fax::Color::Black) == black_is_1;
                    if sample_is_1 != inverted { 255 } else { 0 }
                }));
                rows += 1;
            }
        },
    )?;
    (rows == height).then(|| gray(columns, height, data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lopdf::dictionary;

    /// A PDF with one image per page: (width, height, extra image-dictionary entries, data).
    fn pdf(pages: Vec<(i64, i64, Dictionary, Vec<u8>)>) -> Vec<u8> {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let mut kids = vec![];
        for (w, h, extra, data) in pages {
            let mut dict = dictionary! {
                "Type" => "XObject", "Subtype" => "Image", "Width" => w, "Height" => h,
            };
            dict.extend(&extra);
            let image = doc.add_object(Stream::new(dict, data));
            let content = doc.add_object(Stream::new(
                dictionary! {},
                b"q 100 0 0 100 0 0 cm /Im Do Q".to_vec(),
            ));
            let page = doc.add_object(dictionary! {
                "Type" => "Page", "Parent" => pages_id,
                "MediaBox" => vec![0.into(), 0.into(), 100.into(), 100.into()],
                "Contents" => content,
                "Resources" => dictionary! { "XObject" => dictionary! { "Im" => image } },
            });
            kids.push(Object::from(page));
        }
        let count = kids.len() as i64;
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => count }),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        let mut out = Vec::new();
        doc.save_to(&mut out).expect("save");
        out
    }

    #[test]
    fn each_encoding_of_a_page_scan_is_decoded_or_skipped() {
        let gray =
            |bits: i64| dictionary! { "ColorSpace" => "DeviceGray", "BitsPerComponent" => bits };
        // 1-bit, 208 wide (26 bytes a row): the left half black, the right half white.
        let mut bilevel = Vec::new();
        for _ in 0..200 {
            bilevel.extend([0u8; 13]);
            bilevel.extend([0xFFu8; 13]);
        }
        let mut inverted = gray(1);
        inverted.set("Decode", vec![1.into(), 0.into()]);
        let mut dct = gray(8);
        dct.set("Filter", "DCTDecode");
        let mut jbig2 = gray(1);
        jbig2.set("Filter", "JBIG2Decode");
        let bytes = pdf(vec![
            (208, 200, gray(1), bilevel.clone()),
            (208, 200, inverted, bilevel),
            (300, 250, dct, b"\xFF\xD8\xFF\xE0 jpeg".to_vec()),
            (300, 300, jbig2, vec![0; 10]),
            (60, 20, gray(8), vec![0; 1200]),
            (
                300,
                200,
                dictionary! { "ColorSpace" => "DeviceRGB", "BitsPerComponent" => 8 },
                vec![7; 180_000],
            ),
        ]);
        let images = page_images(&bytes, &[1, 2, 3, 4, 5, 6, 9], &Limits::default());
        let pages: Vec<u32> = images.iter().map(|i| i.page).collect();
        // JBIG2 (4) is not decoded; a 60 × 20 logo (5) is no page; there is no page 9.
        assert_eq!(pages, vec![1, 2, 3, 6]);
        let Raster::Pixels {
            width,
            channels,
            data,
            ..
        } = &images[0].raster
        else {
            panic!("{:?}", images[0].raster);
        };
        assert_eq!((*width, *channels, data.len()), (208, 1, 208 * 200));
        assert_eq!((data[0], data[207]), (0, 255), "black left, white right");
        let Raster::Pixels { data, .. } = &images[1].raster else {
            panic!();
        };
        assert_eq!((data[0], data[207]), (255, 0), "/Decode [1 0] inverts");
        assert_eq!(
            images[2].raster,
            Raster::Jpeg(b"\xFF\xD8\xFF\xE0 jpeg".to_vec())
        );
        assert!(matches!(
            images[3].raster,
            Raster::Pixels { channels: 3, .. }
        ));
        assert!(page_images(b"%PDF-1.4 garbage", &[1], &Limits::default()).is_empty());
    }
}
