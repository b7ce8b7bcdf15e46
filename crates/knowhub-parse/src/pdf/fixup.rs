//! Rewrites parts of a loaded document that `pdf-extract` would otherwise panic on or mis-read.
//!
//! `pdf-extract` assumes well-formed input and supports only a few encodings. Rather than fork
//! it, we normalise the document in memory first: predefined CJK CMaps become embedded CMap
//! streams plus a synthesised ToUnicode map, unknown encoding names are dropped, image data is
//! emptied (it would otherwise be parsed as a content stream), and form XObject cycles are cut
//! (they would recurse until the stack overflows, which `catch_unwind` cannot catch).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use lopdf::{Dictionary, Document, Object, ObjectId, Stream};

/// What the fix-up learned about the document while rewriting it.
#[derive(Debug, Default)]
pub(crate) struct FixupInfo {
    /// Image XObjects, recorded before their data is dropped, to tell scanned pages from blank.
    pub(crate) images: HashSet<ObjectId>,
    /// Form XObjects that draw an image somewhere inside.
    pub(crate) forms_with_images: HashSet<ObjectId>,
}

pub(crate) fn fixup(doc: &mut Document) -> FixupInfo {
    let mut info = FixupInfo::default();
    let ids: Vec<ObjectId> = doc.objects.keys().copied().collect();
    let mut forms: Vec<ObjectId> = Vec::new();
    let mut synthesized: HashMap<&'static str, (ObjectId, Option<ObjectId>)> = HashMap::new();
    let mut checked: HashMap<ObjectId, bool> = HashMap::new();
    for id in ids {
        let kind = match doc.objects.get(&id) {
            Some(Object::Stream(s)) => match name_of(s.dict.get(b"Subtype").ok()) {
                Some(b"Image") => Kind::Image,
                Some(b"Form") => Kind::Form,
                _ => Kind::Other,
            },
            Some(Object::Dictionary(d)) if is_font(d) => Kind::Font,
            _ => Kind::Other,
        };
        match kind {
            Kind::Image => {
                info.images.insert(id);
                if let Some(Object::Stream(s)) = doc.objects.get_mut(&id) {
                    s.dict.remove(b"Filter");
                    s.dict.remove(b"DecodeParms");
                    s.set_content(Vec::new());
                }
            }
            Kind::Form => forms.push(id),
            Kind::Font => fix_font(doc, id, &mut synthesized, &mut checked),
            Kind::Other => {}
        }
    }
    fix_pages(doc);
    break_form_cycles(doc, &forms, &mut info);
    info
}

enum Kind {
    Image,
    Form,
    Font,
    Other,
}

fn name_of(obj: Option<&Object>) -> Option<&[u8]> {
    obj.and_then(|o| o.as_name().ok())
}

fn is_font(d: &Dictionary) -> bool {
    name_of(d.get(b"Type").ok()) == Some(b"Font") || d.has(b"BaseFont")
}

