//! The templates' general vocabulary, read once from `data/words.toml` (compiled in): stop
//! words, Chinese question phrases, ways of asking, comparison, ordering and missing-value
//! phrases, words for measures, money and people, units of time and month names. See that file
//! for what may go in it. Lists the templates try in order keep the file's order.

use std::sync::LazyLock;

use serde::Deserialize;

/// The parsed word list.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Words {
    pub(crate) stopwords: Vec<String>,
    /// English words that are no term of a question (`text::terms`).
    pub(crate) term_stopwords: Vec<String>,
    pub(crate) cjk_stop: String,
    /// Chinese measure words, one character each.
    pub(crate) measure_words_zh: String,
    /// Chinese phrase → English words, longest phrase first.
    pub(crate) chinese: Vec<(String, String)>,
    pub(crate) time_units: TimeUnits,
    pub(crate) dates: DateWords,
    pub(crate) asking: AskingWords,
    pub(crate) count_compare: CountCompareWords,
    pub(crate) compare: CompareWords,
    pub(crate) order: OrderWords,
    pub(crate) ends: EndWords,
    pub(crate) missing: MissingWords,
    pub(crate) measure: MeasureWords,
    pub(crate) people: PeopleWords,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TimeUnits {
    pub(crate) millisecond: Vec<String>,
    pub(crate) second: Vec<String>,
    pub(crate) minute: Vec<String>,
    pub(crate) hour: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DateWords {
    /// English month names, January first.
    pub(crate) months: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AskingWords {
    pub(crate) group_openings: Vec<String>,
    pub(crate) average_openings: Vec<String>,
    pub(crate) openings_en: Vec<Phrase>,
    pub(crate) openings_zh: Vec<String>,
    pub(crate) who_zh: Vec<String>,
    pub(crate) distinct: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CountCompareWords {
    pub(crate) before_en: Vec<CountComparison>,
    pub(crate) after_en: Vec<CountComparison>,
    pub(crate) before_zh: Vec<CountComparison>,
    pub(crate) after_zh: Vec<CountComparison>,
}

/// A comparison of a count with a number, found in the question's text as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CountComparison {
    pub(crate) phrase: String,
    pub(crate) op: CompareOp,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CompareWords {
    pub(crate) before: Vec<Comparison>,
    pub(crate) after: Vec<Comparison>,
    pub(crate) duration: Vec<Phrase>,
}

/// A comparison of a column with a number, found among the question's words.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Comparison {
    pub(crate) words: Phrase,
    pub(crate) op: CompareOp,
}

/// How SQL compares, written in the file as SQL writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) enum CompareOp {
    #[serde(rename = ">")]
    Greater,
    #[serde(rename = ">=")]
    GreaterOrEqual,
    #[serde(rename = "<")]
    Less,
    #[serde(rename = "<=")]
    LessOrEqual,
}

impl CompareOp {
    pub(crate) fn sql(self) -> &'static str {
        match self {
            CompareOp::Greater => ">",
            CompareOp::GreaterOrEqual => ">=",
            CompareOp::Less => "<",
            CompareOp::LessOrEqual => "<=",
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OrderWords {
    pub(crate) sort: Vec<String>,
    pub(crate) descending: Vec<String>,
    pub(crate) ascending: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EndWords {
    pub(crate) minimum: Vec<String>,
    pub(crate) maximum: Vec<String>,
    pub(crate) range: Vec<String>,
    pub(crate) lowest: Vec<String>,
    pub(crate) highest: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MissingWords {
    pub(crate) before: Vec<ValueState>,
    pub(crate) after: Vec<ValueState>,
}

/// Words beside a column that say whether it holds a value; `absent`: it holds none.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ValueState {
    pub(crate) words: Phrase,
    pub(crate) absent: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MeasureWords {
    pub(crate) average: Vec<String>,
    pub(crate) duration: Vec<String>,
    pub(crate) sales: Vec<String>,
    pub(crate) money: Vec<String>,
    pub(crate) money_units: Vec<String>,
    pub(crate) takings_column: Vec<String>,
    pub(crate) paid_column: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PeopleWords {
    pub(crate) names: Vec<String>,
    pub(crate) superior: Vec<String>,
}

/// Words read one after another, written in the file as one string ("no less than"): the
/// template matches a question word by word, so the file's spaces only separate the words.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub(crate) struct Phrase(Vec<String>);

impl From<String> for Phrase {
    fn from(text: String) -> Phrase {
        Phrase(text.split_whitespace().map(str::to_owned).collect())
    }
}

impl Phrase {
    pub(crate) fn words(&self) -> &[String] {
        &self.0
    }
}

const WORDS_TOML: &str = include_str!("../data/words.toml");

static WORDS: LazyLock<Words> = LazyLock::new(|| {
    // The file is part of the build; `words_file_parses` keeps it valid. Should it still fail,
    // the templates understand nothing (every list empty) and the model answers alone.
    let mut words: Words = toml::from_str(WORDS_TOML).unwrap_or_else(|e| {
        tracing::error!("data/words.toml: {e}");
        Words::default()
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
    use std::fmt::Debug;

    use super::*;

    /// Asserts that `list` has entries and none twice.
    fn assert_listed<T: PartialEq + Debug>(name: &str, list: &[T]) {
        assert!(!list.is_empty(), "{name}: empty");
        for (i, entry) in list.iter().enumerate() {
            assert!(!list[..i].contains(entry), "{name}: {entry:?} listed twice");
        }
    }

    /// Asserts that no entry of a list tried in order comes after one that `hides` it: the
    /// earlier, shorter entry would match where the longer one was meant.
    fn assert_longer_first<T: Debug>(name: &str, list: &[T], hides: impl Fn(&T, &T) -> bool) {
        for (i, later) in list.iter().enumerate() {
            if let Some(earlier) = list[..i].iter().find(|earlier| hides(earlier, later)) {
                panic!("{name}: {later:?} comes after {earlier:?}, which hides it");
            }
        }
    }

    fn starts_with(earlier: &Phrase, later: &Phrase) -> bool {
        later.words().starts_with(earlier.words())
    }

    fn ends_with(earlier: &Phrase, later: &Phrase) -> bool {
        later.words().ends_with(earlier.words())
    }

    #[test]
    fn words_file_parses() {
        let words: Words = toml::from_str(WORDS_TOML).expect("data/words.toml");
        assert!(words.stopwords.iter().any(|w| w == "how"));
        assert!(words.chinese.iter().any(|(p, _)| p == "有多少"));
        assert!(words.time_units.minute.iter().any(|w| w == "分钟"));
        let phrases: Vec<&str> = words.chinese.iter().map(|(p, _)| p.as_str()).collect();
        assert_listed("chinese", &phrases);

        let chars = |text: &str| text.chars().collect::<Vec<char>>();
        assert_listed("stopwords", &words.stopwords);
        assert_listed("term_stopwords", &words.term_stopwords);
        assert_listed("cjk_stop", &chars(&words.cjk_stop));
        assert_listed("measure_words_zh", &chars(&words.measure_words_zh));
        let units = &words.time_units;
        for (name, list) in [
            ("time_units.millisecond", &units.millisecond),
            ("time_units.second", &units.second),
            ("time_units.minute", &units.minute),
            ("time_units.hour", &units.hour),
        ] {
            assert_listed(name, list);
        }
        // A month's number is its place in the list.
        assert_listed("dates.months", &words.dates.months);
        assert_eq!(words.dates.months.len(), 12, "dates.months");

        let asking = &words.asking;
        for (name, list) in [
            ("asking.group_openings", &asking.group_openings),
            ("asking.average_openings", &asking.average_openings),
            ("asking.openings_zh", &asking.openings_zh),
            ("asking.who_zh", &asking.who_zh),
            ("asking.distinct", &asking.distinct),
        ] {
            assert_listed(name, list);
        }
        assert_listed("asking.openings_en", &asking.openings_en);
        assert_longer_first("asking.openings_en", &asking.openings_en, starts_with);
        assert_longer_first("asking.openings_zh", &asking.openings_zh, |e, l| {
            l.starts_with(e.as_str())
        });

        let count = &words.count_compare;
        for (name, list) in [
            ("count_compare.before_en", &count.before_en),
            ("count_compare.after_en", &count.after_en),
            ("count_compare.before_zh", &count.before_zh),
            ("count_compare.after_zh", &count.after_zh),
        ] {
            let phrases: Vec<&str> = list.iter().map(|c| c.phrase.as_str()).collect();
            assert_listed(name, &phrases);
            // Found anywhere in the text: "不超过" holds "超过".
            assert_longer_first(name, &phrases, |e, l| l.contains(e));
        }

        let compare = &words.compare;
        for (name, list) in [
            ("compare.before", &compare.before),
            ("compare.after", &compare.after),
        ] {
            let phrases: Vec<&Phrase> = list.iter().map(|c| &c.words).collect();
            assert_listed(name, &phrases);
            assert_longer_first(name, &phrases, |e, l| starts_with(e, l));
        }
        assert_listed("compare.duration", &compare.duration);
        for phrase in &compare.duration {
            assert!(
                compare
                    .before
                    .iter()
                    .chain(&compare.after)
                    .any(|c| c.words == *phrase),
                "compare.duration: {phrase:?} is no comparison"
            );
        }

        let order = &words.order;
        let ends = &words.ends;
        let measure = &words.measure;
        let people = &words.people;
        for (name, list) in [
            ("order.sort", &order.sort),
            ("order.descending", &order.descending),
            ("order.ascending", &order.ascending),
            ("ends.minimum", &ends.minimum),
            ("ends.maximum", &ends.maximum),
            ("ends.range", &ends.range),
            ("ends.lowest", &ends.lowest),
            ("ends.highest", &ends.highest),
            ("measure.average", &measure.average),
            ("measure.duration", &measure.duration),
            ("measure.sales", &measure.sales),
            ("measure.money", &measure.money),
            ("measure.money_units", &measure.money_units),
            ("measure.takings_column", &measure.takings_column),
            ("measure.paid_column", &measure.paid_column),
            ("people.names", &people.names),
            ("people.superior", &people.superior),
        ] {
            assert_listed(name, list);
        }

        // The phrase that ends right before a column is looked for; the one that starts right
        // after it.
        let missing = &words.missing;
        let before: Vec<&Phrase> = missing.before.iter().map(|s| &s.words).collect();
        assert_listed("missing.before", &before);
        assert_longer_first("missing.before", &before, |e, l| ends_with(e, l));
        let after: Vec<&Phrase> = missing.after.iter().map(|s| &s.words).collect();
        assert_listed("missing.after", &after);
        assert_longer_first("missing.after", &after, |e, l| starts_with(e, l));

        let every_phrase = asking
            .openings_en
            .iter()
            .chain(&compare.duration)
            .chain(
                compare
                    .before
                    .iter()
                    .chain(&compare.after)
                    .map(|c| &c.words),
            )
            .chain(
                missing
                    .before
                    .iter()
                    .chain(&missing.after)
                    .map(|s| &s.words),
            );
        for phrase in every_phrase {
            assert!(!phrase.words().is_empty(), "a phrase without words");
        }
    }
}
