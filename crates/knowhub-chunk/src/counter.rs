//! Token counting: the trait the embedding tokenizer will implement, and a fast heuristic.

/// Counts the tokens a text occupies in the embedding model's input.
///
/// The chunker only needs a count, never the tokens themselves, so the real tokenizer (and any
/// test double) plugs in behind this trait. Implementations should count *content* tokens only,
/// without the special tokens (`[CLS]`, `</s>`, …) the model adds once per input: the chunker
/// sums counts of pieces, and per-call extras would be counted many times over.
///
/// The chunker assumes counts are roughly additive (`count(a + " " + b) ≈ count(a) + count(b)`);
/// it re-counts every finished chunk and splits it further if a non-additive counter pushed it
/// over `max_tokens`, so the bound holds either way.
pub trait TokenCounter: Send + Sync {
    /// The number of tokens `text` encodes to.
    fn count(&self, text: &str) -> usize;
}

/// A fast, allocation-free token estimate for multilingual embedding models.
///
/// # Calibration
///
/// Calibrated by hand against multilingual SentencePiece / WordPiece vocabularies (XLM-R,
/// multilingual-E5, BGE-M3, mBERT), which are what a local bilingual Chinese/English model
/// uses. The rules, and why:
///
/// * **CJK ideographs, kana, hangul:** 1 token each. mBERT splits every ideograph; SentencePiece
///   models merge some frequent two-character words, so 1/char slightly *over*-counts Chinese.
/// * **Runs of letters** (Latin, Cyrillic, Greek, …): `ceil(len / 4)` tokens per run. English
///   averages ~1.3 tokens per word in these vocabularies and ~4.7 letters per word; a quarter
///   of the letters, rounded up per word, lands at or a little above the real count.
/// * **Runs of digits:** `ceil(len / 3)`: numbers split into 1–3 digit pieces.
/// * **Punctuation, symbols, emoji:** 1 token per character.
/// * **Whitespace, combining marks, ZWJ, variation selectors, skin-tone modifiers:** 0 — they
///   ride along with the character before them (the tokenizer normalises or merges them).
///
/// The estimate errs high on purpose: over-counting only makes chunks a little smaller, while
/// under-counting would let the real tokenizer truncate a chunk. It is also *sub-additive*
/// (`count(a + b) ≤ count(a) + count(b)` for any split), which is what makes summing piece
/// counts a safe upper bound inside the chunker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeuristicTokenCounter;

impl TokenCounter for HeuristicTokenCounter {
    fn count(&self, text: &str) -> usize {
        let mut tokens = 0usize;
        let mut letters = 0usize;
        let mut digits = 0usize;
        for c in text.chars() {
            match classify(c) {
                Class::Letter => {
                    tokens += digits.div_ceil(3);
                    digits = 0;
                    letters += 1;
                }
                Class::Digit => {
                    tokens += letters.div_ceil(4);
                    letters = 0;
                    digits += 1;
                }
                // Combining marks extend whatever run they follow without ending it, so "e\u{301}"
                // stays one letter run.
                Class::ZeroWidth => {}
                Class::Space => {
                    tokens += letters.div_ceil(4) + digits.div_ceil(3);
                    letters = 0;
                    digits = 0;
                }
                Class::Ideograph | Class::Other => {
                    tokens += letters.div_ceil(4) + digits.div_ceil(3) + 1;
                    letters = 0;
                    digits = 0;
                }
            }
        }
        tokens + letters.div_ceil(4) + digits.div_ceil(3)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Space,
    ZeroWidth,
    Ideograph,
    Letter,
    Digit,
    Other,
}

fn classify(c: char) -> Class {
    if c.is_whitespace() {
        Class::Space
    } else if is_zero_width(c) {
        Class::ZeroWidth
    } else if is_cjk(c) {
        Class::Ideograph
    } else if c.is_alphabetic() {
        Class::Letter
    } else if c.is_numeric() {
        Class::Digit
    } else {
        Class::Other
    }
}

/// Scripts written without spaces between words, where every character is (about) a token and a
/// legitimate split point.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF     // Hangul Jamo
        | 0x2E80..=0x2FDF   // CJK radicals, Kangxi radicals
        | 0x3040..=0x30FF   // Hiragana, Katakana
        | 0x3100..=0x312F   // Bopomofo
        | 0x3130..=0x318F   // Hangul compatibility Jamo
        | 0x31A0..=0x31FF   // Bopomofo ext., CJK strokes, Katakana ext.
        | 0x3400..=0x4DBF   // CJK Ext. A
        | 0x4E00..=0x9FFF   // CJK Unified Ideographs
        | 0xA960..=0xA97F   // Hangul Jamo ext. A
        | 0xAC00..=0xD7FF   // Hangul syllables, Jamo ext. B
        | 0xF900..=0xFAFF   // CJK compatibility ideographs
        | 0xFF66..=0xFF9F   // Half-width Katakana
        | 0x20000..=0x3FFFF // CJK Ext. B and later, planes 2 and 3
    )
}

/// Characters that never form a token of their own.
fn is_zero_width(c: char) -> bool {
    matches!(c as u32,
        0x0300..=0x036F     // combining diacritical marks
        | 0x1AB0..=0x1AFF
        | 0x1DC0..=0x1DFF
        | 0x200B..=0x200D   // ZWSP, ZWNJ, ZWJ
        | 0x20D0..=0x20FF   // combining marks for symbols
        | 0xFE00..=0xFE0F   // variation selectors
        | 0xFE20..=0xFE2F
        | 0xFEFF            // BOM / ZWNBSP
        | 0x1F3FB..=0x1F3FF // emoji skin-tone modifiers
        | 0xE0000..=0xE007F // tags (flag sequences)
        | 0xE0100..=0xE01EF // variation selectors supplement
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heuristic_counts() {
        let c = HeuristicTokenCounter;
        let cases: &[(&str, usize)] = &[
            ("", 0),
            ("   \n\t", 0),
            ("a", 1),
            ("the", 1),
            ("handbook", 2),
            ("employees", 3),
            ("Employees get 15 days.", 3 + 1 + 1 + 1 + 1),
            ("员工每年享有十五天年假。", 12),
            ("ひらがな", 4),
            ("한국어", 3),
            ("2024-01-31", 2 + 1 + 1 + 1 + 1),
            ("e\u{301}te\u{301}", 1),
            ("👍🏽", 1),
            ("👨\u{200d}👩\u{200d}👧", 3),
            ("KnowHub支持PDF", 2 + 2 + 1),
        ];
        for (text, want) in cases {
            assert_eq!(c.count(text), *want, "{text:?}");
        }
    }

    #[test]
    fn heuristic_is_subadditive() {
        let c = HeuristicTokenCounter;
        let text = "Mixed 文本 with numbers 12345 and émoji 👍🏽, plus punctuation!";
        let idx: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        for &i in &idx {
            let (a, b) = text.split_at(i);
            assert!(c.count(text) <= c.count(a) + c.count(b), "split at {i}");
        }
    }
}
