//! Which files of a folder source are documents: the built-in skip list (hidden files, editor
//! temp and lock files, build output), `.knowhubignore` files (gitignore syntax) anywhere in the
//! folder, the source's own include/exclude globs, and its size limit.
//!
//! The same decision is made for a folder walk and for a single path a watcher reports, so a
//! file never enters through one door that the other would have kept out.

use std::path::{Path, PathBuf};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::overrides::{Override, OverrideBuilder};
use serde::{Deserialize, Serialize};

use crate::fs::{Fs, skip_name};
use crate::{EngineError, Result};

/// The name of the per-folder ignore file.
pub const IGNORE_FILE: &str = ".knowhubignore";

/// A folder source's rules, stored with the source as JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SourceRules {
    /// Glob patterns (gitignore syntax, relative to the folder); when any is given, only
    /// matching files are documents.
    pub include: Vec<String>,
    /// Glob patterns of files and folders to leave out.
    pub exclude: Vec<String>,
    /// Files larger than this are not read (the engine-wide parse limit applies regardless).
    pub max_file_bytes: Option<u64>,
}

impl SourceRules {
    /// Parses stored rules; unreadable rules count as none (and are logged), so a damaged row
    /// never stops a folder from being watched.
    pub fn from_json(json: &str) -> SourceRules {
        serde_json::from_str(json).unwrap_or_else(|e| {
            tracing::warn!("ignoring unreadable folder rules {json:?}: {e}");
            SourceRules::default()
        })
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".into())
    }

    /// Compiles the rules for the folder at `root`.
    pub fn compile(&self, root: &Path) -> Result<RuleMatcher> {
        let mut builder = OverrideBuilder::new(root);
        let bad = |p: &str, e: ignore::Error| {
            EngineError::InvalidInput(format!("bad folder rule {p:?}: {e}"))
        };
        for p in &self.include {
            builder.add(p).map_err(|e| bad(p, e))?;
        }
        for p in &self.exclude {
            builder.add(&format!("!{p}")).map_err(|e| bad(p, e))?;
        }
        let overrides = builder.build().map_err(|e| bad("", e))?;
        Ok(RuleMatcher {
            root: root.to_path_buf(),
            overrides,
            max_file_bytes: self.max_file_bytes,
        })
    }
}

/// Compiled [`SourceRules`] for one folder.
#[derive(Debug, Clone)]
pub struct RuleMatcher {
    root: PathBuf,
    overrides: Override,
    max_file_bytes: Option<u64>,
}

impl RuleMatcher {
    /// The folder the rules belong to.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn max_file_bytes(&self) -> Option<u64> {
        self.max_file_bytes
    }

    /// Whether `path` (inside the folder) may be a document, by name and location alone:
    /// skip list, include/exclude globs, and every `.knowhubignore` between the folder and it.
    pub fn admits(&self, fs: &dyn Fs, path: &Path, is_dir: bool) -> bool {
        let Ok(rel) = path.strip_prefix(&self.root) else {
            return false;
        };
        if rel
            .components()
            .any(|c| skip_name(&c.as_os_str().to_string_lossy()))
        {
            return false;
        }
        if !self.globs_admit(rel, is_dir) {
            return false;
        }
        !ignored_by_files(fs, &self.root, rel, is_dir)
    }

    /// Walks the folder and returns the files the rules admit (unreadable entries reported).
    pub fn walk(&self, fs: &dyn Fs) -> Vec<std::io::Result<PathBuf>> {
        fs.walk(&self.root)
            .into_iter()
            .filter(|entry| match entry {
                Ok(p) => self.admits_walked(p),
                Err(_) => true,
            })
            .collect()
    }

    /// The walk already applied the skip list and `.knowhubignore`: only the globs remain.
    fn admits_walked(&self, path: &Path) -> bool {
        path.strip_prefix(&self.root)
            .is_ok_and(|rel| self.globs_admit(rel, false))
    }

    /// Include/exclude globs: no folder on the way may be excluded; a file must be included
    /// when include globs exist (folders are never "not included": include globs name files).
    fn globs_admit(&self, rel: &Path, is_dir: bool) -> bool {
        let mut dir = self.root.clone();
        let parents: Vec<_> = rel
            .parent()
            .into_iter()
            .flat_map(|p| p.components())
            .collect();
        for c in parents {
            dir.push(c);
            if self.overrides.matched(&dir, true).is_ignore() {
                return false;
            }
        }
        match self.overrides.matched(self.root.join(rel), is_dir) {
            Match::Ignore(_) => false,
            Match::None => is_dir || !self.has_includes(),
            Match::Whitelist(_) => true,
        }
    }

    fn has_includes(&self) -> bool {
        self.overrides.num_whitelists() > 0
    }
}

