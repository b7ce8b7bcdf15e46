//! Open Packaging Conventions: content types and relationships, used to find parts by role
//! rather than by their customary names.

use crate::archive::BoundedZip;
use crate::{Limits, ParseError};

use super::{FORMAT, xml};

/// Content types of WordprocessingML main parts (document, macro-enabled, templates).
const WORD_MAIN_TYPES: &[&str] = &[
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
    "application/vnd.ms-word.document.macroEnabled.main+xml",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml",
    "application/vnd.ms-word.template.macroEnabledTemplate.main+xml",
];

/// Reads a part by name, falling back to a case-insensitive match (part names are
/// case-insensitive in OPC, and some writers are inconsistent).
pub(crate) fn read_part(
    zip: &mut BoundedZip<'_>,
    name: &str,
) -> Result<Option<Vec<u8>>, ParseError> {
    let name = name.trim_start_matches('/');
    if zip.contains(name) {
        return zip.read(name);
    }
    let found = zip
        .names()
        .into_iter()
        .find(|n| n.eq_ignore_ascii_case(name));
    match found {
        Some(n) => zip.read(&n),
        None => Ok(None),
    }
}

/// A part the document can do without: `None` when it is missing or malformed. A limit error
/// still aborts (a zip bomb hidden in a secondary part is still a bomb).
pub(crate) fn read_optional_xml(
    zip: &mut BoundedZip<'_>,
    name: &str,
    format: &'static str,
    limits: &Limits,
) -> Result<Option<xml::Node>, ParseError> {
    let Some(data) = read_part(zip, name)? else {
        return Ok(None);
    };
    match xml::parse(&data, name, format, limits) {
        Ok(node) => Ok(Some(node)),
        Err(e @ ParseError::LimitExceeded(_)) => Err(e),
        Err(_) => Ok(None),
    }
}

