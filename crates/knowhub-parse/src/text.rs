//! Plain text with encoding detection.
//!
//! Legacy Chinese, Japanese and Korean files are common in companies (GBK exports, Big5
//! archives, Shift-JIS logs), so text is never assumed to be UTF-8: BOMs first, then UTF-16/32
//! patterns, then strict UTF-8, then chardetng's guess decoded by encoding_rs.

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE};

use crate::{Block, Limits, ParseError, ParsedDocument};

pub(crate) fn parse(bytes: &[u8], _limits: &Limits) -> Result<ParsedDocument, ParseError> {
    let (text, encoding) = decode_text(bytes);
    let mut doc = ParsedDocument {
        encoding: Some(encoding.to_string()),
        ..Default::default()
    };
    doc.blocks = paragraphs(&text).map(Block::paragraph).collect();
    Ok(doc)
}

/// Splits text into paragraphs at blank lines.
pub(crate) fn paragraphs(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split("\n\n")
        .flat_map(|p| p.split("\r\n\r\n"))
        .map(|p| p.trim().replace("\r\n", "\n"))
        .filter(|p| !p.is_empty())
}

/// Decodes bytes of unknown encoding, returning the text and the encoding's name.
///
/// ```
/// // "中文" in GBK
/// let (text, enc) = knowhub_parse::decode_text(&[0xD6, 0xD0, 0xCE, 0xC4, 0xB2, 0xE2, 0xCA, 0xD4]);
/// assert_eq!(text, "中文测试");
/// assert_eq!(enc, "GBK");
/// ```
pub fn decode_text(bytes: &[u8]) -> (String, &'static str) {
    if let Some(rest) = bytes.strip_prefix(&[0x00, 0x00, 0xFE, 0xFF]) {
        return (decode_utf32(rest, true), "UTF-32BE");
    }
    if let Some(rest) = bytes.strip_prefix(&[0xFF, 0xFE, 0x00, 0x00]) {
        return (decode_utf32(rest, false), "UTF-32LE");
    }
    if let Some((enc, bom_len)) = Encoding::for_bom(bytes) {
        let (text, _) = enc.decode_without_bom_handling(&bytes[bom_len..]);
        let name = if enc == UTF_8 {
            "UTF-8 (BOM)"
        } else {
            enc.name()
        };
        return (text.into_owned(), name);
    }
    if let Some(big_endian) = utf32_without_bom(bytes) {
        let name = if big_endian { "UTF-32BE" } else { "UTF-32LE" };
        return (decode_utf32(bytes, big_endian), name);
    }
    if let Some(enc) = utf16_without_bom(bytes) {
        let (text, _) = enc.decode_without_bom_handling(bytes);
        return (text.into_owned(), enc.name());
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        return (text.to_owned(), "UTF-8");
    }
    let mut detector = EncodingDetector::new(Iso2022JpDetection::Allow);
    // A prefix is plenty for detection and keeps huge files fast.
    let sample = &bytes[..bytes.len().min(256 * 1024)];
    detector.feed(sample, sample.len() == bytes.len());
    let enc = detector.guess(None, Utf8Detection::Allow);
    let (text, _) = enc.decode_without_bom_handling(bytes);
    (text.into_owned(), enc.name())
}

fn decode_utf32(bytes: &[u8], big_endian: bool) -> String {
    bytes
        .chunks_exact(4)
        .map(|c| {
            let arr = [c[0], c[1], c[2], c[3]];
            let v = if big_endian {
                u32::from_be_bytes(arr)
            } else {
                u32::from_le_bytes(arr)
            };
            char::from_u32(v).unwrap_or(char::REPLACEMENT_CHARACTER)
        })
        .collect()
}

/// UTF-32 text without a BOM has, for nearly every code unit, a zero high byte pair.
fn utf32_without_bom(bytes: &[u8]) -> Option<bool> {
    if bytes.len() < 8 || !bytes.len().is_multiple_of(4) {
        return None;
    }
    let units: Vec<&[u8]> = bytes.chunks_exact(4).take(1024).collect();
    let le = units
        .iter()
        .filter(|u| u[2] == 0 && u[3] == 0 && (u[0] != 0 || u[1] != 0))
        .count();
    let be = units
        .iter()
        .filter(|u| u[0] == 0 && u[1] == 0 && (u[2] != 0 || u[3] != 0))
        .count();
    let n = units.len();
    if le * 10 >= n * 9 {
        Some(false)
    } else if be * 10 >= n * 9 {
        Some(true)
    } else {
        None
    }
}

