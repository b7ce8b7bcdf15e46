//! Units of time: the unit a question's word names and the unit a column's name states, so
//! the template compares "longer than 5 minutes" with a column of milliseconds in its unit.

/// A unit of time, as a number of milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum TimeUnit {
    Millisecond,
    Second,
    Minute,
    Hour,
}

impl TimeUnit {
    pub(crate) fn millis(self) -> f64 {
        match self {
            TimeUnit::Millisecond => 1.0,
            TimeUnit::Second => 1_000.0,
            TimeUnit::Minute => 60_000.0,
            TimeUnit::Hour => 3_600_000.0,
        }
    }

    /// The unit a question's word names (English or Chinese), from the word list's
    /// `[time_units]`.
    pub(crate) fn of_word(word: &str) -> Option<TimeUnit> {
        let units = &crate::words::words().time_units;
        [
            (&units.millisecond, TimeUnit::Millisecond),
            (&units.second, TimeUnit::Second),
            (&units.minute, TimeUnit::Minute),
            (&units.hour, TimeUnit::Hour),
        ]
        .into_iter()
        .find(|(names, _)| names.iter().any(|n| n == word))
        .map(|(_, unit)| unit)
    }

    /// The unit a column's name states: `DurationMs`, `duration_ms`, `LengthSeconds`.
    pub(crate) fn of_column(name: &str) -> Option<TimeUnit> {
        let lower = name.to_ascii_lowercase();
        let ends = |suffixes: &[&str]| suffixes.iter().any(|s| lower.ends_with(s));
        if ends(&["milliseconds", "millis", "_ms"]) || name.ends_with("Ms") {
            Some(TimeUnit::Millisecond)
        } else if ends(&["seconds", "_secs", "_sec"]) {
            Some(TimeUnit::Second)
        } else if ends(&["minutes", "_mins", "_min"]) {
            Some(TimeUnit::Minute)
        } else if ends(&["hours", "_hrs"]) {
            Some(TimeUnit::Hour)
        } else {
            None
        }
    }
}
