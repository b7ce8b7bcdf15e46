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

impl Client {
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
