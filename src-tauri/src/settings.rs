//! Desktop settings that outlive a session (which models search and write answers, whether the
//! HTTP API is served), kept as JSON next to the knowledge base. Written atomically (temp file +
//! rename) so a crash never leaves half.

use std::path::{Path, PathBuf};

use knowhub_agent::providers::LlmChoice;
use knowhub_engine::DeviceChoice;
use serde::{Deserialize, Serialize};

use crate::error::{CmdResult, CommandError};

const FILE_NAME: &str = "desktop-settings.json";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub(crate) struct Settings {
    pub llm: LlmChoice,
    pub search: SearchModels,
    /// The HTTP API served by the app (off unless an administrator switches it on).
    pub api: ApiServerSetting,
    /// The team server the app joined (its key is kept apart, see `team.rs`).
    pub team: Option<crate::team::TeamSetting>,
    /// The first-run choice (this computer only, or join a team) was made. A settings file
    /// from before the choice existed counts as made: that user has used the app already.
    pub welcomed: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            llm: LlmChoice::Default,
            search: SearchModels::default(),
            api: ApiServerSetting::default(),
            team: None,
            welcomed: true,
        }
    }
}

/// The models behind search. They are loaded when the knowledge base opens, so a change takes
/// effect at the next start (an embedder change then re-embeds in the background).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub(crate) struct SearchModels {
    /// `default`, a manifest embedder's name, a model folder, or `off` (keyword search only).
    pub embedder: String,
    /// A cross-encoder folder; `None`: no reranking.
    pub reranker: Option<PathBuf>,
    /// Use CUDA/Metal when compiled in and present (else the CPU).
    pub gpu: bool,
}

impl SearchModels {
    /// Where local models run under this setting (the answer model too: one GPU switch).
    pub(crate) fn device(&self) -> DeviceChoice {
        if self.gpu {
            DeviceChoice::Auto
        } else {
            DeviceChoice::Cpu
        }
    }
}

impl Default for SearchModels {
    fn default() -> Self {
        SearchModels {
            embedder: "default".into(),
            reranker: None,
            gpu: false,
        }
    }
}

/// The HTTP API the app can serve on `127.0.0.1:<port>` (loopback only), as `knowhub serve`
/// does. Off by default.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub(crate) struct ApiServerSetting {
    pub enabled: bool,
    pub port: u16,
}

/// The port `knowhub serve` uses by default.
pub(crate) const DEFAULT_API_PORT: u16 = 7878;

impl Default for ApiServerSetting {
    fn default() -> Self {
        ApiServerSetting {
            enabled: false,
            port: DEFAULT_API_PORT,
        }
    }
}

impl Settings {
    pub(crate) fn path(data_dir: &Path) -> PathBuf {
        data_dir.join(FILE_NAME)
    }

    /// The saved settings; defaults when there are none or they cannot be read (with a
    /// warning in the log: a broken settings file must not keep the app from starting).
    /// Without a settings file this is the first run, and the window asks how to start.
    pub(crate) fn load(data_dir: &Path) -> Settings {
        let path = Settings::path(data_dir);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).unwrap_or_else(|e| {
                tracing::warn!("ignoring unreadable {}: {e}", path.display());
                Settings::default()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Settings {
                welcomed: false,
                ..Settings::default()
            },
            Err(_) => Settings::default(),
        }
    }

    pub(crate) fn save(&self, data_dir: &Path) -> CmdResult<()> {
        let path = Settings::path(data_dir);
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| CommandError::new("internal", e.to_string()))?;
        std::fs::create_dir_all(data_dir)
            .and_then(|()| std::fs::write(&tmp, text))
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| CommandError::new("io", format!("cannot save {}: {e}", path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_survives_a_broken_file() {
        let dir = tempfile::tempdir().unwrap();
        // No file: the first run, which asks how to start; otherwise the defaults.
        let first = Settings::load(dir.path());
        assert!(!first.welcomed);
        assert_eq!(
            first,
            Settings {
                welcomed: false,
                ..Settings::default()
            }
        );
        let s = Settings {
            llm: LlmChoice::OpenAi {
                base_url: "http://localhost:11434/v1".into(),
                model: "qwen2.5".into(),
                api_key: None,
            },
            search: SearchModels {
                embedder: "multilingual-e5-small".into(),
                reranker: Some("/models/reranker".into()),
                gpu: true,
            },
            api: ApiServerSetting {
                enabled: true,
                port: 9000,
            },
            team: Some(crate::team::TeamSetting {
                server: "https://kb.example.com".into(),
                ca_file: Some("/etc/ca.pem".into()),
                answers: crate::dto::TeamAnswers::ThisComputer,
            }),
            welcomed: true,
        };
        s.save(dir.path()).unwrap();
        let text = std::fs::read_to_string(Settings::path(dir.path())).unwrap();
        assert!(!text.contains("kh_"), "no key in the settings file: {text}");
        assert_eq!(Settings::load(dir.path()), s);
        std::fs::write(Settings::path(dir.path()), "{ not json").unwrap();
        assert_eq!(Settings::load(dir.path()), Settings::default());
        // Settings written by an older version (no `search`) keep their answer model.
        std::fs::write(Settings::path(dir.path()), r#"{"llm":{"kind":"off"}}"#).unwrap();
        let old = Settings::load(dir.path());
        assert_eq!(old.search, SearchModels::default());
        assert_eq!(old.llm, LlmChoice::Off);
        // …count as having made the first-run choice…
        assert!(old.welcomed);
        // …and have the API off, on the default port.
        assert_eq!(old.api, ApiServerSetting::default());
        assert!(!old.api.enabled);
        assert_eq!(old.api.port, DEFAULT_API_PORT);
        // A partial `api` object keeps the other field's default.
        std::fs::write(Settings::path(dir.path()), r#"{"api":{"enabled":true}}"#).unwrap();
        let partial = Settings::load(dir.path());
        assert!(partial.api.enabled);
        assert_eq!(partial.api.port, DEFAULT_API_PORT);
    }
}
