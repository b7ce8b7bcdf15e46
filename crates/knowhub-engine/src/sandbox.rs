//! Running parsers with time and memory bounds.
//!
//! Hostile documents can make any parser loop, allocate without bound, or overflow the stack
//! (which aborts a process and cannot be caught). So by default parsing happens in a
//! long-lived worker *process* (the `knowhub` binary re-executed with `parse-worker`): it
//! limits its own address space, answers one request at a time over stdin/stdout, and is
//! killed and replaced when it misses a deadline or dies. One bad file costs one restart; it
//! never takes the application down and never stops a batch.
//!
//! The in-process backend (a thread with `catch_unwind` and a deadline) exists for tests and
//! for embedders that cannot spawn processes; a file that hangs there leaks its thread.

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, bounded};
use knowhub_parse::{DocKind, Limits, ParseError, ParsedDocument};
use serde::{Deserialize, Serialize};

/// How parsers are run.
#[derive(Debug, Clone)]
pub enum ParserBackend {
    /// In a thread of this process (tests, embedding).
    InProcess,
    /// In worker processes started as `program args…`.
    Worker { program: PathBuf, args: Vec<String> },
}

/// Bounds applied to every parse.
#[derive(Debug, Clone)]
pub struct SandboxLimits {
    pub timeout: Duration,
    /// Address-space limit of a worker process, in bytes (Unix only).
    pub memory_bytes: u64,
    pub parse: Limits,
}

impl Default for SandboxLimits {
    fn default() -> SandboxLimits {
        SandboxLimits {
            timeout: Duration::from_secs(60),
            memory_bytes: 4 << 30,
            parse: Limits::default(),
        }
    }
}

/// Why a sandboxed parse produced no document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum SandboxError {
    #[error("{0}")]
    Parse(ParseErrorWire),
    #[error("timed out after {0} s")]
    Timeout(u64),
    #[error("the parser crashed ({0})")]
    Crashed(String),
    #[error("cannot read the file: {0}")]
    Io(String),
}

impl SandboxError {
    /// Short code stored with failed documents.
    pub fn code(&self) -> &str {
        match self {
            SandboxError::Parse(p) => &p.code,
            SandboxError::Timeout(_) => "timeout",
            SandboxError::Crashed(_) => "crashed",
            SandboxError::Io(_) => "io",
        }
    }
}

/// A [`ParseError`] as it crosses the process boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseErrorWire {
    pub code: String,
    pub message: String,
}

impl std::fmt::Display for ParseErrorWire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<ParseError> for ParseErrorWire {
    fn from(e: ParseError) -> ParseErrorWire {
        ParseErrorWire {
            code: e.code().to_string(),
            message: e.to_string(),
        }
    }
}

/// Sent as a JSON frame followed by a frame with the file's raw bytes.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Request {
    kind: DocKind,
    limits: Limits,
    /// Set: read these pages with OCR instead of parsing.
    #[serde(default)]
    ocr: Option<OcrRequest>,
}

/// Pages of a picture or a scanned PDF to read with the OCR model in `model`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct OcrRequest {
    model: PathBuf,
    pages: Vec<u32>,
}

/// Time OCR may take per page, on top of the parse deadline: a page takes a few seconds on
/// two cores; a long scan must finish, a stuck one must not hold its worker for ever.
const OCR_SECONDS_PER_PAGE: u64 = 30;

/// Pages read by OCR per worker request: progress is told between requests, and a request
/// that fails (a page that hangs the reader) costs only its own pages.
pub(crate) const OCR_BATCH: usize = 8;

type Response = Result<ParsedDocument, SandboxError>;

/// Frames start with a marker so stray bytes a library prints to stdout are skipped, not
/// misread as a length.
const MAGIC: &[u8; 4] = b"KHW1";

pub(crate) fn write_frame(out: &mut impl Write, payload: &[u8]) -> std::io::Result<()> {
    out.write_all(MAGIC)?;
    out.write_all(&(payload.len() as u64).to_le_bytes())?;
    out.write_all(payload)?;
    out.flush()
}

