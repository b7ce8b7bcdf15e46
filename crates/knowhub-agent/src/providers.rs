//! Which language model writes answers: the one place front ends (CLI, desktop app) turn a
//! setting into an [`Llm`], so they cannot drift apart.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::Device;
use knowhub_llm::{Llm, LocalGguf, OpenAiCompatible};
use serde::{Deserialize, Serialize};

/// The default local model (Chinese and English, 491 MB).
pub const DEFAULT_LOCAL_LLM: &str = "qwen2.5-coder-0.5b-instruct";

/// A language-model setting as a user writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LlmChoice {
    /// The default local model when installed, else extractive answers.
    Default,
    /// A model of the built-in manifest (e.g. `qwen2.5-coder-1.5b-instruct`).
    Named { name: String },
    /// A GGUF file anywhere on disk.
    File { path: PathBuf },
    /// Any OpenAI-compatible server (Ollama, llama.cpp server, vLLM, OpenAI).
    OpenAi {
        base_url: String,
        model: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        api_key: Option<String>,
    },
    /// No model: answers are the best supporting sentences with their citations.
    Off,
}

/// A loaded answer model (`None`: extractive answers) and why, if a default was missing.
#[derive(Debug, Clone, Default)]
pub struct LoadedLlm {
    pub llm: Option<Arc<dyn Llm>>,
    pub note: Option<String>,
}

/// Why a model could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error(
        "model {0} is not installed: run `knowhub models fetch {0}` (or choose extractive answers)"
    )]
    NotInstalled(String),
    #[error("cannot load {path}: {reason}")]
    Load { path: String, reason: String },
    #[error("{0}")]
    Invalid(String),
}

impl LlmChoice {
    /// Parses the CLI form: `local`, `off`, a manifest name, a `.gguf` path, or `openai`
    /// (then `url` and `model` are required).
    pub fn parse(
        text: &str,
        url: Option<String>,
        model: Option<String>,
        api_key: Option<String>,
    ) -> Result<LlmChoice, ProviderError> {
        Ok(match text {
            "local" | "default" => LlmChoice::Default,
            "off" | "none" | "extractive" => LlmChoice::Off,
            "openai" => LlmChoice::OpenAi {
                base_url: url.ok_or_else(|| {
                    ProviderError::Invalid(
                        "--llm openai needs --llm-url (e.g. http://localhost:11434/v1)".into(),
                    )
                })?,
                model: model.ok_or_else(|| {
                    ProviderError::Invalid("--llm openai needs --llm-model".into())
                })?,
                api_key,
            },
            path if path.ends_with(".gguf") => LlmChoice::File { path: path.into() },
            name => LlmChoice::Named { name: name.into() },
        })
    }

    /// Loads the model (`llm: None`: extractive mode), with a note for the user when the
    /// default model is missing and answers will be extractive. A local model runs on
    /// `device` (the CPU, or the GPU the search models use); a server model ignores it.
    pub fn load(&self, device: &Device) -> Result<LoadedLlm, ProviderError> {
        let (llm, note) = self.load_parts(device)?;
        Ok(LoadedLlm { llm, note })
    }

    #[allow(clippy::type_complexity)] // private: the two halves of `LoadedLlm`
    fn load_parts(
        &self,
        device: &Device,
    ) -> Result<(Option<Arc<dyn Llm>>, Option<String>), ProviderError> {
        match self {
            LlmChoice::Off => Ok((None, None)),
            LlmChoice::OpenAi {
                base_url,
                model,
                api_key,
            } => Ok((
                Some(Arc::new(OpenAiCompatible::new(
                    base_url.clone(),
                    model.clone(),
                    api_key.clone(),
                ))),
                None,
            )),
            LlmChoice::Default => match installed_model_path(DEFAULT_LOCAL_LLM) {
                Some(path) => Ok((Some(load_gguf(&path, device)?), None)),
                None => Ok((
                    None,
                    Some(format!(
                        "the default local model is not installed (knowhub models fetch \
                         {DEFAULT_LOCAL_LLM}); answering extractively"
                    )),
                )),
            },
            LlmChoice::File { path } => Ok((Some(load_gguf(path, device)?), None)),
            LlmChoice::Named { name } => match installed_model_path(name) {
                Some(path) => Ok((Some(load_gguf(&path, device)?), None)),
                None => Err(ProviderError::NotInstalled(name.clone())),
            },
        }
    }
}

fn load_gguf(path: &Path, device: &Device) -> Result<Arc<dyn Llm>, ProviderError> {
    let llm = LocalGguf::load(path, device).map_err(|e| ProviderError::Load {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    Ok(Arc::new(llm))
}

/// The installed GGUF file of a manifest model, if any (existence and size checked).
pub fn installed_model_path(name: &str) -> Option<PathBuf> {
    let manifest = knowhub_models::Manifest::builtin().ok()?;
    let dir = knowhub_models::default_models_dir()?;
    let entry = manifest.get(name).ok()?;
    let folder =
        knowhub_models::require(&manifest, &dir, name, knowhub_models::Depth::Quick).ok()?;
    entry
        .files
        .iter()
        .find(|f| f.dest.ends_with(".gguf"))
        .map(|f| folder.join(&f.dest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_cli_form() {
        let cases: &[(&str, LlmChoice)] = &[
            ("local", LlmChoice::Default),
            ("off", LlmChoice::Off),
            ("extractive", LlmChoice::Off),
            (
                "m.gguf",
                LlmChoice::File {
                    path: "m.gguf".into(),
                },
            ),
            (
                "smollm2-135m-instruct",
                LlmChoice::Named {
                    name: "smollm2-135m-instruct".into(),
                },
            ),
        ];
        for (text, want) in cases {
            assert_eq!(
                &LlmChoice::parse(text, None, None, None).unwrap(),
                want,
                "{text}"
            );
        }
        assert!(LlmChoice::parse("openai", None, Some("m".into()), None).is_err());
        assert!(matches!(
            LlmChoice::parse("openai", Some("http://x/v1".into()), Some("m".into()), None),
            Ok(LlmChoice::OpenAi { .. })
        ));
    }

    #[test]
    fn an_unknown_model_is_a_clear_error() {
        let err = LlmChoice::Named {
            name: "no-such-model".into(),
        }
        .load(&Device::Cpu)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(err.contains("not installed"), "{err}");
    }
}
