//! The templates' general vocabulary, read once from `data/words.toml` (compiled in): stop
//! words, Chinese question phrases and units of time. See that file for what may go in it.

use std::sync::LazyLock;

use serde::Deserialize;

/// The parsed word list.
#[derive(Debug, Deserialize)]
pub(crate) struct Words {
    pub(crate) stopwords: Vec<String>,
    pub(crate) cjk_stop: String,
    /// Chinese phrase → English words, longest phrase first.
    pub(crate) chinese: Vec<(String, String)>,
    pub(crate) time_units: TimeUnits,
}

#[derive(Debug, Deserialize)]
pub(crate) struct TimeUnits {
    pub(crate) millisecond: Vec<String>,
    pub(crate) second: Vec<String>,
    pub(crate) minute: Vec<String>,
    pub(crate) hour: Vec<String>,
}

const WORDS_TOML: &str = include_str!("../data/words.toml");

static WORDS: LazyLock<Words> = LazyLock::new(|| {
    // The file is part of the build; `words_file_parses` keeps it valid.
    let mut words: Words = toml::from_str(WORDS_TOML).unwrap_or_else(|e| {
        tracing::error!("data/words.toml: {e}");
        Words {
            stopwords: Vec::new(),
            cjk_stop: String::new(),
            chinese: Vec::new(),
            time_units: TimeUnits {
                millisecond: Vec::new(),
                second: Vec::new(),
                minute: Vec::new(),
                hour: Vec::new(),
            },
        }
    });
    words
        .chinese
        .sort_by_key(|(phrase, _)| std::cmp::Reverse(phrase.chars().count()));
    words
});

/// The word list.
pub(crate) fn words() -> &'static Words {
    &WORDS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_file_parses() {
        let words: Words = toml::from_str(WORDS_TOML).expect("data/words.toml");
        assert!(words.stopwords.iter().any(|w| w == "how"));
        assert!(words.chinese.iter().any(|(p, _)| p == "有多少"));
        assert!(words.time_units.minute.iter().any(|w| w == "分钟"));
        let mut phrases: Vec<&str> = words.chinese.iter().map(|(p, _)| p.as_str()).collect();
        phrases.sort_unstable();
        let before = phrases.len();
        phrases.dedup();
        assert_eq!(before, phrases.len(), "a phrase listed twice");
    }
}
