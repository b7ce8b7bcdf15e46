//! No rule of the product may be fitted to the sample data it was developed on: the product
//! sources (every crate's `src/` and `data/`, and the desktop shell's `src/`, outside test
//! modules and test files) must not name the development sets' tables, columns or values, nor
//! the translations of their vocabulary that earlier code carried.
//!
//! - Chinook (`../shared/corpora/sql/chinook`): its table names, and its column names that are
//!   not plain English words (compound identifiers such as `AlbumId`, and `Milliseconds`,
//!   `Composer`).
//! - The demo corpus (`assets/demo/data/projects.xlsx`, always present): its sheets' column
//!   names of more than one word or in Chinese, and its text values of more than one word or
//!   in Chinese (people's and projects' names).
//! - CMRC 2018 (`../shared/corpora/cmrc2018_zh`): its gold answers of four characters or more.
//!
//! Without `../shared` the Chinook and CMRC parts skip with a message; under `CI=true` a skip
//! is a failure.

#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("../..")
}

fn shared() -> Option<PathBuf> {
    let dir = workspace().join("../shared/corpora");
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "../shared/corpora is missing under CI=true: the vocabulary check cannot be skipped"
    );
    eprintln!("skipping the Chinook and CMRC names: ../shared/corpora not found");
    None
}

/// One product source: its path and the text outside its test module.
struct Source {
    path: String,
    text: String,
}

/// The product sources: `crates/*/src/**`, `crates/*/data/**` and `src-tauri/src/**`, without
/// test files (`tests.rs`, `*_tests.rs`, `test_support.rs`) and without what follows a file's
/// `#[cfg(test)]` line.
fn product_sources() -> Vec<Source> {
    let root = workspace();
    let mut dirs = vec![root.join("src-tauri/src")];
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let krate = entry.unwrap().path();
        dirs.push(krate.join("src"));
        dirs.push(krate.join("data"));
    }
    let mut out = Vec::new();
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        walk(dir, &mut |path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name == "tests.rs" || name.ends_with("_tests.rs") || name == "test_support.rs" {
                return;
            }
            let Ok(text) = std::fs::read_to_string(path) else {
                return;
            };
            let text = match text.find("\n#[cfg(test)]") {
                Some(at) => text[..at].to_string(),
                None => text,
            };
            out.push(Source {
                path: path.strip_prefix(&root).unwrap().display().to_string(),
                text,
            });
        });
    }
    assert!(out.len() > 50, "found only {} product sources", out.len());
    out
}

fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, f);
        } else {
            f(&path);
        }
    }
}

/// The identifier-like words of `text` (letters, digits, `_`), as written.
fn words(text: &str) -> BTreeSet<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect()
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF)
}

/// Where the sources use any of `names`: whole words compared as `same` says, and texts with
/// CJK characters as substrings.
fn hits(sources: &[Source], names: &BTreeSet<String>, case_sensitive: bool) -> Vec<String> {
    let mut found = Vec::new();
    for s in sources {
        let lower = s.text.to_lowercase();
        let written = words(&s.text);
        let lowered = words(&lower);
        for name in names {
            let hit = if name.chars().any(is_cjk) || name.contains(' ') {
                if case_sensitive {
                    s.text.contains(name.as_str())
                } else {
                    lower.contains(&name.to_lowercase())
                }
            } else if case_sensitive {
                written.contains(name.as_str())
            } else {
                lowered.contains(name.to_lowercase().as_str())
            };
            if hit {
                found.push(format!("{}: {name}", s.path));
            }
        }
    }
    found
}

fn assert_none(what: &str, found: Vec<String>) {
    assert!(
        found.is_empty(),
        "product code names {what} (a rule fitted to the sample data?):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn no_chinook_names_in_product_code() {
    let Some(shared) = shared() else { return };
    let db = shared.join("sql/chinook/Chinook_Sqlite.sqlite");
    let schema = knowhub_sql::introspect(&db, 0).unwrap();
    let compound = |n: &str| n.chars().filter(char::is_ascii_uppercase).count() >= 2;
    let mut exact = BTreeSet::new();
    let mut any_case = BTreeSet::new();
    for t in &schema.tables {
        exact.insert(t.name.clone());
        if compound(&t.name) {
            any_case.insert(t.name.clone());
        }
        for c in &t.columns {
            if compound(&c.name) {
                any_case.insert(c.name.clone());
            }
        }
    }
    // Single-word columns that are no plain English word of a product's vocabulary.
    exact.extend(["Milliseconds", "Composer"].map(String::from));
    assert!(any_case.contains("AlbumId") && exact.contains("Track"));
    // Translations of its vocabulary that earlier code carried.
    let translated: BTreeSet<String> = ["曲目", "专辑", "发票明细", "播放列表", "流派", "艺术家"]
        .map(String::from)
        .into();
    let sources = product_sources();
    let mut found = hits(&sources, &exact, true);
    found.extend(hits(&sources, &any_case, false));
    found.extend(hits(&sources, &translated, true));
    assert_none(
        "the Chinook sample database's tables, columns or words",
        found,
    );
}

#[test]
fn no_demo_corpus_names_in_product_code() {
    let path = workspace().join("assets/demo/data/projects.xlsx");
    let bytes = std::fs::read(&path).unwrap();
    let doc = knowhub_parse::parse(
        knowhub_parse::DocKind::Xlsx,
        &bytes,
        &knowhub_parse::Limits::default(),
    )
    .unwrap();
    let distinctive =
        |s: &str| s.trim().contains(' ') || s.chars().filter(|c| is_cjk(*c)).count() >= 2;
    let mut names = BTreeSet::new();
    for table in &doc.tables {
        for c in &table.columns {
            if distinctive(&c.name) {
                names.insert(c.name.trim().to_string());
            }
        }
        for row in &table.rows {
            for cell in row {
                if let knowhub_parse::Cell::Text(t) = cell
                    && distinctive(t)
                    && t.chars().count() <= 40
                {
                    names.insert(t.trim().to_string());
                }
            }
        }
    }
    assert!(
        names.len() > 10,
        "read only {names:?} from {}",
        path.display()
    );
    assert_none(
        "the demo corpus's columns or values",
        hits(&product_sources(), &names, true),
    );
}

#[test]
fn no_cmrc_answers_in_product_code() {
    let Some(shared) = shared() else { return };
    let text = std::fs::read_to_string(shared.join("cmrc2018_zh/answers.jsonl")).unwrap();
    let mut answers = BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for a in v["answers"].as_array().into_iter().flatten() {
            if let Some(a) = a.as_str()
                && a.chars().filter(|c| is_cjk(*c)).count() >= 4
            {
                answers.insert(a.trim().to_string());
            }
        }
    }
    assert!(answers.len() > 100, "read {} answers", answers.len());
    // Only the CJK runs of the sources can hold a Chinese answer: search those.
    let sources = product_sources();
    let mut found = Vec::new();
    for s in &sources {
        let runs: Vec<String> = s
            .text
            .split(|c: char| !(is_cjk(c) || c.is_alphanumeric() || "，、·".contains(c)))
            .filter(|r| r.chars().any(is_cjk))
            .map(String::from)
            .collect();
        for a in &answers {
            if runs.iter().any(|r| r.contains(a.as_str())) {
                found.push(format!("{}: {a}", s.path));
            }
        }
    }
    assert_none("CMRC 2018 gold answers", found);
}