/// Resolves a relationship target against the folder of its source part.
fn resolve(base_dir: &str, target: &str) -> String {
    let target = target.split(['#', '?']).next().unwrap_or_default();
    let joined = if let Some(abs) = target.strip_prefix('/') {
        abs.to_string()
    } else if base_dir.is_empty() {
        target.to_string()
    } else {
        format!("{base_dir}/{target}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for seg in joined.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

/// The relationships of one part: (id, type, resolved target).
#[derive(Debug, Default)]
pub(crate) struct Rels {
    items: Vec<(String, String, String)>,
}

impl Rels {
    fn from_xml(data: &[u8], rels_name: &str, base_dir: &str, limits: &Limits) -> Rels {
        let Ok(root) = xml::parse(data, rels_name, FORMAT, limits) else {
            return Rels::default();
        };
        let mut items = Vec::new();
        if let Some(list) = root.child("Relationships") {
            for rel in list.elems().filter(|n| &*n.name == "Relationship") {
                if rel.attr("TargetMode") == Some("External") {
                    continue;
                }
                if let (Some(ty), Some(target)) = (rel.attr("Type"), rel.attr("Target")) {
                    let id = rel.attr("Id").unwrap_or_default().to_string();
                    items.push((id, ty.to_string(), resolve(base_dir, target)));
                }
            }
        }
        Rels { items }
    }

    /// Target of the first relationship whose type ends with `/{kind}` (transitional and strict
    /// relationship URIs differ only in their prefix).
    pub(crate) fn target(&self, kind: &str) -> Option<String> {
        let suffix = format!("/{kind}");
        self.items
            .iter()
            .find(|(_, ty, _)| ty.ends_with(&suffix))
            .map(|(_, _, t)| t.clone())
    }

    /// Target of the relationship with this id (`r:id="rId2"`).
    pub(crate) fn by_id(&self, id: &str) -> Option<String> {
        self.items
            .iter()
            .find(|(i, _, _)| i == id)
            .map(|(_, _, t)| t.clone())
    }
}

/// Package-level information: root relationships and content-type overrides.
#[derive(Debug)]
pub(crate) struct Package {
    root_rels: Rels,
    /// (part name without leading slash, content type)
    overrides: Vec<(String, String)>,
}

impl Package {
    pub(crate) fn load(zip: &mut BoundedZip<'_>, limits: &Limits) -> Result<Package, ParseError> {
        let root_rels = match read_part(zip, "_rels/.rels")? {
            Some(data) => Rels::from_xml(&data, "_rels/.rels", "", limits),
            None => Rels::default(),
        };
        let mut overrides = Vec::new();
        if let Some(data) = read_part(zip, "[Content_Types].xml")?
            && let Ok(root) = xml::parse(&data, "[Content_Types].xml", FORMAT, limits)
            && let Some(types) = root.child("Types")
        {
            for o in types.elems().filter(|n| &*n.name == "Override") {
                if let (Some(name), Some(ty)) = (o.attr("PartName"), o.attr("ContentType")) {
                    overrides.push((name.trim_start_matches('/').to_string(), ty.to_string()));
                }
            }
        }
        Ok(Package {
            root_rels,
            overrides,
        })
    }

    fn content_type(&self, part: &str) -> Option<&str> {
        self.overrides
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(part))
            .map(|(_, t)| t.as_str())
    }

    /// Target of the package's `officeDocument` relationship (the main part of any OOXML
    /// package: `word/document.xml`, `ppt/presentation.xml`, …).
    pub(crate) fn office_document(&self) -> Option<String> {
        self.root_rels.target("officeDocument")
    }

    /// Name of the main document part, or a one-line reason why this package is not a DOCX.
    pub(super) fn main_document(&self, zip: &mut BoundedZip<'_>) -> Result<String, ParseError> {
        let exists = |zip: &BoundedZip<'_>, name: &str| {
            zip.contains(name) || zip.names().iter().any(|n| n.eq_ignore_ascii_case(name))
        };
        let mut candidates = Vec::new();
        if let Some(t) = self.root_rels.target("officeDocument") {
            candidates.push(t);
        }
        candidates.extend(
            self.overrides
                .iter()
                .filter(|(_, ty)| WORD_MAIN_TYPES.contains(&ty.as_str()))
                .map(|(n, _)| n.clone()),
        );
        candidates.push("word/document.xml".to_string());
        for name in candidates {
            if !exists(zip, &name) {
                continue;
            }
            match self.content_type(&name) {
                Some(ty) if ty.contains("spreadsheetml") => {
                    return Err(ParseError::invalid(
                        FORMAT,
                        "this is a spreadsheet (XLSX) renamed to .docx",
                    ));
                }
                Some(ty) if ty.contains("presentationml") => {
                    return Err(ParseError::invalid(
                        FORMAT,
                        "this is a presentation (PPTX) renamed to .docx",
                    ));
                }
                _ => return Ok(name),
            }
        }
        if exists(zip, "content.xml") && exists(zip, "mimetype") {
            return Err(ParseError::invalid(
                FORMAT,
                "could not find main document part (this is an OpenDocument file; save it as .docx)",
            ));
        }
        Err(ParseError::invalid(
            FORMAT,
            "could not find main document part (word/document.xml)",
        ))
    }

    /// Relationships of `part` (`word/_rels/document.xml.rels` for `word/document.xml`).
    pub(crate) fn part_relationships(
        &self,
        zip: &mut BoundedZip<'_>,
        part: &str,
        limits: &Limits,
    ) -> Result<Rels, ParseError> {
        let (dir, file) = part.rsplit_once('/').unwrap_or(("", part));
        let rels_name = if dir.is_empty() {
            format!("_rels/{file}.rels")
        } else {
            format!("{dir}/_rels/{file}.rels")
        };
        Ok(match read_part(zip, &rels_name)? {
            Some(data) => Rels::from_xml(&data, &rels_name, dir, limits),
            None => Rels::default(),
        })
    }

    /// The title in the package's core properties (`dc:title`), when it has one.
    pub(crate) fn core_title(
        &self,
        zip: &mut BoundedZip<'_>,
        limits: &Limits,
    ) -> Result<Option<String>, ParseError> {
        let name = self
            .root_rels
            .target("core-properties")
            .unwrap_or_else(|| "docProps/core.xml".to_string());
        Ok(read_part(zip, &name)?
            .and_then(|data| xml::parse(&data, &name, FORMAT, limits).ok())
            .and_then(|root| {
                root.child("coreProperties")
                    .and_then(|c| c.child("title"))
                    .map(|t| t.text().trim().to_string())
            })
            .filter(|t| !t.is_empty()))
    }
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn relationship_targets_resolve_against_the_source_folder() {
        let cases = [
            ("word", "styles.xml", "word/styles.xml"),
            ("word", "/word/styles.xml", "word/styles.xml"),
            ("word", "../customXml/item1.xml", "customXml/item1.xml"),
            ("", "word/document2.xml", "word/document2.xml"),
            ("", "./word/document.xml", "word/document.xml"),
            ("a/b", "../../../x.xml", "x.xml"),
        ];
        for (base, target, want) in cases {
            assert_eq!(resolve(base, target), want, "{base} + {target}");
        }
    }
}
