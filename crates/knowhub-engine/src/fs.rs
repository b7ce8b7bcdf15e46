//! The file system as the engine sees it, behind a trait so tests can use an in-memory fake.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::UNIX_EPOCH;

/// What the engine needs to know about a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMeta {
    pub size: u64,
    /// Modification time in nanoseconds since the epoch, when the platform has one.
    pub mtime_ns: Option<i64>,
    pub is_dir: bool,
}

/// File-system access used by ingestion.
pub trait Fs: Send + Sync + std::fmt::Debug {
    fn metadata(&self, path: &Path) -> io::Result<FileMeta>;
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Makes a path absolute and resolves symlinks and `..`.
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;
    /// Every ingestible file below `root` (recursively), skipping what [`skip_name`] rejects and
    /// anything listed in `.knowhubignore` files. Unreadable entries are reported, not fatal.
    fn walk(&self, root: &Path) -> Vec<io::Result<PathBuf>>;
}

/// Names that are never documents: hidden files, editor temp and lock files, build output.
pub fn skip_name(name: &str) -> bool {
    const DIRS: &[&str] = &[
        "node_modules",
        "target",
        "__pycache__",
        "$RECYCLE.BIN",
        "System Volume Information",
    ];
    name.starts_with('.')
        || name.starts_with("~$")
        || name.starts_with(".~lock")
        || name.ends_with('~')
        || name.ends_with(".tmp")
        || name.ends_with(".swp")
        || name.ends_with(".part")
        || name.ends_with(".crdownload")
        || DIRS.contains(&name)
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

impl Fs for RealFs {
    fn metadata(&self, path: &Path) -> io::Result<FileMeta> {
        let m = std::fs::metadata(path)?;
        let mtime_ns = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as i64);
        Ok(FileMeta {
            size: m.len(),
            mtime_ns,
            is_dir: m.is_dir(),
        })
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }

    fn walk(&self, root: &Path) -> Vec<io::Result<PathBuf>> {
        let walker = ignore::WalkBuilder::new(root)
            .hidden(false) // skip_name below decides, the same way for files added one by one
            .git_ignore(false)
            .git_global(false)
            .git_exclude(false)
            .ignore(false)
            .parents(false)
            .follow_links(true) // with loop detection: a symlink cycle is reported, not followed
            .add_custom_ignore_filename(".knowhubignore")
            .filter_entry(|e| e.depth() == 0 || !skip_name(&e.file_name().to_string_lossy()))
            .sort_by_file_path(|a, b| a.cmp(b))
            .build();
        let mut out = Vec::new();
        for entry in walker {
            match entry {
                Ok(e) if e.file_type().is_some_and(|t| t.is_file()) => out.push(Ok(e.into_path())),
                Ok(_) => {}
                Err(e) => out.push(Err(io::Error::other(e.to_string()))),
            }
        }
        out
    }
}

/// An in-memory file system for tests.
#[derive(Debug, Default, Clone)]
pub struct FakeFs {
    files: Arc<Mutex<FakeFiles>>,
    /// Paths whose reads fail with "permission denied" (a locked or unreadable file).
    unreadable: Arc<Mutex<std::collections::BTreeSet<PathBuf>>>,
}

/// Path → (content, mtime).
type FakeFiles = BTreeMap<PathBuf, (Vec<u8>, i64)>;

impl FakeFs {
    pub fn new() -> FakeFs {
        FakeFs::default()
    }

    /// Creates or replaces a file; its mtime advances on every write.
    pub fn write(&self, path: impl Into<PathBuf>, bytes: impl Into<Vec<u8>>) {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        let next = files.values().map(|(_, m)| *m).max().unwrap_or(0) + 1;
        files.insert(path.into(), (bytes.into(), next));
    }

    pub fn remove(&self, path: &Path) {
        self.files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(path);
    }

    /// Moves a file, keeping its content and mtime (what `rename` does).
    pub fn rename(&self, from: &Path, to: impl Into<PathBuf>) {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = files.remove(from) {
            files.insert(to.into(), entry);
        }
    }

    /// Makes reads of `path` fail with "permission denied" (or succeed again).
    pub fn set_unreadable(&self, path: impl Into<PathBuf>, unreadable: bool) {
        let mut set = self.unreadable.lock().unwrap_or_else(|p| p.into_inner());
        let path = path.into();
        if unreadable {
            set.insert(path);
        } else {
            set.remove(&path);
        }
    }
}

impl Fs for FakeFs {
    fn metadata(&self, path: &Path) -> io::Result<FileMeta> {
        let files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((bytes, mtime)) = files.get(path) {
            return Ok(FileMeta {
                size: bytes.len() as u64,
                mtime_ns: Some(*mtime),
                is_dir: false,
            });
        }
        if files.keys().any(|p| p.starts_with(path)) {
            return Ok(FileMeta {
                size: 0,
                mtime_ns: None,
                is_dir: true,
            });
        }
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{}: not found", path.display()),
        ))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        if self
            .unreadable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(path)
        {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{}: permission denied", path.display()),
            ));
        }
        let files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        files.get(path).map(|(b, _)| b.clone()).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("{}: not found", path.display()),
            )
        })
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.metadata(path).map(|_| path.to_path_buf())
    }

    fn walk(&self, root: &Path) -> Vec<io::Result<PathBuf>> {
        let files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        files
            .keys()
            .filter(|p| p.starts_with(root))
            .filter(|p| {
                p.strip_prefix(root)
                    .map(|rel| {
                        !rel.components()
                            .any(|c| skip_name(&c.as_os_str().to_string_lossy()))
                    })
                    .unwrap_or(false)
            })
            .cloned()
            .map(Ok)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_rules() {
        for (name, skip) in [
            ("report.docx", false),
            ("~$report.docx", true),
            (".~lock.report.odt#", true),
            (".git", true),
            ("notes.md~", true),
            ("node_modules", true),
            ("数据.xlsx", false),
        ] {
            assert_eq!(skip_name(name), skip, "{name}");
        }
    }

    #[test]
    fn real_walk_honours_knowhubignore_and_skips_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("sub/.git")).unwrap();
        std::fs::create_dir_all(root.join("drafts")).unwrap();
        for f in [
            "a.md",
            "sub/b.txt",
            "sub/~$b.docx",
            "sub/.git/config",
            "drafts/c.md",
        ] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        std::fs::write(root.join(".knowhubignore"), "drafts/\n").unwrap();
        let got: Vec<_> = RealFs
            .walk(root)
            .into_iter()
            .map(|p| {
                p.unwrap()
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(got, vec!["a.md", "sub/b.txt"]);
    }
}