fn fix_font(
    doc: &mut Document,
    id: ObjectId,
    synthesized: &mut HashMap<&'static str, (ObjectId, Option<ObjectId>)>,
    checked: &mut HashMap<ObjectId, bool>,
) {
    let Some(Object::Dictionary(font)) = doc.objects.get(&id) else {
        return;
    };
    let subtype = name_of(font.get(b"Subtype").ok()).map(<[u8]>::to_vec);
    let encoding = font.get(b"Encoding").ok().cloned();
    let encoding = match encoding {
        Some(Object::Reference(r)) => doc.objects.get(&r).cloned(),
        other => other,
    };
    let to_unicode_ref = match font.get(b"ToUnicode") {
        Ok(Object::Reference(r)) if matches!(doc.objects.get(r), Some(Object::Stream(_))) => {
            Some(*r)
        }
        _ => None,
    };
    let to_unicode_present = font.has(b"ToUnicode");
    let has_descendants = font.has(b"DescendantFonts");
    let mut has_to_unicode_stream = to_unicode_ref.is_some();
    if let Some(r) = to_unicode_ref {
        has_to_unicode_stream = sanitize_to_unicode(doc, r, checked);
    }

    let mut remove_encoding = false;
    let mut new_encoding: Option<(ObjectId, Option<ObjectId>)> = None;
    if subtype.as_deref() == Some(b"Type0") {
        match &encoding {
            Some(Object::Name(n)) if n == b"Identity-H" || n == b"Identity-V" => {}
            Some(Object::Name(n)) => {
                if let Some(cmap) = predefined(n) {
                    let entry = synthesized.entry(cmap.key).or_insert_with(|| {
                        let enc = doc.add_object(Stream::new(Dictionary::new(), cmap.encoding()));
                        let uni = cmap
                            .to_unicode()
                            .map(|u| doc.add_object(Stream::new(Dictionary::new(), u)));
                        (enc, uni)
                    });
                    new_encoding = Some(*entry);
                } else {
                    // An unknown CMap: two-byte codes are the most common guess and keep the
                    // page's other fonts readable.
                    new_encoding = Some((ObjectId::default(), None));
                }
            }
            Some(Object::Stream(_)) => {}
            _ => new_encoding = Some((ObjectId::default(), None)),
        }
    } else if let Some(enc) = &encoding {
        match enc {
            Object::Name(n) if !is_known_simple_encoding(n) => remove_encoding = true,
            Object::Dictionary(d) => {
                if let Some(base) = name_of(d.get(b"BaseEncoding").ok())
                    && !is_known_simple_encoding(base)
                {
                    let mut d = d.clone();
                    d.remove(b"BaseEncoding");
                    if let Some(Object::Dictionary(font)) = doc.objects.get_mut(&id) {
                        font.set("Encoding", Object::Dictionary(d));
                    }
                }
                if !differences_ok(d) {
                    remove_encoding = true;
                }
            }
            Object::Name(_) => {}
            _ => remove_encoding = true,
        }
    }

    let is_simple = !matches!(subtype.as_deref(), Some(b"Type0" | b"Type3"));
    let needs_base_encoding =
        is_simple && (encoding.is_none() || remove_encoding) && !has_type1_program(doc, id);
    let Some(Object::Dictionary(font)) = doc.objects.get_mut(&id) else {
        return;
    };
    if remove_encoding {
        font.remove(b"Encoding");
    }
    if needs_base_encoding {
        // pdf-extract panics when a code is missing from ToUnicode and there is no encoding to
        // fall back on; WinAnsi agrees with StandardEncoding on ASCII, which is what matters.
        font.set("Encoding", Object::Name(b"WinAnsiEncoding".to_vec()));
    }
    if to_unicode_present && !has_to_unicode_stream {
        // A named ToUnicode (or a broken one) makes pdf-extract panic; no map is better.
        font.remove(b"ToUnicode");
    }
    if subtype.as_deref() == Some(b"Type0") && has_descendants {
        fix_descendant(doc, id);
    }
    let Some(Object::Dictionary(font)) = doc.objects.get_mut(&id) else {
        return;
    };
    if subtype.as_deref() == Some(b"Type0") && !has_descendants {
        font.set("Subtype", Object::Name(b"Type1".to_vec()));
        font.remove(b"Encoding");
    }
    if let Some((enc, uni)) = new_encoding {
        if enc == ObjectId::default() {
            font.set("Encoding", Object::Name(b"Identity-H".to_vec()));
        } else {
            font.set("Encoding", Object::Reference(enc));
            if !has_to_unicode_stream && let Some(uni) = uni {
                font.set("ToUnicode", Object::Reference(uni));
            }
        }
    }
}

