//! Model paths for the tests: `KNOWHUB_MODELS_DIR`, else the repository's `models/`. Tests that
//! need a model skip (with a message) when its file is absent.

#![allow(dead_code, unreachable_pub, clippy::print_stderr)]

use std::path::PathBuf;

pub const SMOLLM: &str = "smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf";
pub const QWEN_05B: &str = "qwen2.5-coder-0.5b-instruct/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
pub const QWEN_15B: &str = "qwen2.5-coder-1.5b-instruct/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";

pub fn models_dir() -> PathBuf {
    std::env::var_os("KNOWHUB_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(
                std::env::var("CARGO_MANIFEST_DIR")
                    .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
            )
            .join("../../models")
        })
}

/// The model file, or `None` (after saying so) when it is not there.
pub fn model(rel: &str) -> Option<PathBuf> {
    let path = models_dir().join(rel);
    if path.is_file() {
        Some(path)
    } else {
        eprintln!(
            "skipping: {} is missing (fetch it with `knowhub models fetch {}`)",
            path.display(),
            rel.split('/').next().unwrap_or(rel)
        );
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "under CI=true a test may not skip"
        );
        None
    }
}
