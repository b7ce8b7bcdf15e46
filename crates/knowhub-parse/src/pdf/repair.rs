//! Rebuilds the cross-reference table of a damaged file.
//!
//! lopdf gives up on a broken or missing xref table, while poppler and pdf.js scan the file for
//! `N G obj` headers instead. We do the same and append a fresh xref table and trailer to a copy
//! of the file, so lopdf can load it through the usual path.

use std::collections::BTreeMap;
use std::fmt::Write as _;

pub(crate) fn repair(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut objects: BTreeMap<u32, (u16, usize)> = BTreeMap::new();
    let mut catalog: Option<u32> = None;
    let mut from = 0;
    while let Some(rel) = find(&bytes[from..], b"obj") {
        let pos = from + rel;
        from = pos + 3;
        if bytes
            .get(pos + 3)
            .is_some_and(|c| c.is_ascii_alphanumeric())
        {
            continue;
        }
        let Some((num, generation, start)) = header_before(bytes, pos) else {
            continue;
        };
        // Later definitions win, as incremental updates intend.
        objects.insert(num, (generation, start));
        let window = &bytes[pos..bytes.len().min(pos + 400)];
        let window = find(window, b"endobj").map_or(window, |e| &window[..e]);
        if find(window, b"/Catalog").is_some() && find(window, b"/Type").is_some() {
            catalog = Some(num);
        }
    }
    let root = last_ref(bytes, b"/Root").filter(|(n, _)| objects.contains_key(n));
    let root = root.or_else(|| catalog.map(|n| (n, objects.get(&n).map_or(0, |o| o.0))))?;
    let size = objects.keys().next_back().map_or(1, |n| n + 1);
    if size > 10_000_000 {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() + size as usize * 20 + 256);
    out.extend_from_slice(bytes);
    out.push(b'\n');
    let xref_at = out.len();
    let mut table = format!("xref\n0 {size}\n");
    for n in 0..size {
        match objects.get(&n) {
            Some((g, off)) if n != 0 => {
                let _ = write!(table, "{off:010} {g:05} n\r\n");
            }
            _ => table.push_str("0000000000 65535 f\r\n"),
        }
    }
    let _ = write!(
        table,
        "trailer\n<< /Size {size} /Root {} {} R",
        root.0, root.1
    );
    for key in [&b"/Info"[..], b"/Encrypt"] {
        if let Some((n, g)) = last_ref(bytes, key).filter(|(n, _)| objects.contains_key(n)) {
            let _ = write!(table, " {} {n} {g} R", String::from_utf8_lossy(key));
        }
    }
    if let Some(id) = last_id(bytes) {
        table.push_str(" /ID ");
        table.push_str(&id);
    }
    out.extend_from_slice(table.as_bytes());
    if last_ref(bytes, b"/Encrypt").is_none()
        && let Some(dict) = direct_dict(bytes, b"/Encrypt")
    {
        // A direct encryption dictionary must survive (byte for byte: its O and U strings are
        // binary), or the encrypted objects would read as garbage.
        out.extend_from_slice(b" /Encrypt ");
        out.extend_from_slice(dict);
    }
    out.extend_from_slice(format!(" >>\nstartxref\n{xref_at}\n%%EOF\n").as_bytes());
    Some(out)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// Parses `num gen ` backwards from the `obj` keyword at `pos`; returns the header's offset.
fn header_before(bytes: &[u8], pos: usize) -> Option<(u32, u16, usize)> {
    let mut i = pos;
    let ws = |c: u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' | b'\0');
    while i > 0 && ws(bytes[i - 1]) {
        i -= 1;
    }
    let gen_end = i;
    while i > 0 && bytes[i - 1].is_ascii_digit() {
        i -= 1;
    }
    if i == gen_end || gen_end - i > 5 {
        return None;
    }
    let generation: u16 = std::str::from_utf8(&bytes[i..gen_end]).ok()?.parse().ok()?;
    let gen_start = i;
    while i > 0 && ws(bytes[i - 1]) {
        i -= 1;
    }
    if i == gen_start {
        return None;
    }
    let num_end = i;
    while i > 0 && bytes[i - 1].is_ascii_digit() {
        i -= 1;
    }
    if i == num_end || num_end - i > 9 {
        return None;
    }
    if i > 0 && bytes[i - 1].is_ascii_alphanumeric() {
        return None;
    }
    let num: u32 = std::str::from_utf8(&bytes[i..num_end]).ok()?.parse().ok()?;
    Some((num, generation, i))
}

/// The last `key N G R` in the file (trailers and xref streams both carry one).
fn last_ref(bytes: &[u8], key: &[u8]) -> Option<(u32, u16)> {
    let mut end = bytes.len();
    while let Some(p) = rfind(&bytes[..end], key) {
        end = p;
        let rest = &bytes[p + key.len()..bytes.len().min(p + key.len() + 40)];
        let text = String::from_utf8_lossy(rest);
        let mut parts = text.split_ascii_whitespace();
        let num = parts.next().and_then(|s| s.parse::<u32>().ok());
        let generation = parts.next().and_then(|s| s.parse::<u16>().ok());
        let r = parts.next().is_some_and(|s| s.starts_with('R'));
        if let (Some(n), Some(g), true) = (num, generation, r) {
            return Some((n, g));
        }
    }
    None
}

/// The last `/ID [<…> <…>]` array, which decryption keys depend on.
fn last_id(bytes: &[u8]) -> Option<String> {
    let p = rfind(bytes, b"/ID")?;
    let rest = &bytes[p + 3..bytes.len().min(p + 300)];
    let open = rest.iter().position(|c| !c.is_ascii_whitespace())?;
    if rest[open] != b'[' {
        return None;
    }
    let close = rest.iter().position(|&c| c == b']')?;
    let arr = &rest[open..=close];
    arr.iter()
        .all(|c| c.is_ascii_hexdigit() || b"[]<> \r\n\t".contains(c))
        .then(|| String::from_utf8_lossy(arr).into_owned())
}

/// The last `key << … >>` direct dictionary, as text (nesting-aware, bounded).
fn direct_dict<'a>(bytes: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let p = rfind(bytes, key)?;
    let rest = &bytes[p + key.len()..bytes.len().min(p + key.len() + 4096)];
    let open = rest.iter().position(|c| !c.is_ascii_whitespace())?;
    if !rest[open..].starts_with(b"<<") {
        return None;
    }
    let mut depth = 0usize;
    let mut i = open;
    while i + 1 < rest.len() {
        if rest[i..].starts_with(b"<<") {
            depth += 1;
            i += 2;
        } else if rest[i..].starts_with(b">>") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return Some(&rest[open..i]);
            }
        } else {
            i += 1;
        }
    }
    None
}