fn read_frame(input: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut matched = 0;
    let mut byte = [0u8; 1];
    while matched < MAGIC.len() {
        input.read_exact(&mut byte)?;
        if byte[0] == MAGIC[matched] {
            matched += 1;
        } else {
            matched = usize::from(byte[0] == MAGIC[0]);
        }
    }
    let mut len = [0u8; 8];
    input.read_exact(&mut len)?;
    let len = u64::from_le_bytes(len);
    if len > 4 << 30 {
        return Err(std::io::Error::other("frame too large"));
    }
    let mut payload = vec![0u8; len as usize];
    input.read_exact(&mut payload)?;
    Ok(payload)
}

/// Serves one request in this thread (parse, or OCR of some pages), turning panics into
/// errors. A mail's attachments come back apart: the engine stores them as documents of their
/// own.
fn parse_here(bytes: &[u8], request: &Request) -> Response {
    let serve = || -> Response {
        match &request.ocr {
            None => knowhub_parse::parse_attachments_apart(request.kind, bytes, &request.limits)
                .map_err(|e| SandboxError::Parse(e.into())),
            Some(ocr) => {
                crate::ocr::read_pages(request.kind, bytes, &request.limits, &ocr.model, &ocr.pages)
            }
        }
    };
    match std::panic::catch_unwind(serve) {
        Ok(response) => response,
        Err(panic) => Err(SandboxError::Crashed(panic_message(&panic))),
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    let msg = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_string());
    format!("internal error: {}", msg.lines().next().unwrap_or_default())
}

/// The worker process's main loop: call from the binary's `parse-worker` entry point.
///
/// Limits its own address space first, then serves requests until stdin closes.
pub fn run_worker(memory_bytes: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    if memory_bytes > 0 {
        // Best effort: if the limit cannot be set the worker still isolates crashes and hangs.
        let _ = rlimit::setrlimit(rlimit::Resource::AS, memory_bytes, memory_bytes);
    }
    #[cfg(not(unix))]
    let _ = memory_bytes;
    // Panics are turned into responses; keep their default stderr report out of the way.
    std::panic::set_hook(Box::new(|_| {}));
    let mut input = BufReader::new(std::io::stdin().lock());
    let mut output = BufWriter::new(std::io::stdout().lock());
    loop {
        let frame = match read_frame(&mut input) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        };
        let bytes = read_frame(&mut input)?;
        let response: Response = match serde_json::from_slice::<Request>(&frame) {
            Ok(req) => parse_here(&bytes, &req),
            Err(e) => Err(SandboxError::Crashed(format!("bad request: {e}"))),
        };
        let payload = serde_json::to_vec(&response).map_err(std::io::Error::other)?;
        write_frame(&mut output, &payload)?;
    }
}

/// One parser slot: owns (at most) one worker process and restarts it as needed.
#[derive(Debug)]
pub(crate) struct Parser {
    backend: ParserBackend,
    limits: SandboxLimits,
    ocr: Option<PathBuf>,
    worker: Option<Worker>,
}

#[derive(Debug)]
struct Worker {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    responses: Receiver<std::io::Result<Vec<u8>>>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Parser {
    pub(crate) fn new(backend: ParserBackend, limits: SandboxLimits) -> Parser {
        Parser {
            backend,
            limits,
            ocr: None,
            worker: None,
        }
    }

    /// Images are read with the OCR model in `dir` (else they keep a "no text" notice).
    pub(crate) fn with_ocr(mut self, dir: Option<PathBuf>) -> Parser {
        self.ocr = dir;
        self
    }

    /// Parses a file's bytes as `kind` within the bounds (see [`Parser::parse_reporting`]).
    #[cfg(test)]
    pub(crate) fn parse(&mut self, bytes: &Arc<Vec<u8>>, kind: DocKind) -> Response {
        self.parse_reporting(bytes, kind, &mut |_, _| {})
    }

