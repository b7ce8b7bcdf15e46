//! The scanned image of each page that has no text layer, for OCR: the page's largest image
//! (a scanner writes the page as one picture), decoded here when its encoding is a plain
//! bitmap, CCITT fax, JBIG2 (`hayro-jbig2`) or JPEG 2000 (`hayro-jpeg2000`), or handed over
//! as JPEG bytes. Other encodings keep their page's "no text layer" notice.

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
            .and_then(|stream| {
                catch_unwind(AssertUnwindSafe(|| decode(&doc, &stream)))
                    .ok()
                    .flatten()
            });
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
fn decode(doc: &Document, stream: &Stream) -> Option<Raster> {
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
        Some("JBIG2Decode") if filters.len() == 1 => jbig2(doc, stream),
        Some("JPXDecode") if filters.len() == 1 => jpx(&stream.content),
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
        4 => Some(Raster::Pixels {
            width,
            height,
            channels: 3,
            data: data[..4 * pixels]
                .chunks_exact(4)
                .flat_map(cmyk_to_rgb)
                .collect(),
        }),
        _ => None,
    }
}

/// A JBIG2 scan (the usual compression of office copiers' PDFs), with the segments it shares
/// with other images (`/DecodeParms /JBIG2Globals`).
fn jbig2(doc: &Document, stream: &Stream) -> Option<Raster> {
    let settings = hayro_jbig2::DecodeSettings::default();
    let globals = match jbig2_globals(doc, &stream.dict) {
        Some(data) => Some(hayro_jbig2::Globals::new(&data, &settings).ok()?),
        None => None,
    };
    let page =
        hayro_jbig2::Page::new_embedded(&stream.content, globals.as_ref(), &settings).ok()?;
    let (width, height) = (page.width(), page.height());
    if width == 0 || height == 0 || i64::from(width) * i64::from(height) > MAX_PIXELS {
        return None;
    }
    // JBIG2's 1 is black; in a PDF, /Decode [1 0] swaps the two as for any bilevel image.
    let (black, white) = if decode_inverted(&stream.dict) {
        (255, 0)
    } else {
        (0, 255)
    };
    let mut rows = Rows {
        width: width as usize,
        black,
        white,
        row: Vec::with_capacity(width as usize),
        data: Vec::with_capacity(width as usize * height as usize),
    };
    page.decode(&mut rows).ok()?;
    if !rows.row.is_empty() {
        hayro_jbig2::Decoder::next_line(&mut rows);
    }
    rows.data.resize(width as usize * height as usize, white);
    Some(gray(width, height, rows.data))
}

/// The `/JBIG2Globals` stream's bytes, if the image names one.
fn jbig2_globals(doc: &Document, dict: &Dictionary) -> Option<Vec<u8>> {
    let (_, params) = doc.dereference(dict.get(b"DecodeParms").ok()?).ok()?;
    let params = match params {
        Object::Array(a) => doc.dereference(a.first()?).ok()?.1,
        other => other,
    };
    let (_, globals) = doc
        .dereference(params.as_dict().ok()?.get(b"JBIG2Globals").ok()?)
        .ok()?;
    let globals = globals.as_stream().ok()?;
    if globals.dict.has(b"Filter") {
        globals.decompressed_content().ok()
    } else {
        Some(globals.content.clone())
    }
}

/// A JBIG2 page decoded row by row into gray samples.
struct Rows {
    width: usize,
    black: u8,
    white: u8,
    row: Vec<u8>,
    data: Vec<u8>,
}

impl hayro_jbig2::Decoder for Rows {
    fn push_pixel(&mut self, black: bool) {
        if self.row.len() < self.width {
            self.row.push(if black { self.black } else { self.white });
        }
    }

    fn push_pixel_chunk(&mut self, black: bool, chunk_count: u32) {
        let value = if black { self.black } else { self.white };
        let room = self.width - self.row.len().min(self.width);
        let n = (chunk_count as usize).saturating_mul(8).min(room);
        self.row.extend(std::iter::repeat_n(value, n));
    }

    fn next_line(&mut self) {
        self.row.resize(self.width, self.white);
        self.data.append(&mut self.row);
    }
}

/// A JPEG 2000 scan: gray or RGB (CMYK converted, an alpha channel dropped).
fn jpx(data: &[u8]) -> Option<Raster> {
    let image =
        hayro_jpeg2000::Image::new(data, &hayro_jpeg2000::DecodeSettings::default()).ok()?;
    let (width, height) = (image.width(), image.height());
    if width == 0 || height == 0 || i64::from(width) * i64::from(height) > MAX_PIXELS {
        return None;
    }
    let colors = usize::from(image.color_space().num_channels());
    let stride = colors + usize::from(image.has_alpha());
    let mut context = hayro_jpeg2000::DecoderContext::default();
    let samples = image.decode(&mut context).ok()?.data_u8();
    let pixels = width as usize * height as usize;
    if samples.len() < pixels * stride {
        return None;
    }
    let pixel = |i: usize| &samples[i * stride..i * stride + colors];
    match colors {
        1 => Some(gray(
            width,
            height,
            (0..pixels).map(|i| pixel(i)[0]).collect(),
        )),
        3 => Some(Raster::Pixels {
            width,
            height,
            channels: 3,
            data: (0..pixels).flat_map(|i| pixel(i).to_vec()).collect(),
        }),
        4 => Some(Raster::Pixels {
            width,
            height,
            channels: 3,
            data: (0..pixels).flat_map(|i| cmyk_to_rgb(pixel(i))).collect(),
        }),
        _ => None,
    }
}