/// UTF-16 text without a BOM: many zero bytes, nearly all on one parity (ASCII-heavy text), or
/// an even length that decodes to mostly CJK with no invalid surrogates.
fn utf16_without_bom(bytes: &[u8]) -> Option<&'static Encoding> {
    if bytes.len() < 4 || !bytes.len().is_multiple_of(2) {
        return None;
    }
    let sample = &bytes[..bytes.len().min(8192) & !1];
    let pairs = sample.len() / 2;
    let zero_even = sample.iter().step_by(2).filter(|&&b| b == 0).count();
    let zero_odd = sample
        .iter()
        .skip(1)
        .step_by(2)
        .filter(|&&b| b == 0)
        .count();
    if zero_odd * 10 >= pairs * 3 && zero_even * 20 < pairs {
        return Some(UTF_16LE);
    }
    if zero_even * 10 >= pairs * 3 && zero_odd * 20 < pairs {
        return Some(UTF_16BE);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode_utf16(s: &str, be: bool) -> Vec<u8> {
        s.encode_utf16()
            .flat_map(|u| if be { u.to_be_bytes() } else { u.to_le_bytes() })
            .collect()
    }

    #[test]
    fn decodes_boms_and_bomless_unicode() {
        let s = "Hello 世界, deployment 规范";
        let utf32le: Vec<u8> = s.chars().flat_map(|c| (c as u32).to_le_bytes()).collect();
        let utf32be: Vec<u8> = s.chars().flat_map(|c| (c as u32).to_be_bytes()).collect();
        let mut bom8 = vec![0xEF, 0xBB, 0xBF];
        bom8.extend_from_slice(s.as_bytes());
        let mut bom16 = vec![0xFF, 0xFE];
        bom16.extend(encode_utf16(s, false));
        let mut bom32 = vec![0x00, 0x00, 0xFE, 0xFF];
        bom32.extend(&utf32be);
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (s.as_bytes().to_vec(), "UTF-8"),
            (bom8, "UTF-8 (BOM)"),
            (bom16, "UTF-16LE"),
            (encode_utf16(s, false), "UTF-16LE"),
            (encode_utf16(s, true), "UTF-16BE"),
            (bom32, "UTF-32BE"),
            (utf32le, "UTF-32LE"),
        ];
        for (bytes, want) in cases {
            let (text, enc) = decode_text(&bytes);
            assert_eq!((text.as_str(), enc), (s, want));
        }
    }

    #[test]
    fn detects_legacy_cjk_encodings() {
        let zh = "员工手册：年假为十五天。新员工试用期为三个月，试用期内享有带薪病假。";
        let ja = "これは日本語のテキストです。会議は午後三時に始まります。";
        let ko = "이것은 한국어 텍스트입니다. 회의는 오후 세 시에 시작됩니다.";
        let tw = "員工手冊：年假為十五天。新員工試用期為三個月，試用期內享有帶薪病假。";
        for (text, enc) in [
            (zh, encoding_rs::GBK),
            (zh, encoding_rs::GB18030),
            (tw, encoding_rs::BIG5),
            (ja, encoding_rs::SHIFT_JIS),
            (ja, encoding_rs::EUC_JP),
            (ko, encoding_rs::EUC_KR),
        ] {
            let (bytes, _, unmappable) = enc.encode(text);
            assert!(!unmappable);
            let (decoded, _) = decode_text(&bytes);
            assert_eq!(decoded, text, "{}", enc.name());
        }
    }

    #[test]
    fn paragraphs_split_on_blank_lines() {
        let doc = parse(
            b"first line\nsame para\n\nsecond\r\n\r\nthird",
            &Limits::default(),
        )
        .unwrap();
        let texts: Vec<_> = doc.blocks.iter().map(|b| b.text.as_str()).collect();
        assert_eq!(texts, ["first line\nsame para", "second", "third"]);
    }
}