    /// Parses a file's bytes as `kind` within the bounds; then, with an OCR model, reads the
    /// pages that have no text (a picture, a scanned PDF's pages) in further requests of
    /// [`OCR_BATCH`] pages, each with a deadline for its pages, telling `progress` (pages
    /// read, pages to read) after each. A batch that fails costs its pages only.
    pub(crate) fn parse_reporting(
        &mut self,
        bytes: &Arc<Vec<u8>>,
        kind: DocKind,
        progress: &mut dyn FnMut(u32, u32),
    ) -> Response {
        let request = Request {
            kind,
            limits: self.limits.parse.clone(),
            ocr: None,
        };
        let mut doc = self.serve(bytes, request, self.limits.timeout)?;
        let Some(model) = self.ocr.clone() else {
            return Ok(doc);
        };
        if doc.pages_without_text.is_empty() || !matches!(kind, DocKind::Image | DocKind::Pdf) {
            return Ok(doc);
        }
        let scanned = doc.pages_without_text.clone();
        let total = u32::try_from(scanned.len()).unwrap_or(u32::MAX);
        let mut done = 0u32;
        progress(done, total);
        for batch in scanned.chunks(OCR_BATCH) {
            let timeout = self.limits.timeout
                + Duration::from_secs(OCR_SECONDS_PER_PAGE.saturating_mul(batch.len() as u64));
            let request = Request {
                kind,
                limits: self.limits.parse.clone(),
                ocr: Some(OcrRequest {
                    model: model.clone(),
                    pages: batch.to_vec(),
                }),
            };
            match self.serve(bytes, request, timeout) {
                Ok(read) => crate::ocr::merge(&mut doc, read, batch),
                // A picture is nothing but its image: one that does not decode is a failed file.
                Err(e) if kind == DocKind::Image => return Err(e),
                // A PDF keeps its text and its notice about the pages OCR could not read.
                Err(e) => tracing::warn!("OCR of pages {batch:?} failed: {e}"),
            }
            done = done.saturating_add(u32::try_from(batch.len()).unwrap_or(u32::MAX));
            progress(done, total);
        }
        Ok(doc)
    }

    fn serve(&mut self, bytes: &Arc<Vec<u8>>, request: Request, timeout: Duration) -> Response {
        match self.backend.clone() {
            ParserBackend::InProcess => self.parse_in_thread(bytes, request, timeout),
            ParserBackend::Worker { program, args } => {
                self.parse_in_worker(&program, &args, bytes, &request, timeout)
            }
        }
    }

