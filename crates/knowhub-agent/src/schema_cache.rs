//! The schemas of the databases the SQL tool reads, kept while their files are unchanged.
//! Reading one samples every column (bounded at 10 s for a large database), and the route
//! asks the template path about every question where data exists: without the cache, a
//! document question would pay for it each time.
//!
//! The cache holds whole schemas; what a caller may see is cut from a copy on every request
//! (`sql_tool::targets`), so it never carries one caller's view to another.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use knowhub_sql::Schema;

/// Length and modification time of a database file and of its write-ahead log: a write that
/// SQLite has not yet checkpointed changes only the log.
type Stamp = [(u64, Option<SystemTime>); 2];

/// Database schemas by file, each kept while the file (and its write-ahead log) is unchanged.
#[derive(Debug, Default)]
pub struct SchemaCache {
    entries: Mutex<HashMap<(PathBuf, usize), (Stamp, Schema)>>,
}

impl SchemaCache {
    /// The schema of the database at `path` with `samples` sample values per column, read
    /// again only when the file or its log changed since it was last read.
    pub fn get(&self, path: &Path, samples: usize) -> knowhub_sql::Result<Schema> {
        let key = (path.to_path_buf(), samples);
        let before = stamp(path);
        if let Some(before) = before
            && let Ok(entries) = self.entries.lock()
            && let Some((stamp, schema)) = entries.get(&key)
            && *stamp == before
        {
            return Ok(schema.clone());
        }
        let schema = knowhub_sql::introspect(path, samples)?;
        // Kept only when nothing changed while it was read.
        if let Some(before) = before
            && stamp(path) == Some(before)
            && let Ok(mut entries) = self.entries.lock()
        {
            entries.insert(key, (before, schema.clone()));
        }
        Ok(schema)
    }
}

fn stamp(path: &Path) -> Option<Stamp> {
    let file = |p: &Path| {
        std::fs::metadata(p)
            .ok()
            .map(|m| (m.len(), m.modified().ok()))
    };
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    Some([file(path)?, file(Path::new(&wal)).unwrap_or((0, None))])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_database_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.sqlite");
        let db = rusqlite::Connection::open(&path).unwrap();
        db.execute_batch("CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (1);")
            .unwrap();
        let cache = SchemaCache::default();
        let names = |s: &Schema| s.tables.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
        let first = cache.get(&path, 3).unwrap();
        assert_eq!(names(&first), ["a"]);
        assert_eq!(cache.get(&path, 3).ok(), Some(first));
        db.execute_batch("CREATE TABLE b (y TEXT);").unwrap();
        let second = cache.get(&path, 3).unwrap();
        assert_eq!(names(&second), ["a", "b"]);
        assert!(cache.get(&dir.path().join("missing.sqlite"), 3).is_err());
    }
}