/// Checks a ToUnicode CMap the way pdf-extract will read it and, where that would panic,
/// replaces it with the entries that are usable. Returns whether a usable map remains.
fn sanitize_to_unicode(
    doc: &mut Document,
    id: ObjectId,
    checked: &mut HashMap<ObjectId, bool>,
) -> bool {
    if let Some(ok) = checked.get(&id) {
        return *ok;
    }
    let Some(Object::Stream(stream)) = doc.objects.get(&id) else {
        return false;
    };
    let content = if stream.filters().is_ok() {
        stream
            .decompressed_content()
            .unwrap_or_else(|_| stream.content.clone())
    } else {
        stream.content.clone()
    };
    let parsed = std::panic::catch_unwind(|| adobe_cmap_parser::get_unicode_map(&content));
    let ok = match parsed {
        Ok(Ok(map)) => {
            let valid = |v: &Vec<u8>| {
                v.len().is_multiple_of(2) && {
                    let units: Vec<u16> = v
                        .chunks_exact(2)
                        .map(|c| u16::from_be_bytes([c[0], c[1]]))
                        .collect();
                    String::from_utf16(&units).is_ok()
                }
            };
            if map.values().all(valid) {
                true
            } else {
                let mut s = String::from("begincmap\n");
                let good: Vec<(&u32, &Vec<u8>)> = map.iter().filter(|(_, v)| valid(v)).collect();
                for chunk in good.chunks(100) {
                    let _ = writeln!(s, "{} beginbfchar", chunk.len());
                    for (code, v) in chunk {
                        let _ = write!(s, "<{code:04x}> <");
                        for b in v.iter() {
                            let _ = write!(s, "{b:02x}");
                        }
                        s.push_str(">\n");
                    }
                    s.push_str("endbfchar\n");
                }
                s.push_str("endcmap\n");
                doc.objects.insert(
                    id,
                    Object::Stream(Stream::new(Dictionary::new(), s.into_bytes())),
                );
                true
            }
        }
        _ => false,
    };
    checked.insert(id, ok);
    ok
}

/// pdf-extract requires a CIDFont dictionary with a FontDescriptor; supply empty ones.
fn fix_descendant(doc: &mut Document, font: ObjectId) {
    let first = doc
        .get_dictionary(font)
        .and_then(|f| f.get(b"DescendantFonts"))
        .and_then(|o| doc.dereference(o))
        .and_then(|(_, o)| o.as_array())
        .ok()
        .and_then(|a| a.first().cloned());
    let target = match &first {
        Some(Object::Reference(r)) => match doc.objects.get(r) {
            Some(Object::Dictionary(_)) => Some(*r),
            _ => None,
        },
        Some(Object::Dictionary(_)) => None,
        _ => None,
    };
    let has_descriptor = |d: &Dictionary| {
        d.get(b"FontDescriptor").is_ok_and(|o| match o {
            Object::Reference(r) => matches!(doc.objects.get(r), Some(Object::Dictionary(_))),
            Object::Dictionary(_) => true,
            _ => false,
        })
    };
    match (target, first) {
        (Some(r), _) => {
            let ok = doc.get_dictionary(r).is_ok_and(has_descriptor);
            if !ok && let Ok(d) = doc.get_dictionary_mut(r) {
                d.set("FontDescriptor", Object::Dictionary(Dictionary::new()));
            }
        }
        (None, Some(Object::Dictionary(d))) if has_descriptor(&d) => {}
        (None, first) => {
            let mut d = match first {
                Some(Object::Dictionary(d)) => d,
                _ => Dictionary::new(),
            };
            d.set("FontDescriptor", Object::Dictionary(Dictionary::new()));
            if let Ok(f) = doc.get_dictionary_mut(font) {
                f.set(
                    "DescendantFonts",
                    Object::Array(vec![Object::Dictionary(d)]),
                );
            }
        }
    }
}

/// Whether the font embeds a Type 1 program, whose built-in encoding pdf-extract reads.
fn has_type1_program(doc: &Document, font: ObjectId) -> bool {
    let Ok(font) = doc.get_dictionary(font) else {
        return false;
    };
    font.get(b"FontDescriptor")
        .and_then(|o| doc.dereference(o))
        .and_then(|(_, o)| o.as_dict())
        .is_ok_and(|d| d.has(b"FontFile"))
}