    fn parse_in_thread(
        &self,
        bytes: &Arc<Vec<u8>>,
        request: Request,
        timeout: Duration,
    ) -> Response {
        let (tx, rx) = bounded(1);
        let bytes = Arc::clone(bytes);
        std::thread::Builder::new()
            .name("knowhub-parse".into())
            .stack_size(64 << 20)
            .spawn(move || {
                let _ = tx.send(parse_here(&bytes, &request));
            })
            .map_err(|e| SandboxError::Crashed(format!("cannot start parser thread: {e}")))?;
        match rx.recv_timeout(timeout) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout) => Err(SandboxError::Timeout(timeout.as_secs())),
            Err(RecvTimeoutError::Disconnected) => {
                Err(SandboxError::Crashed("parser thread died".into()))
            }
        }
    }

    fn parse_in_worker(
        &mut self,
        program: &Path,
        args: &[String],
        bytes: &[u8],
        request: &Request,
        timeout: Duration,
    ) -> Response {
        let payload =
            serde_json::to_vec(request).map_err(|e| SandboxError::Crashed(e.to_string()))?;
        if self.worker.is_none() {
            self.worker = Some(self.spawn(program, args)?);
        }
        let Some(worker) = self.worker.as_mut() else {
            return Err(SandboxError::Crashed("no worker".into()));
        };
        let send = |stdin: &mut BufWriter<ChildStdin>| {
            write_frame(stdin, &payload).and_then(|()| write_frame(stdin, bytes))
        };
        if send(&mut worker.stdin).is_err() {
            // The idle worker died (e.g. killed by the OS); start a fresh one and retry once.
            self.worker = Some(self.spawn(program, args)?);
            let Some(worker) = self.worker.as_mut() else {
                return Err(SandboxError::Crashed("no worker".into()));
            };
            if send(&mut worker.stdin).is_err() {
                // Even a fresh worker died before reading the request: report how it ended.
                let status = self.worker.take().and_then(|mut w| w.child.wait().ok());
                return Err(SandboxError::Crashed(
                    status.map_or_else(|| "worker exited".into(), describe_exit),
                ));
            }
        }
        let Some(worker) = self.worker.as_mut() else {
            return Err(SandboxError::Crashed("no worker".into()));
        };
        match worker.responses.recv_timeout(timeout) {
            Ok(Ok(frame)) => serde_json::from_slice::<Response>(&frame)
                .map_err(|e| SandboxError::Crashed(format!("unreadable parser reply: {e}")))?,
            Ok(Err(_)) | Err(RecvTimeoutError::Disconnected) => {
                let status = self.worker.take().and_then(|mut w| w.child.wait().ok());
                let why = match status {
                    Some(s) => describe_exit(s),
                    None => "worker exited".into(),
                };
                Err(SandboxError::Crashed(why))
            }
            Err(RecvTimeoutError::Timeout) => {
                self.worker = None; // Drop kills it.
                Err(SandboxError::Timeout(timeout.as_secs()))
            }
        }
    }

    fn spawn(&self, program: &Path, args: &[String]) -> Result<Worker, SandboxError> {
        let mut child = Command::new(program)
            .args(args)
            .arg("--memory-bytes")
            .arg(self.limits.memory_bytes.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                SandboxError::Crashed(format!(
                    "cannot start parser worker {}: {e}",
                    program.display()
                ))
            })?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| SandboxError::Crashed("no worker stdin".into()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| SandboxError::Crashed("no worker stdout".into()))?;
        let (tx, rx) = bounded(1);
        std::thread::Builder::new()
            .name("knowhub-parse-reader".into())
            .spawn(move || {
                let mut reader = BufReader::new(stdout);
                loop {
                    let frame = read_frame(&mut reader);
                    let failed = frame.is_err();
                    if tx.send(frame).is_err() || failed {
                        return;
                    }
                }
            })
            .map_err(|e| SandboxError::Crashed(format!("cannot start reader thread: {e}")))?;
        Ok(Worker {
            child,
            stdin: BufWriter::new(stdin),
            responses: rx,
        })
    }
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return match sig {
                6 => "aborted: out of memory or stack overflow".into(),
                9 => "killed".into(),
                11 => "segmentation fault".into(),
                s => format!("killed by signal {s}"),
            };
        }
    }
    format!("worker exited with {status}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_skip_stray_output() {
        let mut buf = b"noise KH".to_vec();
        write_frame(&mut buf, b"{\"a\":1}").unwrap();
        let got = read_frame(&mut buf.as_slice()).unwrap();
        assert_eq!(got, b"{\"a\":1}");
    }

    fn shell_worker(script: &str, timeout: Duration) -> Parser {
        let backend = ParserBackend::Worker {
            program: PathBuf::from("/bin/sh"),
            args: vec!["-c".into(), script.into()],
        };
        Parser::new(
            backend,
            SandboxLimits {
                timeout,
                ..SandboxLimits::default()
            },
        )
    }

    #[cfg(unix)]
    #[test]
    fn hung_worker_is_killed_at_the_deadline() {
        let mut p = shell_worker("cat > /dev/null", Duration::from_millis(300));
        let started = std::time::Instant::now();
        let r = p.parse(&Arc::new(b"x".to_vec()), DocKind::Text);
        assert!(matches!(r, Err(SandboxError::Timeout(_))), "{r:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            p.worker.is_none(),
            "the hung worker was dropped (and so killed)"
        );
    }

    #[cfg(unix)]
    #[test]
    fn dying_worker_is_reported_and_replaced() {
        // Prints noise, then dies mid-request, like a parser that aborts on a stack overflow.
        let mut p = shell_worker("echo noise; kill -ABRT $$", Duration::from_secs(5));
        for _ in 0..2 {
            let r = p.parse(&Arc::new(b"x".to_vec()), DocKind::Text);
            match r {
                Err(SandboxError::Crashed(why)) => {
                    assert!(why.contains("aborted") || why.contains("exited"), "{why}")
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn missing_worker_program_is_a_clear_error() {
        let mut p = Parser::new(
            ParserBackend::Worker {
                program: PathBuf::from("/nonexistent/knowhub"),
                args: vec![],
            },
            SandboxLimits::default(),
        );
        let r = p.parse(&Arc::new(b"x".to_vec()), DocKind::Text);
        assert!(
            matches!(&r, Err(SandboxError::Crashed(why)) if why.contains("cannot start")),
            "{r:?}"
        );
    }

    #[test]
    fn in_process_parse_and_errors() {
        let mut p = Parser::new(ParserBackend::InProcess, SandboxLimits::default());
        let doc = p
            .parse(&Arc::new(b"# Hi\n\ntext".to_vec()), DocKind::Markdown)
            .unwrap();
        assert_eq!(doc.title.as_deref(), Some("Hi"));
        let bad = p.parse(&Arc::new(b"not a pdf".to_vec()), DocKind::Pdf);
        assert!(matches!(bad, Err(SandboxError::Parse(_))), "{bad:?}");
    }
}
