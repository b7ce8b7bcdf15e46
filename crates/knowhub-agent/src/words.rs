//! The copilot's general vocabulary, read once from `data/words.toml` (compiled in): question
//! words, units of time, money and measure words, discourse fillers and the routing keywords,
//! in English and Chinese. See that file for what each list is for and what may go in it.

use std::sync::LazyLock;

use serde::Deserialize;

/// The parsed word lists. A `String` field is a string of characters, each one an entry
/// (`filler` is text, read through its terms).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Words {
    // What a question asks for and what a sentence states (`answer_kind`).
    pub(crate) amount_asks: Vec<String>,
    pub(crate) duration_asks: Vec<String>,
    pub(crate) moment_asks: Vec<String>,
    pub(crate) number_asks: Vec<String>,
    pub(crate) duration_units: Vec<String>,
    pub(crate) currency_after: Vec<String>,
    pub(crate) currency_before: Vec<String>,
    pub(crate) moment_units: Vec<String>,
    pub(crate) moment_words: Vec<String>,
    pub(crate) number_words: Vec<String>,
    pub(crate) number_measures: String,
    pub(crate) chinese_digits: String,
    // Query terms (`text`).
    pub(crate) stop_words: Vec<String>,
    pub(crate) cjk_stop: Vec<String>,
    pub(crate) cjk_common: String,
    // Checking claims against sources (`citations`).
    pub(crate) asides: Vec<String>,
    pub(crate) open_endings: Vec<String>,
    pub(crate) asking_zh: Vec<String>,
    pub(crate) not_beside: Vec<String>,
    pub(crate) chinese_numerals: String,
    pub(crate) figure_measures: Vec<String>,
    pub(crate) filler: String,
    // Brief answers (`brief`).
    pub(crate) asks_other: Vec<String>,
    // Follow-ups (`lib`).
    pub(crate) follow_up_pointers: Vec<String>,
    // Routing by keywords (`nodes::route`).
    pub(crate) sql_words: Vec<String>,
    pub(crate) doc_words: Vec<String>,
    pub(crate) refuse_phrases: Vec<String>,
    pub(crate) change_verbs: Vec<String>,
    /// First match wins: the file's order is kept.
    pub(crate) request_openings: Vec<String>,
    pub(crate) question_words: Vec<String>,
}

const WORDS_TOML: &str = include_str!("../data/words.toml");

static WORDS: LazyLock<Words> = LazyLock::new(|| {
    // The file is part of the build; `words_file_parses` keeps it valid.
    toml::from_str(WORDS_TOML).unwrap_or_else(|e| {
        tracing::error!("data/words.toml: {e}");
        Words::default()
    })
});

/// The word lists.
pub(crate) fn words() -> &'static Words {
    &WORDS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_file_parses() {
        let words: Words = toml::from_str(WORDS_TOML).expect("data/words.toml");
        assert!(words.amount_asks.iter().any(|w| w == "多少钱"));
        assert!(words.duration_units.iter().any(|w| w == "working day"));
        assert!(words.currency_before.iter().any(|w| w == "$"));
        assert!(words.number_measures.contains('个'));
        assert!(words.stop_words.iter().any(|w| w == "how"));
        assert!(words.cjk_common.contains('的'));
        assert!(words.figure_measures.iter().any(|w| w == "工作日"));
        assert!(words.sql_words.iter().any(|w| w == "top "));
        assert_eq!(
            words.filler,
            "according based query result results sql data evidence shows show returned here \
             following 的了是在和与及根据查询结果显示数据证据如下以下有"
        );
        // First match wins: a longer opening before the shorter one it starts with.
        let at = |o: &str| words.request_openings.iter().position(|w| w == o);
        assert!(at("请你") < at("请"));

        let lists = [
            ("amount_asks", &words.amount_asks),
            ("duration_asks", &words.duration_asks),
            ("moment_asks", &words.moment_asks),
            ("number_asks", &words.number_asks),
            ("duration_units", &words.duration_units),
            ("currency_after", &words.currency_after),
            ("currency_before", &words.currency_before),
            ("moment_units", &words.moment_units),
            ("moment_words", &words.moment_words),
            ("number_words", &words.number_words),
            ("stop_words", &words.stop_words),
            ("cjk_stop", &words.cjk_stop),
            ("asides", &words.asides),
            ("open_endings", &words.open_endings),
            ("asking_zh", &words.asking_zh),
            ("not_beside", &words.not_beside),
            ("figure_measures", &words.figure_measures),
            ("asks_other", &words.asks_other),
            ("follow_up_pointers", &words.follow_up_pointers),
            ("sql_words", &words.sql_words),
            ("doc_words", &words.doc_words),
            ("refuse_phrases", &words.refuse_phrases),
            ("change_verbs", &words.change_verbs),
            ("request_openings", &words.request_openings),
            ("question_words", &words.question_words),
        ];
        for (name, list) in lists {
            assert!(!list.is_empty(), "{name} is empty");
            let mut sorted: Vec<&str> = list.iter().map(String::as_str).collect();
            sorted.sort_unstable();
            let before = sorted.len();
            sorted.dedup();
            assert_eq!(before, sorted.len(), "a word listed twice in {name}");
            // The English text these are looked for in is lower-cased first.
            assert!(
                list.iter().all(|w| w.to_lowercase() == *w),
                "{name} has upper case"
            );
        }
        let characters = [
            ("number_measures", &words.number_measures),
            ("chinese_digits", &words.chinese_digits),
            ("cjk_common", &words.cjk_common),
            ("chinese_numerals", &words.chinese_numerals),
        ];
        for (name, chars) in characters {
            let mut sorted: Vec<char> = chars.chars().collect();
            assert!(!sorted.is_empty(), "{name} is empty");
            assert!(
                !sorted.iter().any(|c| c.is_whitespace()),
                "{name} is a string of characters"
            );
            sorted.sort_unstable();
            let before = sorted.len();
            sorted.dedup();
            assert_eq!(before, sorted.len(), "a character listed twice in {name}");
        }
    }
}