fn is_known_simple_encoding(n: &[u8]) -> bool {
    matches!(
        n,
        b"WinAnsiEncoding" | b"MacRomanEncoding" | b"MacExpertEncoding"
    )
}

/// pdf-extract panics on anything but integers and names in /Differences.
fn differences_ok(d: &Dictionary) -> bool {
    match d.get(b"Differences") {
        Ok(Object::Array(a)) => a
            .iter()
            .all(|o| matches!(o, Object::Integer(0..=255) | Object::Name(_))),
        Ok(_) => false,
        Err(_) => true,
    }
}

/// Pages without a usable MediaBox make pdf-extract panic; give them US Letter.
fn fix_pages(doc: &mut Document) {
    let pages: Vec<ObjectId> = doc.page_iter().collect();
    for page in pages {
        if inherited_media_box(doc, page).is_some() {
            continue;
        }
        if let Ok(d) = doc.get_dictionary_mut(page) {
            d.set(
                "MediaBox",
                Object::Array(vec![0.into(), 0.into(), 612.into(), 792.into()]),
            );
        }
    }
}

fn inherited_media_box(doc: &Document, page: ObjectId) -> Option<()> {
    let mut dict = doc.get_dictionary(page).ok()?;
    for _ in 0..32 {
        if let Ok(mb) = dict.get(b"MediaBox") {
            let mb = doc.dereference(mb).ok()?.1.as_array().ok()?;
            let ok = mb.len() == 4
                && mb
                    .iter()
                    .all(|o| matches!(o, Object::Integer(_) | Object::Real(_)));
            return ok.then_some(());
        }
        let parent = dict.get(b"Parent").ok()?.as_reference().ok()?;
        dict = doc.get_dictionary(parent).ok()?;
    }
    None
}

/// Removes XObject references that would make a form draw itself, directly or indirectly, and
/// notes which forms contain images.
fn break_form_cycles(doc: &mut Document, forms: &[ObjectId], info: &mut FixupInfo) {
    let form_set: HashSet<ObjectId> = forms.iter().copied().collect();
    let mut edges: HashMap<ObjectId, Vec<(Vec<u8>, ObjectId)>> = HashMap::new();
    for &f in forms {
        let mut out = Vec::new();
        if let Some(Object::Stream(s)) = doc.objects.get(&f)
            && let Some(xobjects) = xobject_dict(doc, &s.dict)
        {
            for (name, target) in xobjects.iter() {
                if let Object::Reference(t) = target {
                    if info.images.contains(t) {
                        info.forms_with_images.insert(f);
                    }
                    if form_set.contains(t) {
                        out.push((name.clone(), *t));
                    }
                }
            }
        }
        edges.insert(f, out);
    }
    // Iterative DFS: a back edge closes a cycle and is cut.
    let mut state: HashMap<ObjectId, u8> = HashMap::new();
    let mut cut: Vec<(ObjectId, Vec<u8>)> = Vec::new();
    for &root in forms {
        if state.contains_key(&root) {
            continue;
        }
        let mut stack: Vec<(ObjectId, usize)> = vec![(root, 0)];
        state.insert(root, 1);
        while let Some((node, idx)) = stack.pop() {
            let next = edges.get(&node).and_then(|e| e.get(idx)).cloned();
            match next {
                Some((name, t)) => {
                    stack.push((node, idx + 1));
                    match state.get(&t) {
                        Some(1) => cut.push((node, name)),
                        Some(_) => {}
                        None => {
                            state.insert(t, 1);
                            stack.push((t, 0));
                        }
                    }
                }
                None => {
                    state.insert(node, 2);
                }
            }
        }
    }
    for (form, name) in cut {
        let xref = match doc.objects.get(&form) {
            Some(Object::Stream(s)) => s.dict.get(b"Resources").ok().cloned(),
            _ => None,
        };
        // Resources may be shared through a reference; edit wherever the XObject dict lives.
        let res_id = match &xref {
            Some(Object::Reference(r)) => Some(*r),
            _ => None,
        };
        let target = res_id.unwrap_or(form);
        let xobj_ref = resources_of(doc, target, res_id.is_some())
            .and_then(|r| r.get(b"XObject").ok())
            .and_then(|o| o.as_reference().ok());
        if let Some(x) = xobj_ref {
            if let Ok(d) = doc.get_dictionary_mut(x) {
                d.remove(&name);
            }
        } else if let Some(res) = resources_mut(doc, target, res_id.is_some())
            && let Ok(Object::Dictionary(x)) = res.get_mut(b"XObject")
        {
            x.remove(&name);
        }
    }
    // Forms that draw forms with images also count as drawing images.
    for _ in 0..4 {
        let mut added = false;
        for (f, out) in &edges {
            if !info.forms_with_images.contains(f)
                && out.iter().any(|(_, t)| info.forms_with_images.contains(t))
            {
                info.forms_with_images.insert(*f);
                added = true;
            }
        }
        if !added {
            break;
        }
    }
}

