//! `POST /api/v1/uploads`: files sent to the server as `multipart/form-data`, streamed from
//! disk (never a whole file in memory), into one of the caller's upload destinations.

use std::fs::File;
use std::io::{Cursor, Read};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;

use crate::{Client, ClientError, Result};

/// How long the server may take to answer an upload: it parses the files (OCR included)
/// before it answers.
const UPLOAD_ANSWER_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// A file to send: the name it gets on the server and where it is read from here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadFile {
    /// A plain file name (the server refuses path separators, `..` and control characters).
    pub name: String,
    pub path: PathBuf,
}

impl UploadFile {
    /// The files `paths` name: each file itself, and a folder's files below it (hidden files
    /// and folders left out, sorted by path). The server keeps file names, not folders.
    pub fn expand(paths: &[PathBuf]) -> Result<Vec<UploadFile>> {
        let mut files = Vec::new();
        for path in paths {
            let meta = std::fs::metadata(path).map_err(|source| ClientError::Read {
                path: path.clone(),
                source,
            })?;
            if meta.is_dir() {
                let mut found: Vec<PathBuf> = walkdir::WalkDir::new(path)
                    .into_iter()
                    .filter_entry(|e| {
                        e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.')
                    })
                    .filter_map(|e| e.ok())
                    .filter(|e| e.file_type().is_file())
                    .map(|e| e.into_path())
                    .collect();
                found.sort();
                files.extend(found);
            } else {
                files.push(path.clone());
            }
        }
        Ok(files
            .into_iter()
            .map(|path| UploadFile {
                name: path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                path,
            })
            .collect())
    }

    /// `files` in requests of at most [`UPLOAD_BATCH`] files and [`UPLOAD_BATCH_BYTES`] bytes
    /// (a larger file alone), so a folder of large files is not refused as one request.
    pub fn batches(files: Vec<UploadFile>) -> Result<Vec<Vec<UploadFile>>> {
        let mut batches: Vec<Vec<UploadFile>> = Vec::new();
        let mut batch_bytes = 0u64;
        for file in files {
            let size = std::fs::metadata(&file.path)
                .map_err(|source| ClientError::Read {
                    path: file.path.clone(),
                    source,
                })?
                .len();
            let full = batches.last().is_none_or(|b| {
                b.len() >= UPLOAD_BATCH
                    || (!b.is_empty() && batch_bytes.saturating_add(size) > UPLOAD_BATCH_BYTES)
            });
            if full {
                batches.push(Vec::new());
                batch_bytes = 0;
            }
            batch_bytes += size;
            if let Some(batch) = batches.last_mut() {
                batch.push(file);
            }
        }
        Ok(batches)
    }
}

/// Files sent at most per request by [`UploadFile::batches`].
pub const UPLOAD_BATCH: usize = 50;
/// Bytes sent per request at most by [`UploadFile::batches`]: well under the server's default
/// request limit (500 MB).
pub const UPLOAD_BATCH_BYTES: u64 = 200 * 1024 * 1024;

/// One file's outcome: `added`, `updated`, `unchanged`, `moved`, `no_text`, `failed`,
/// `skipped`, `busy` or `queued`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct UploadedFile {
    pub name: String,
    /// Where the server stored it.
    pub path: String,
    pub outcome: String,
    #[serde(default)]
    pub document_id: Option<i64>,
    /// Why it failed, has no text, was skipped or is queued.
    #[serde(default)]
    pub error: Option<String>,
}

/// The server's answer to an upload, file by file in the order sent.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct UploadReport {
    pub files: Vec<UploadedFile>,
    pub queued: usize,
}

/// A place the caller may upload files to (`kind`: `uploads`, `collection` or `watched`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct UploadDestination {
    pub kind: String,
    /// The collection's or folder's name (empty for the uploads folder).
    pub name: String,
    /// What to pass as [`Client::upload`]'s `destination`.
    pub path: String,
}

impl Client {
    /// Where the caller may upload files: their uploads folder first, then its collections,
    /// then the watched folders they may write to.
    pub fn upload_destinations(&self) -> Result<Vec<UploadDestination>> {
        let response = self.send("GET", "/api/v1/uploads", None)?;
        self.json(response)
    }

    /// Sends `files` into `destination` (the path of one of the caller's upload destinations,
    /// or a collection's name; default: the caller's uploads folder). The server parses them
    /// before it answers; a file over its size limits refuses the whole request (HTTP 413),
    /// and nothing is stored.
    pub fn upload(&self, files: &[UploadFile], destination: Option<&str>) -> Result<UploadReport> {
        let boundary = boundary();
        let mut body = Multipart::default();
        if let Some(destination) = destination {
            body.text(format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"destination\"\r\n\r\n\
                 {destination}\r\n"
            ));
        }
        for f in files {
            let read_error = |source| ClientError::Read {
                path: f.path.clone(),
                source,
            };
            let file = File::open(&f.path).map_err(read_error)?;
            let size = file.metadata().map_err(read_error)?.len();
            body.text(format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; \
                 filename=\"{}\"\r\nContent-Type: application/octet-stream\r\n\r\n",
                quoted(&f.name)
            ));
            body.length += size;
            body.parts.push(Box::new(file.take(size)));
            body.text("\r\n".into());
        }
        body.text(format!("--{boundary}--\r\n"));
        let length = body.length;
        let body = body.parts.into_iter().fold(
            Box::new(std::io::empty()) as Box<dyn Read + Send>,
            |all, part| Box::new(all.chain(part)),
        );
        let request = ureq::http::Request::builder()
            .method("POST")
            .uri(format!("{}/api/v1/uploads", self.base))
            .header("x-api-key", &self.api_key)
            .header("accept", "application/json")
            .header(
                "content-type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .header("content-length", length.to_string())
            .body(ureq::SendBody::from_owned_reader(body))
            .map_err(|e| ClientError::Address(format!("{}/api/v1/uploads: {e}", self.base)))?;
        let request = self
            .agent
            .configure_request(request)
            .timeout_recv_response(Some(UPLOAD_ANSWER_TIMEOUT))
            .build();
        let response = self.agent.run(request).map_err(|e| self.transport(e))?;
        self.json(response)
    }
}

/// A request body as the readers of its parts, and its length.
#[derive(Default)]
struct Multipart {
    parts: Vec<Box<dyn Read + Send>>,
    length: u64,
}

impl Multipart {
    fn text(&mut self, text: String) {
        self.length += text.len() as u64;
        self.parts.push(Box::new(Cursor::new(text.into_bytes())));
    }
}

/// A boundary no file is likely to hold: the time and process, hex.
fn boundary() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("knowhub-{nanos:x}-{:x}", std::process::id())
}

/// A file name inside a quoted header parameter: quotes and line breaks escaped as the HTML
/// form encoding does (`%22`, `%0D`, `%0A`).
fn quoted(name: &str) -> String {
    name.replace('"', "%22")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}
