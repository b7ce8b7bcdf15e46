//! Desktop settings that outlive a session (which model writes answers), kept as JSON next to
//! the knowledge base. Written atomically (temp file + rename) so a crash never leaves half.

use std::path::{Path, PathBuf};

use knowhub_agent::providers::LlmChoice;
use serde::{Deserialize, Serialize};

use crate::error::{CmdResult, CommandError};

const FILE_NAME: &str = "desktop-settings.json";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub(crate) struct Settings {
    pub llm: LlmChoice,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            llm: LlmChoice::Default,
        }
    }
}

impl Settings {
    pub(crate) fn path(data_dir: &Path) -> PathBuf {
        data_dir.join(FILE_NAME)
    }

    /// The saved settings; defaults when there are none or they cannot be read (with a
    /// warning in the log: a broken settings file must not keep the app from starting).
    pub(crate) fn load(data_dir: &Path) -> Settings {
        let path = Settings::path(data_dir);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).unwrap_or_else(|e| {
                tracing::warn!("ignoring unreadable {}: {e}", path.display());
                Settings::default()
            }),
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
        assert_eq!(Settings::load(dir.path()), Settings::default());
        let s = Settings {
            llm: LlmChoice::OpenAi {
                base_url: "http://localhost:11434/v1".into(),
                model: "qwen2.5".into(),
                api_key: None,
            },
        };
        s.save(dir.path()).unwrap();
        assert_eq!(Settings::load(dir.path()), s);
        std::fs::write(Settings::path(dir.path()), "{ not json").unwrap();
        assert_eq!(Settings::load(dir.path()), Settings::default());
    }
}