fn resources_of(doc: &Document, id: ObjectId, is_dict: bool) -> Option<&Dictionary> {
    match doc.objects.get(&id)? {
        Object::Dictionary(d) if is_dict => Some(d),
        Object::Stream(s) if !is_dict => s.dict.get(b"Resources").ok()?.as_dict().ok(),
        _ => None,
    }
}

fn resources_mut(doc: &mut Document, id: ObjectId, is_dict: bool) -> Option<&mut Dictionary> {
    match doc.objects.get_mut(&id)? {
        Object::Dictionary(d) if is_dict => Some(d),
        Object::Stream(s) if !is_dict => s.dict.get_mut(b"Resources").ok()?.as_dict_mut().ok(),
        _ => None,
    }
}

/// The XObject dictionary of a resource-bearing dictionary (page or form), following references.
pub(crate) fn xobject_dict<'a>(doc: &'a Document, owner: &'a Dictionary) -> Option<&'a Dictionary> {
    let res = doc.dereference(owner.get(b"Resources").ok()?).ok()?.1;
    let res = res.as_dict().ok()?;
    let x = doc.dereference(res.get(b"XObject").ok()?).ok()?.1;
    x.as_dict().ok()
}

/// Predefined CJK CMaps whose codes we can turn into Unicode without Adobe's CMap files.
#[derive(Debug, Clone, Copy)]
struct Predefined {
    key: &'static str,
    scheme: Scheme,
}

#[derive(Debug, Clone, Copy)]
enum Scheme {
    /// Codes are UCS-2 / UTF-16BE code units (Uni*-UCS2-*, Uni*-UTF16-*).
    Ucs2,
    /// Codes are bytes of a legacy multi-byte charset.
    Legacy(&'static encoding_rs::Encoding),
}

fn predefined(name: &[u8]) -> Option<Predefined> {
    let n = std::str::from_utf8(name).ok()?;
    let base = n
        .strip_suffix("-H")
        .or_else(|| n.strip_suffix("-V"))
        .unwrap_or(n);
    let (key, scheme) =
        if base.starts_with("Uni") && (base.contains("UCS2") || base.contains("UTF16")) {
            ("ucs2", Scheme::Ucs2)
        } else if base.contains("RKSJ") {
            ("sjis", Scheme::Legacy(encoding_rs::SHIFT_JIS))
        } else if base == "EUC" || base == "Ext" || base.starts_with("EUC") {
            ("eucjp", Scheme::Legacy(encoding_rs::EUC_JP))
        } else if base.starts_with("GB") {
            ("gbk", Scheme::Legacy(encoding_rs::GBK))
        } else if base.contains("B5") {
            ("big5", Scheme::Legacy(encoding_rs::BIG5))
        } else if base.starts_with("KSC") {
            ("euckr", Scheme::Legacy(encoding_rs::EUC_KR))
        } else {
            return None;
        };
    Some(Predefined { key, scheme })
}

impl Predefined {
    /// Lead-byte ranges of two-byte codes; everything else is a one-byte code.
    fn lead_ranges(self) -> &'static [(u8, u8)] {
        match self.key {
            "sjis" => &[(0x81, 0x9f), (0xe0, 0xfc)],
            _ => &[(0x81, 0xfe)],
        }
    }

