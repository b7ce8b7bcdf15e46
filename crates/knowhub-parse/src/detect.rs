//! Format detection from the file name and the first bytes.

use crate::DocKind;

const TEXT_EXTENSIONS: &[&str] = &[
    "txt", "text", "log", "csv", "tsv", "rst", "srt", "tex", "org", "adoc", "ini", "cfg", "conf",
    "toml", "yaml", "yml", "json", "xml",
];
const MARKDOWN_EXTENSIONS: &[&str] = &["md", "markdown", "mdown", "mkd", "mdx"];
const HTML_EXTENSIONS: &[&str] = &["html", "htm", "xhtml"];

/// Every file extension KnowHub ingests (lowercase, no dot).
pub fn supported_extensions() -> Vec<&'static str> {
    // Legacy `.doc`/`.ppt` are taken so that each gets its reason (re-save in the new format)
    // instead of being passed over in silence.
    let mut all = vec![
        "pdf", "docx", "docm", "doc", "pptx", "pptm", "ppsx", "ppt", "pps", "xlsx", "xlsm", "xls",
        "xlsb", "ods", "odp", "eml", "mbox", "msg",
    ];
    all.extend_from_slice(IMAGE_EXTENSIONS);
    all.extend_from_slice(MARKDOWN_EXTENSIONS);
    all.extend_from_slice(HTML_EXTENSIONS);
    all.extend_from_slice(TEXT_EXTENSIONS);
    all
}

/// Decides the format of a file from its extension, checked against its leading bytes.
///
/// Content wins over a misleading name where the bytes are unambiguous (a PDF renamed to
/// `.txt` is still a PDF); `None` means the file is not a format KnowHub reads.
///
/// ```
/// use knowhub_parse::{detect, DocKind};
/// assert_eq!(detect(Some("report.PDF"), b"%PDF-1.7\n"), Some(DocKind::Pdf));
/// assert_eq!(detect(Some("notes.md"), b"# Title"), Some(DocKind::Markdown));
/// assert_eq!(detect(Some("photo.jpg"), b"\xff\xd8\xff"), Some(DocKind::Image));
/// assert_eq!(detect(Some("song.mp3"), b"ID3\x04"), None);
/// ```
pub fn detect(file_name: Option<&str>, head: &[u8]) -> Option<DocKind> {
    let ext = file_name
        .and_then(|n| n.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()))
        .unwrap_or_default();
    let ext = ext.as_str();

    // Unambiguous signatures first.
    if head.len() >= 5 && memfind(&head[..head.len().min(1024)], b"%PDF-") {
        return Some(DocKind::Pdf);
    }
    if let Some(kind) = image_signature(head, ext) {
        return Some(kind);
    }
    let is_zip = head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06");
    let is_ole = head.starts_with(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]);
    match ext {
        "pdf" => return Some(DocKind::Pdf),
        // The parsers name a legacy (OLE) file's format and how to convert it.
        "docx" | "docm" | "dotx" | "doc" => return Some(DocKind::Docx),
        "pptx" | "pptm" | "ppsx" | "potx" | "ppt" | "pps" => return Some(DocKind::Pptx),
        "xlsx" | "xlsm" | "xltx" | "xltm" => return Some(DocKind::Xlsx),
        "xlsb" => return Some(DocKind::Xlsb),
        "xls" | "xla" => return Some(DocKind::Xls),
        "ods" => return Some(DocKind::Ods),
        "odp" => return Some(DocKind::Odp),
        _ => {}
    }
    if ext == "msg" && is_ole {
        return Some(DocKind::Msg);
    }
    if matches!(ext, "eml" | "mbox") && !is_zip && !is_ole {
        return Some(DocKind::Eml);
    }
    if is_zip || is_ole {
        // A container with an unknown extension: not something we can name safely.
        return None;
    }
    if MARKDOWN_EXTENSIONS.contains(&ext) {
        return Some(DocKind::Markdown);
    }
    if HTML_EXTENSIONS.contains(&ext) {
        return Some(DocKind::Html);
    }
    if TEXT_EXTENSIONS.contains(&ext) {
        return Some(DocKind::Text);
    }
    if ext.is_empty() && looks_like_text(head) {
        return Some(DocKind::Text);
    }
    None
}

/// Picture formats OCR reads.
const IMAGE_EXTENSIONS: &[&str] = &["png", "jpg", "jpeg", "tif", "tiff", "webp", "bmp"];

/// An image by its leading bytes (the extension alone is not trusted: a picture must decode).
fn image_signature(head: &[u8], ext: &str) -> Option<DocKind> {
    let image = head.starts_with(b"\x89PNG\r\n\x1a\n")
        || head.starts_with(&[0xFF, 0xD8, 0xFF])
        || head.starts_with(b"II*\0")
        || head.starts_with(b"MM\0*")
        || (head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP")
        // "BM" also starts ordinary text: only with the extension.
        || (ext == "bmp" && head.starts_with(b"BM"));
    image.then_some(DocKind::Image)
}

fn memfind(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Heuristic for extension-less files: text has (almost) no NUL bytes unless it is UTF-16/32
/// with a BOM.
fn looks_like_text(head: &[u8]) -> bool {
    if head.starts_with(&[0xFF, 0xFE])
        || head.starts_with(&[0xFE, 0xFF])
        || head.starts_with(&[0xEF, 0xBB, 0xBF])
    {
        return true;
    }
    !head.is_empty() && !head.iter().take(4096).any(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_table() {
        let cases: &[(Option<&str>, &[u8], Option<DocKind>)] = &[
            (Some("a.pdf"), b"%PDF-1.4", Some(DocKind::Pdf)),
            (Some("a.txt"), b"%PDF-1.4", Some(DocKind::Pdf)),
            (Some("a.pdf"), b"garbage", Some(DocKind::Pdf)),
            (Some("a.docx"), b"PK\x03\x04", Some(DocKind::Docx)),
            (Some("a.XLSX"), b"PK\x03\x04", Some(DocKind::Xlsx)),
            (
                Some("a.xls"),
                b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1",
                Some(DocKind::Xls),
            ),
            (Some("a.pptx"), b"PK\x03\x04", Some(DocKind::Pptx)),
            (
                Some("old.ppt"),
                b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1",
                Some(DocKind::Pptx),
            ),
            (
                Some("old.doc"),
                b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1",
                Some(DocKind::Docx),
            ),
            (
                Some("mail.eml"),
                b"From: a@example.com\r\n",
                Some(DocKind::Eml),
            ),
            (Some("a.zip"), b"PK\x03\x04", None),
            (Some("a.html"), b"<html>", Some(DocKind::Html)),
            (Some("a.markdown"), b"# x", Some(DocKind::Markdown)),
            (Some("README"), b"hello", Some(DocKind::Text)),
            (
                Some("scan.png"),
                b"\x89PNG\r\n\x1a\n\0\0",
                Some(DocKind::Image),
            ),
            (Some("photo.JPG"), b"\xFF\xD8\xFF\xE0", Some(DocKind::Image)),
            (Some("fax.tif"), b"II*\0\x08\0", Some(DocKind::Image)),
            (Some("page"), b"RIFF\0\0\0\0WEBPVP8 ", Some(DocKind::Image)),
            (Some("fake.png"), b"not an image", None),
            (
                Some("cars.txt"),
                b"BMW and Audi sales by month",
                Some(DocKind::Text),
            ),
            (Some("blob"), b"\x00\x01\x02", None),
            (Some("a.png"), b"\x89PNG", None),
        ];
        for (name, head, want) in cases {
            assert_eq!(detect(*name, head), *want, "{name:?}");
        }
    }
}