/// Whether a `.knowhubignore` in the folder or any folder between it and `rel` ignores `rel`.
fn ignored_by_files(fs: &dyn Fs, root: &Path, rel: &Path, is_dir: bool) -> bool {
    let mut dir = root.to_path_buf();
    let mut dirs = vec![dir.clone()];
    if let Some(parent) = rel.parent() {
        for c in parent.components() {
            dir.push(c);
            dirs.push(dir.clone());
        }
    }
    let full = root.join(rel);
    for d in dirs {
        let Ok(bytes) = fs.read(&d.join(IGNORE_FILE)) else {
            continue;
        };
        let mut builder = GitignoreBuilder::new(&d);
        for line in String::from_utf8_lossy(&bytes).lines() {
            let _ = builder.add_line(None, line);
        }
        let Ok(gi): std::result::Result<Gitignore, _> = builder.build() else {
            continue;
        };
        if gi.matched_path_or_any_parents(&full, is_dir).is_ignore() {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::FakeFs;

    fn rules(include: &[&str], exclude: &[&str]) -> SourceRules {
        SourceRules {
            include: include.iter().map(|s| s.to_string()).collect(),
            exclude: exclude.iter().map(|s| s.to_string()).collect(),
            max_file_bytes: None,
        }
    }

    #[test]
    fn single_paths_get_the_same_answer_as_the_walk() {
        let fs = FakeFs::new();
        let root = Path::new("/r");
        for f in [
            "/r/a.md",
            "/r/b.pdf",
            "/r/.hidden.md",
            "/r/~$lock.docx",
            "/r/drafts/c.md",
            "/r/sub/d.md",
            "/r/sub/old/e.md",
            "/r/sub/keep.log.md",
            "/r/build.tmp",
        ] {
            fs.write(f, "x");
        }
        fs.write("/r/.knowhubignore", "drafts/\n");
        fs.write("/r/sub/.knowhubignore", "old/\n*.log.md\n");
        // (include, exclude) → admitted files
        let table: &[(&[&str], &[&str], &[&str])] = &[
            (&[], &[], &["/r/a.md", "/r/b.pdf", "/r/sub/d.md"]),
            (&["*.md"], &[], &["/r/a.md", "/r/sub/d.md"]),
            (&[], &["*.pdf"], &["/r/a.md", "/r/sub/d.md"]),
            (&[], &["sub/"], &["/r/a.md", "/r/b.pdf"]),
        ];
        for (include, exclude, want) in table {
            let m = rules(include, exclude).compile(root).unwrap();
            let walked: Vec<PathBuf> = m
                .walk(&fs)
                .into_iter()
                .map(|p| p.unwrap())
                .filter(|p| p.file_name().is_some_and(|n| n != IGNORE_FILE))
                .collect();
            let want: Vec<PathBuf> = want.iter().map(PathBuf::from).collect();
            let mut one_by_one: Vec<PathBuf> = fs
                .walk(Path::new("/"))
                .into_iter()
                .map(|p| p.unwrap())
                .chain(
                    [
                        "/r/.hidden.md",
                        "/r/~$lock.docx",
                        "/r/drafts/c.md",
                        "/r/sub/old/e.md",
                        "/r/sub/keep.log.md",
                        "/r/build.tmp",
                    ]
                    .map(PathBuf::from),
                )
                .filter(|p| m.admits(&fs, p, false))
                .collect();
            one_by_one.sort();
            one_by_one.dedup();
            assert_eq!(one_by_one, want, "admits {include:?} {exclude:?}");
            // The fake walk does not read .knowhubignore; compare on what it can know.
            for p in &want {
                assert!(
                    walked.contains(p),
                    "walk {include:?} {exclude:?} lost {p:?}"
                );
            }
        }
    }

    #[test]
    fn outside_the_folder_is_never_admitted_and_bad_globs_are_errors() {
        let fs = FakeFs::new();
        let m = SourceRules::default().compile(Path::new("/r")).unwrap();
        assert!(!m.admits(&fs, Path::new("/elsewhere/a.md"), false));
        assert!(m.admits(&fs, Path::new("/r/a.md"), false));
        assert!(rules(&["a[.md"], &[]).compile(Path::new("/r")).is_err());
        assert_eq!(SourceRules::from_json("not json"), SourceRules::default());
        let r = rules(&["*.md"], &["x/"]);
        assert_eq!(SourceRules::from_json(&r.to_json()), r);
    }
}
