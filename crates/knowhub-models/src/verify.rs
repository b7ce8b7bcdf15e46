//! Streaming SHA-256 and the installed state of each model (`status`, `verify`, `require`).

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{ModelsError, Result};
use crate::manifest::{Manifest, ModelEntry, ModelFile, Role};

/// Lower-case hex of a digest.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// SHA-256 of everything `reader` yields, in 1 MiB chunks (never the whole input in memory).
pub fn sha256_reader(mut reader: impl Read) -> std::io::Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        total += n as u64;
    }
    Ok((hex(&hasher.finalize()), total))
}

/// SHA-256 of a file, streamed.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    Ok(sha256_reader(File::open(path)?)?.0)
}

/// A writer that hashes what passes through it.
#[derive(Debug)]
pub(crate) struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    pub(crate) written: u64,
}

impl<W: Write> HashingWriter<W> {
    pub(crate) fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hasher: Sha256::new(),
            written: 0,
        }
    }

    pub(crate) fn finish(self) -> (W, String) {
        (self.inner, hex(&self.hasher.finalize()))
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// How thoroughly to check installed files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// Existence and size only (instant; what loaders use at start-up).
    Quick,
    /// Full streamed SHA-256 (about a second per GB).
    Full,
}

/// State of one installed file or model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Present and matching the manifest.
    Ok,
    /// Not there.
    Missing,
    /// There, but with the wrong size or checksum.
    Corrupt,
}