/// One CMYK pixel (8-bit samples) as RGB.
fn cmyk_to_rgb(px: &[u8]) -> [u8; 3] {
    let k = 255 - u16::from(px[3]);
    [0, 1, 2].map(|i| ((255 - u16::from(px[i])) * k / 255) as u8)
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
        // A broken JBIG2 stream (4) is skipped; a 60 × 20 logo (5) is no page; there is no
        // page 9.
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

    /// A JBIG2 segment (embedded organization): header, then `data`.
    fn segment(number: u32, kind: u8, data: &[u8]) -> Vec<u8> {
        let mut out = number.to_be_bytes().to_vec();
        out.push(kind); // page association in one byte
        out.push(0); // no referred-to segments
        out.push(1); // page 1
        out.extend(u32::try_from(data.len()).unwrap().to_be_bytes());
        out.extend(data);
        out
    }

    /// A JBIG2 page of `width` × `height` whose left `dark` columns are black: a page
    /// information segment and an immediate lossless generic region coded with MMR (CCITT
    /// Group 4, made by the `fax` crate's encoder).
    fn jbig2_page(width: u32, height: u32, dark: u32) -> Vec<u8> {
        let mut info = Vec::new();
        for v in [width, height, 300, 300] {
            info.extend(v.to_be_bytes());
        }
        info.extend([0u8, 0, 0]); // flags, no striping
        let mut encoder = fax::encoder::Encoder::new(fax::VecWriter::new());
        for _ in 0..height {
            let line = (0..width).map(|x| {
                if x < dark {
                    fax::Color::Black
                } else {
                    fax::Color::White
                }
            });
            encoder.encode_line(line, width).unwrap();
        }
        let coded = encoder.finish().unwrap().finish();
        let mut region = Vec::new();
        for v in [width, height, 0, 0] {
            region.extend(v.to_be_bytes());
        }
        region.push(0); // OR
        region.push(1); // MMR
        region.extend(coded);
        let mut out = segment(0, 48, &info);
        out.extend(segment(1, 39, &region));
        out.extend(segment(2, 49, &[]));
        out
    }

    #[test]
    fn jbig2_and_jpeg_2000_scans_are_decoded() {
        let gray1 = || dictionary! { "ColorSpace" => "DeviceGray", "BitsPerComponent" => 1 };
        let mut jbig2 = gray1();
        jbig2.set("Filter", "JBIG2Decode");
        let mut inverted = jbig2.clone();
        inverted.set("Decode", vec![1.into(), 0.into()]);
        let mut jpx = dictionary! {};
        jpx.set("Filter", "JPXDecode");
        let jp2 = include_bytes!("../../../../tests/fixtures/pdf/half-dark.jp2").to_vec();
        let j2k = include_bytes!("../../../../tests/fixtures/pdf/half-dark-rgb.j2k").to_vec();
        // A page whose JBIG2 header claims 100,000 × 100,000 pixels: refused, not allocated.
        let mut huge = Vec::new();
        for v in [100_000u32, 100_000, 300, 300] {
            huge.extend(v.to_be_bytes());
        }
        huge.extend([0u8, 0, 0]);
        let bytes = pdf(vec![
            (240, 220, jbig2.clone(), jbig2_page(240, 220, 100)),
            (240, 220, inverted, jbig2_page(240, 220, 100)),
            (320, 240, jpx.clone(), jp2),
            (256, 208, jpx.clone(), j2k),
            (300, 300, jbig2, segment(0, 48, &huge)),
            (300, 300, jpx, b"\x00\x00\x00\x0CjP  truncated".to_vec()),
        ]);
        let images = page_images(&bytes, &[1, 2, 3, 4, 5, 6], &Limits::default());
        let pages: Vec<u32> = images.iter().map(|i| i.page).collect();
        assert_eq!(
            pages,
            vec![1, 2, 3, 4],
            "the huge and the truncated ones are skipped"
        );
        let sample = |i: usize, x: usize| match &images[i].raster {
            Raster::Pixels {
                width,
                channels,
                data,
                ..
            } => {
                assert!(x < *width as usize);
                (*channels, data[x * usize::from(*channels)])
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(sample(0, 0), (1, 0), "JBIG2: black on the left");
        assert_eq!(sample(0, 239), (1, 255), "white on the right");
        assert_eq!(sample(1, 0), (1, 255), "/Decode [1 0] inverts");
        let Raster::Pixels {
            width,
            height,
            data,
            ..
        } = &images[0].raster
        else {
            panic!();
        };
        assert_eq!((*width, *height, data.len()), (240, 220, 240 * 220));
        assert_eq!(data[219 * 240 + 99], 0, "the last row is decoded too");
        assert_eq!(data[219 * 240 + 100], 255);
        assert_eq!(sample(2, 0), (1, 0), "JPEG 2000 gray: dark left");
        assert_eq!(sample(2, 319), (1, 255));
        assert_eq!(sample(3, 0), (3, 0), "JPEG 2000 RGB: dark left");
        assert_eq!(sample(3, 255), (3, 255));
    }
}
