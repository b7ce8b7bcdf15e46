//! Sitemaps (sitemaps.org): a list of page addresses, or an index of further sitemaps, as
//! XML or gzipped XML (`sitemap.xml.gz`).

use std::io::Read;

use quick_xml::Reader;
use quick_xml::events::Event;

/// What one sitemap file lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Sitemap {
    /// `<urlset><url><loc>`: pages.
    pub pages: Vec<String>,
    /// `<sitemapindex><sitemap><loc>`: more sitemaps.
    pub sitemaps: Vec<String>,
}

/// The largest uncompressed sitemap read (the protocol's limit is 50 MB).
const MAX_UNCOMPRESSED: u64 = 50 * 1024 * 1024;

/// Reads a sitemap file, gunzipping it first when it is gzipped (at most
/// [`MAX_UNCOMPRESSED`] bytes of it: a gzip bomb is cut off there, not expanded).
pub(crate) fn read(bytes: &[u8]) -> Sitemap {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return parse(bytes);
    }
    let mut xml = Vec::new();
    // A corrupt stream keeps what was inflated before the error.
    let _ = flate2::read::GzDecoder::new(bytes)
        .take(MAX_UNCOMPRESSED)
        .read_to_end(&mut xml);
    parse(&xml)
}

/// Reads a sitemap; malformed XML yields what was read before the error.
pub(crate) fn parse(bytes: &[u8]) -> Sitemap {
    let mut reader = Reader::from_reader(bytes);
    let mut out = Sitemap::default();
    let mut stack: Vec<Vec<u8>> = Vec::new();
    // The text of the `<loc>` being read (text and entity references arrive as separate events).
    let mut loc: Option<String> = None;
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(e)) => {
                let name: Vec<u8> = e.local_name().into_inner().to_ascii_lowercase().into();
                if name == b"loc" {
                    loc = Some(String::new());
                }
                stack.push(name);
            }
            Ok(Event::End(_)) => {
                let name = stack.pop();
                if name.as_deref() == Some(b"loc")
                    && let Some(text) = loc.take()
                {
                    let text = text.trim().to_owned();
                    match stack.last().map(Vec::as_slice) {
                        _ if text.is_empty() => {}
                        Some(b"url") => out.pages.push(text),
                        Some(b"sitemap") => out.sitemaps.push(text),
                        _ => {}
                    }
                }
            }
            Ok(Event::Text(t)) => {
                if let Some(loc) = loc.as_mut() {
                    loc.push_str(&t.xml10_content());
                }
            }
            Ok(Event::CData(t)) => {
                if let Some(loc) = loc.as_mut() {
                    loc.push_str(&t.xml10_content());
                }
            }
            Ok(Event::GeneralRef(r)) => {
                if let Some(loc) = loc.as_mut() {
                    match r.resolve_char_ref() {
                        Ok(Some(c)) => loc.push(c),
                        _ => {
                            let name = r.xml10_content();
                            if let Some(s) = quick_xml::escape::resolve_predefined_entity(&name) {
                                loc.push_str(s);
                            }
                        }
                    }
                }
            }
            Ok(Event::Eof) | Err(_) => break,
            Ok(_) => {}
        }
        buf.clear();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urlset_and_index() {
        let set = br#"<?xml version="1.0" encoding="UTF-8"?>
            <urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
              <url><loc>https://example.com/a?x=1&amp;y=2</loc><lastmod>2026-01-01</lastmod></url>
              <url><loc> https://example.com/b </loc></url>
            </urlset>"#;
        assert_eq!(
            parse(set).pages,
            ["https://example.com/a?x=1&y=2", "https://example.com/b"]
        );
        let index = br#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
            <sitemap><loc>https://example.com/s1.xml</loc></sitemap></sitemapindex>"#;
        let read = parse(index);
        assert_eq!(read.sitemaps, ["https://example.com/s1.xml"]);
        assert!(read.pages.is_empty());
    }

    #[test]
    fn a_gzipped_sitemap_is_read_and_a_bomb_is_cut_off() {
        use std::io::Write;
        let gzip = |data: &[u8]| {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(data).expect("gzip");
            encoder.finish().expect("gzip")
        };
        let set = b"<urlset><url><loc>https://example.com/a</loc></url></urlset>";
        assert_eq!(read(&gzip(set)).pages, ["https://example.com/a"]);
        assert_eq!(
            read(set).pages,
            ["https://example.com/a"],
            "plain XML as before"
        );
        // 200 MB of zeros inflate to at most the limit, and are no sitemap.
        let bomb = gzip(&vec![0u8; 200 * 1024 * 1024]);
        assert!(bomb.len() < 1024 * 1024);
        assert_eq!(read(&bomb), Sitemap::default());
        assert_eq!(read(&[0x1f, 0x8b, 0, 1, 2]), Sitemap::default());
    }

    #[test]
    fn broken_xml_keeps_what_came_before() {
        let broken = b"<urlset><url><loc>https://example.com/a</loc></url><url><loc>https://exa";
        assert_eq!(parse(broken).pages, ["https://example.com/a"]);
        assert_eq!(parse(b"not xml at all"), Sitemap::default());
    }
}