    /// An embedded CMap that maps each code to CID = code, so the ToUnicode map below (keyed by
    /// code) applies directly.
    ///
    /// adobe-cmap-parser takes a codespace range's byte width to be half its hex string's byte
    /// length, so one-byte ranges are written as two bytes and two-byte ranges as four.
    fn encoding(self) -> Vec<u8> {
        let mut s = String::from("/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n");
        match self.scheme {
            Scheme::Ucs2 => {
                s.push_str("1 begincodespacerange <00000000> <0000ffff> endcodespacerange\n");
            }
            Scheme::Legacy(_) => {
                let leads = self.lead_ranges();
                let mut singles: Vec<(u8, u8)> = Vec::new();
                let mut next = 0u8;
                for &(lo, hi) in leads {
                    if lo > next {
                        singles.push((next, lo - 1));
                    }
                    next = hi.saturating_add(1);
                }
                if next != 0 {
                    singles.push((next, 0xff));
                }
                let _ = writeln!(s, "{} begincodespacerange", singles.len() + leads.len());
                for (lo, hi) in &singles {
                    let _ = writeln!(s, "<00{lo:02x}> <00{hi:02x}>");
                }
                for (lo, hi) in leads {
                    let _ = writeln!(s, "<0000{lo:02x}00> <0000{hi:02x}ff>");
                }
                s.push_str("endcodespacerange\n");
            }
        }
        // adobe-cmap-parser mis-steps over multi-entry cidrange blocks; one entry suffices.
        s.push_str("1 begincidrange <00> <ffff> 0 endcidrange\n");
        s.push_str("endcmap CMapName currentdict /CMap defineresource pop end end\n");
        s.into_bytes()
    }

    fn to_unicode(self) -> Option<Vec<u8>> {
        let mut s = String::from("/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n");
        match self.scheme {
            Scheme::Ucs2 => {
                s.push_str(
                    "2 beginbfrange\n<0000> <d7ff> <0000>\n<e000> <ffff> <e000>\nendbfrange\n",
                );
            }
            Scheme::Legacy(enc) => {
                let mut entries: Vec<(u16, Vec<u16>)> = Vec::new();
                for b in 0x20u8..0x7f {
                    entries.push((u16::from(b), vec![u16::from(b)]));
                }
                if self.key == "sjis" {
                    // Half-width katakana are single bytes in Shift_JIS.
                    for b in 0xa1u8..=0xdf {
                        let bytes = [b];
                        let (text, _, bad) = enc.decode(&bytes);
                        if !bad {
                            entries.push((u16::from(b), text.encode_utf16().collect()));
                        }
                    }
                }
                for &(lo, hi) in self.lead_ranges() {
                    for lead in lo..=hi {
                        for trail in 0x40u8..=0xfe {
                            let bytes = [lead, trail];
                            let (text, bad) = enc.decode_without_bom_handling(&bytes);
                            if bad || text.chars().count() != 1 {
                                continue;
                            }
                            let code = u16::from_be_bytes([lead, trail]);
                            entries.push((code, text.encode_utf16().collect()));
                        }
                    }
                }
                for chunk in entries.chunks(100) {
                    let _ = writeln!(s, "{} beginbfchar", chunk.len());
                    for (code, units) in chunk {
                        let width = if *code > 0xff { 4 } else { 2 };
                        let _ = write!(s, "<{code:0width$x}> <");
                        for u in units {
                            let _ = write!(s, "{u:04x}");
                        }
                        s.push_str(">\n");
                    }
                    s.push_str("endbfchar\n");
                }
            }
        }
        s.push_str("endcmap CMapName currentdict /CMap defineresource pop end end\n");
        Some(s.into_bytes())
    }
}