/// One file of a model, checked.
#[derive(Debug, Clone, Serialize)]
pub struct FileStatus {
    pub dest: String,
    pub path: PathBuf,
    pub state: State,
    pub expected_sha256: String,
    /// Computed checksum when hashed and different from the expected one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual_sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// One model, checked.
#[derive(Debug, Clone, Serialize)]
pub struct ModelStatus {
    pub name: String,
    pub role: Role,
    pub default: bool,
    pub state: State,
    pub dir: PathBuf,
    pub files: Vec<FileStatus>,
}

impl ModelStatus {
    /// The hint a loader shows when this model cannot be used, if any.
    pub fn hint(&self) -> Option<String> {
        (self.state != State::Ok).then(|| missing_message(&self.name))
    }
}

/// "model X is missing (or corrupt): run `knowhub models fetch X`".
pub fn missing_message(name: &str) -> String {
    ModelsError::NotInstalled {
        name: name.to_owned(),
    }
    .to_string()
}

/// `models/<name>/`.
pub fn model_dir(models_dir: &Path, model: &ModelEntry) -> PathBuf {
    models_dir.join(&model.name)
}

/// Checks one installed file against the manifest.
pub fn check_file(
    models_dir: &Path,
    model: &ModelEntry,
    file: &ModelFile,
    depth: Depth,
) -> FileStatus {
    let path = model_dir(models_dir, model).join(&file.dest);
    let mut status = FileStatus {
        dest: file.dest.clone(),
        path: path.clone(),
        state: State::Missing,
        expected_sha256: file.sha256.clone(),
        actual_sha256: None,
        size: None,
    };
    let Ok(meta) = std::fs::metadata(&path) else {
        return status;
    };
    if !meta.is_file() {
        status.state = State::Corrupt;
        return status;
    }
    status.size = Some(meta.len());
    if file.size.is_some_and(|s| s != meta.len()) {
        status.state = State::Corrupt;
        return status;
    }
    if depth == Depth::Quick {
        status.state = State::Ok;
        return status;
    }
    match sha256_file(&path) {
        Ok(actual) if actual == file.sha256 => status.state = State::Ok,
        Ok(actual) => {
            status.state = State::Corrupt;
            status.actual_sha256 = Some(actual);
        }
        Err(_) => status.state = State::Corrupt,
    }
    status
}

/// Checks every file of one model.
pub fn check_model(models_dir: &Path, model: &ModelEntry, depth: Depth) -> ModelStatus {
    let files: Vec<FileStatus> = model
        .files
        .iter()
        .map(|f| check_file(models_dir, model, f, depth))
        .collect();
    let state = if files.iter().any(|f| f.state == State::Corrupt) {
        State::Corrupt
    } else if files.iter().any(|f| f.state == State::Missing) {
        State::Missing
    } else {
        State::Ok
    };
    ModelStatus {
        name: model.name.clone(),
        role: model.role,
        default: model.default,
        state,
        dir: model_dir(models_dir, model),
        files,
    }
}

/// Every manifest entry's state (size checks only with [`Depth::Quick`]).
pub fn status(manifest: &Manifest, models_dir: &Path, depth: Depth) -> Vec<ModelStatus> {
    manifest
        .models
        .iter()
        .map(|m| check_model(models_dir, m, depth))
        .collect()
}

/// Every manifest entry's state, with full checksums.
pub fn verify(manifest: &Manifest, models_dir: &Path) -> Vec<ModelStatus> {
    status(manifest, models_dir, Depth::Full)
}

/// For loaders: the model's folder if it is installed, else [`ModelsError::NotInstalled`]
/// (whose message tells the user which `knowhub models fetch` to run).
pub fn require(
    manifest: &Manifest,
    models_dir: &Path,
    name: &str,
    depth: Depth,
) -> Result<PathBuf> {
    let model = manifest.get(name)?;
    let st = check_model(models_dir, model, depth);
    if st.state == State::Ok {
        Ok(st.dir)
    } else {
        Err(ModelsError::NotInstalled {
            name: name.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY_SHA: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    const ABC_SHA: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    #[test]
    fn known_digests() {
        assert_eq!(sha256_reader(&b""[..]).expect("hash").0, EMPTY_SHA);
        assert_eq!(
            sha256_reader(&b"abc"[..]).expect("hash"),
            (ABC_SHA.to_owned(), 3)
        );
        let mut w = HashingWriter::new(Vec::new());
        w.write_all(b"a").expect("write");
        w.write_all(b"bc").expect("write");
        let (out, sha) = w.finish();
        assert_eq!((out.as_slice(), sha.as_str()), (&b"abc"[..], ABC_SHA));
    }

    #[test]
    fn streams_inputs_larger_than_the_buffer() {
        // 3.5 MiB of a repeating pattern, hashed through the 1 MiB buffer and in one go.
        let data: Vec<u8> = (0..(7 << 19)).map(|i: u32| (i % 251) as u8).collect();
        let (streamed, n) = sha256_reader(std::io::Cursor::new(&data)).expect("hash");
        assert_eq!(n, data.len() as u64);
        assert_eq!(streamed, hex(&Sha256::digest(&data)));
    }

    fn manifest_for(sha: &str, size: Option<u64>) -> Manifest {
        let size = size.map(|s| format!("size = {s}\n")).unwrap_or_default();
        Manifest::parse(&format!(
            r#"
[[model]]
name = "m"
role = "llm"
combine = "single"
[[model.file]]
dest = "w.bin"
sha256 = "{sha}"
{size}parts = [{{ package = "p", version = "1", member = "w.bin" }}]
"#
        ))
        .expect("manifest")
    }

    #[test]
    fn states_missing_ok_corrupt() {
        let dir = tempfile::tempdir().expect("tempdir");
        let m = manifest_for(ABC_SHA, Some(3));
        let st = &verify(&m, dir.path())[0];
        assert_eq!(st.state, State::Missing);
        assert_eq!(
            st.hint().as_deref(),
            Some("model m is missing (or corrupt): run `knowhub models fetch m`")
        );
        let e = require(&m, dir.path(), "m", Depth::Quick).expect_err("missing");
        assert_eq!(e.to_string(), missing_message("m"));

        std::fs::create_dir_all(dir.path().join("m")).expect("mkdir");
        std::fs::write(dir.path().join("m/w.bin"), b"abc").expect("write");
        assert_eq!(verify(&m, dir.path())[0].state, State::Ok);
        assert_eq!(
            require(&m, dir.path(), "m", Depth::Full).expect("ok"),
            dir.path().join("m")
        );

        std::fs::write(dir.path().join("m/w.bin"), b"abd").expect("write");
        // Same size: only the full check sees it.
        assert_eq!(status(&m, dir.path(), Depth::Quick)[0].state, State::Ok);
        let st = &verify(&m, dir.path())[0];
        assert_eq!(st.state, State::Corrupt);
        assert_eq!(
            st.files[0].actual_sha256.as_deref(),
            Some(hex(&Sha256::digest(b"abd")).as_str())
        );

        std::fs::write(dir.path().join("m/w.bin"), b"abcd").expect("write");
        assert_eq!(
            status(&m, dir.path(), Depth::Quick)[0].state,
            State::Corrupt
        );
    }
}
