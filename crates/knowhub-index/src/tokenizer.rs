//! The `knowhub` tokenizer: one analysis for Chinese, Japanese, Korean and
//! Latin-script text.
//!
//! Text is first split into *runs* by script:
//!
//! * **Han runs** (CJK Unified Ideographs incl. Extensions A–I, compatibility
//!   ideographs, `々`, `〇`) are segmented with jieba in *search mode*
//!   ([`jieba_rs::Jieba::cut_for_search`]): every word plus the dictionary
//!   words of two and three characters inside it, so `数据库` is indexed as
//!   `数据库`, `数据` and the query `数据` finds it. See the crate docs for the
//!   measurement that chose this over character bigrams.
//! * **Kana runs** are emitted as overlapping bigrams (a lone kana as a
//!   unigram). jieba's dictionary and HMM only know Han characters; on kana it
//!   degrades to one token per character, which matches far too much.
//! * **Everything else** is split on Unicode (UAX #29) word boundaries and only
//!   words containing a letter or digit are kept. Words joined by `_ . : '`
//!   (`x86_64`, `config.yaml`) are indexed whole *and* as their parts of two
//!   or more characters, so `x86` finds `x86_64`. Hangul words come out whole
//!   (no Korean morphology).
//!
//! The tokens then go through [`RemoveLongFilter`], [`LowerCaser`], a stop word
//! filter (Lucene's English list and a few Chinese particles),
//! [`AsciiFoldingFilter`] and the English [`Stemmer`]. The stemmer only
//! rewrites English suffixes; CJK and kana tokens never end in one, so they
//! pass through unchanged (covered by tests).
//!
//! Offsets are byte offsets into the original text and positions are chosen so
//! that phrase queries work: a non-CJK word takes one position, a CJK run takes
//! one position per character and each of its tokens sits at the position of
//! its first character (overlapping tokens therefore share positions).

use std::sync::LazyLock;

use jieba_rs::Jieba;
use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, Stemmer, StopWordFilter,
    TextAnalyzer, Token, TokenStream, Tokenizer,
};
use unicode_segmentation::UnicodeSegmentation;

/// Name under which the analyzer is registered in the tantivy index.
pub const TOKENIZER_NAME: &str = "knowhub";

/// Tokens longer than this many bytes are dropped (base64 blobs, hashes,
/// minified code). 40 bytes is tantivy's default and still admits a
/// 13-character Chinese word.
const MAX_TOKEN_BYTES: usize = 40;

/// The jieba dictionary takes tens of milliseconds to load; do it once.
static JIEBA: LazyLock<Jieba> = LazyLock::new(Jieba::new);

/// Lucene's English stop words plus a few Chinese particles that carry no
/// meaning on their own. Kept short on purpose: stop words that matter (e.g.
/// "not") are better handled by BM25's low IDF than by removal.
const STOP_WORDS_EN: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];
const STOP_WORDS_ZH: &[&str] = &["的", "了", "着", "之", "吗", "呢", "吧", "啊", "呀"];

/// Builds the full analyzer (tokenizer + filters) used for indexing, querying
/// and snippets.
pub fn analyzer() -> TextAnalyzer {
    let stop_words = STOP_WORDS_EN
        .iter()
        .chain(STOP_WORDS_ZH)
        .map(|w| (*w).to_owned());
    TextAnalyzer::builder(KnowhubTokenizer)
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter(LowerCaser)
        .filter(StopWordFilter::remove(stop_words))
        .filter(AsciiFoldingFilter)
        .filter(Stemmer::new(Language::English))
        .build()
}

/// Splits `text` into jieba's words (accurate mode, with its HMM for unknown words), every
/// character kept, so the pieces concatenate back to `text`. For callers that need word
/// boundaries in Chinese text rather than index terms (e.g. where a phrase can end).
///
/// ```
/// let words = knowhub_index::words("塔高可达120米");
/// assert_eq!(words.concat(), "塔高可达120米");
/// assert!(words.contains(&"可达"));
/// ```
pub fn words(text: &str) -> Vec<&str> {
    JIEBA.cut(text, true).into_iter().map(|t| t.word).collect()
}

/// Analyzes `text` exactly as the index does and returns the terms in token
/// order (duplicates kept).
///
/// ```
/// let terms = knowhub_index::analyze("Kubernetes部署规范v2");
/// assert!(terms.contains(&"kubernet".to_string()));
/// assert!(terms.contains(&"部署".to_string()));
/// assert!(terms.contains(&"v2".to_string()));
/// ```
pub fn analyze(text: &str) -> Vec<String> {
    analyze_tokens(text).into_iter().map(|t| t.text).collect()
}

/// Built once; cloning a `TextAnalyzer` is cheap (the stop word set is shared).
static ANALYZER: LazyLock<TextAnalyzer> = LazyLock::new(analyzer);

/// Like [`analyze`] but keeps offsets and positions.
pub(crate) fn analyze_tokens(text: &str) -> Vec<Token> {
    let mut analyzer = ANALYZER.clone();
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while stream.advance() {
        out.push(stream.token().clone());
    }
    out
}

/// The tantivy [`Tokenizer`] behind the `knowhub` analyzer (no filters).
#[derive(Debug, Clone, Copy, Default)]
pub struct KnowhubTokenizer;

/// Token stream over pre-computed tokens.
#[derive(Debug)]
pub struct KnowhubTokenStream {
    tokens: std::vec::IntoIter<Token>,
    current: Token,
}

impl Tokenizer for KnowhubTokenizer {
    type TokenStream<'a> = KnowhubTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> KnowhubTokenStream {
        KnowhubTokenStream::new(tokenize(text))
    }
}

impl KnowhubTokenStream {
    pub(crate) fn new(tokens: Vec<Token>) -> Self {
        Self {
            tokens: tokens.into_iter(),
            current: Token::default(),
        }
    }
}

impl TokenStream for KnowhubTokenStream {
    fn advance(&mut self) -> bool {
        match self.tokens.next() {
            Some(token) => {
                self.current = token;
                true
            }
            None => false,
        }
    }

    fn token(&self) -> &Token {
        &self.current
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.current
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    Han,
    Kana,
    Other,
}

fn script(c: char) -> Script {
    match c {
        '\u{4E00}'..='\u{9FFF}'
        | '\u{3400}'..='\u{4DBF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{20000}'..='\u{2A6DF}'
        | '\u{2A700}'..='\u{2EBEF}'
        | '\u{2F800}'..='\u{2FA1F}'
        | '\u{30000}'..='\u{323AF}'
        | '\u{3005}'
        | '\u{3007}' => Script::Han,
        // Hiragana, Katakana (minus the `゠` and `・` punctuation), phonetic
        // extensions, half-width katakana.
        '\u{3041}'..='\u{309F}'
        | '\u{30A1}'..='\u{30FA}'
        | '\u{30FC}'..='\u{30FF}'
        | '\u{31F0}'..='\u{31FF}'
        | '\u{FF66}'..='\u{FF9F}' => Script::Kana,
        _ => Script::Other,
    }
}

/// Splits `text` into raw (unfiltered) tokens with byte offsets and positions.
///
/// Tokens come out with non-decreasing positions (tantivy delta-encodes
/// positions per term).
pub(crate) fn tokenize(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut position = 0usize;
    let mut run_start = 0usize;
    let mut run_script: Option<Script> = None;
    for (i, c) in text.char_indices() {
        let s = script(c);
        match run_script {
            Some(prev) if prev == s => {}
            Some(prev) => {
                emit_run(text, run_start, i, prev, &mut position, &mut tokens);
                run_start = i;
                run_script = Some(s);
            }
            None => {
                run_start = i;
                run_script = Some(s);
            }
        }
    }
    if let Some(prev) = run_script {
        emit_run(
            text,
            run_start,
            text.len(),
            prev,
            &mut position,
            &mut tokens,
        );
    }
    tokens
}

fn push(tokens: &mut Vec<Token>, text: &str, from: usize, to: usize, position: usize) {
    tokens.push(Token {
        offset_from: from,
        offset_to: to,
        position,
        text: text[from..to].to_owned(),
        position_length: 1,
    });
}

fn emit_run(
    text: &str,
    start: usize,
    end: usize,
    script: Script,
    position: &mut usize,
    tokens: &mut Vec<Token>,
) {
    let run = &text[start..end];
    match script {
        Script::Han => emit_han(text, start, run, position, tokens),
        Script::Kana => emit_kana(text, start, run, position, tokens),
        Script::Other => emit_words(text, start, run, position, tokens),
    }
}

fn emit_han(text: &str, start: usize, run: &str, position: &mut usize, tokens: &mut Vec<Token>) {
    // Character index of each byte offset inside the run, to position tokens.
    let char_starts: Vec<usize> = run.char_indices().map(|(b, _)| b).collect();
    let char_index = |byte: usize| char_starts.partition_point(|&b| b < byte);
    let mut words: Vec<(usize, usize, usize)> = JIEBA
        .cut_for_search(run, true)
        .into_iter()
        .filter(|w| w.byte_end > w.byte_start && w.word.chars().any(char::is_alphanumeric))
        .map(|w| {
            (
                *position + char_index(w.byte_start),
                w.byte_start,
                w.byte_end,
            )
        })
        .collect();
    // jieba emits the sub-words before the word; order by position so that the
    // positions of any one term only ever grow.
    words.sort_unstable();
    words.dedup();
    for (pos, from, to) in words {
        push(tokens, text, start + from, start + to, pos);
    }
    *position += char_starts.len();
}

fn emit_kana(text: &str, start: usize, run: &str, position: &mut usize, tokens: &mut Vec<Token>) {
    let bounds: Vec<usize> = run
        .char_indices()
        .map(|(b, _)| b)
        .chain(std::iter::once(run.len()))
        .collect();
    let n = bounds.len() - 1;
    if n == 1 {
        push(tokens, text, start, start + run.len(), *position);
    } else {
        for i in 0..n - 1 {
            push(
                tokens,
                text,
                start + bounds[i],
                start + bounds[i + 2],
                *position + i,
            );
        }
    }
    *position += n;
}

fn is_joiner(c: char) -> bool {
    matches!(c, '_' | '.' | ':' | '\'' | '\u{2019}' | '·')
}

fn emit_words(text: &str, start: usize, run: &str, position: &mut usize, tokens: &mut Vec<Token>) {
    for (offset, word) in run.unicode_word_indices() {
        let from = start + offset;
        if !word.contains(is_joiner) {
            push(tokens, text, from, from + word.len(), *position);
            *position += 1;
            continue;
        }
        // `x86_64`: the whole word, then its parts at consecutive positions so
        // that both "x86_64" and the phrase "x86 64" match.
        push(tokens, text, from, from + word.len(), *position);
        let mut part_start = 0;
        let mut parts = 0;
        for (i, c) in word
            .char_indices()
            .chain(std::iter::once((word.len(), '_')))
        {
            if is_joiner(c) {
                let part = &word[part_start..i];
                if part.chars().count() >= 2 {
                    push(tokens, text, from + part_start, from + i, *position + parts);
                }
                if !part.is_empty() {
                    parts += 1;
                }
                part_start = i + c.len_utf8();
            }
        }
        *position += parts.max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Vec<&str> {
        tokenize(text)
            .iter()
            .map(|t| &text[t.offset_from..t.offset_to])
            .collect()
    }

    #[test]
    fn analysis_table() {
        // (input, terms that must be produced)
        let cases: &[(&str, &[&str])] = &[
            ("Deployments deployment DEPLOYED", &["deploy"]),
            ("Kubernetes部署规范v2", &["kubernet", "部署", "规范", "v2"]),
            ("数据库管理系统", &["数据", "数据库", "管理", "系统"]),
            ("x86_64 build", &["x86_64", "x86", "64", "build"]),
            ("config.yaml", &["config.yaml", "config", "yaml"]),
            ("Café naïve", &["cafe", "naiv"]),
            ("東京タワーに行きました", &["タワ", "ワー"]),
            ("한국어 검색", &["한국어", "검색"]),
            ("ＡＢＣ全角", &["abc"]),
            ("𠀋𠀌 extension", &["extens"]),
        ];
        for (input, expected) in cases {
            let terms = analyze(input);
            for e in *expected {
                assert!(
                    terms.iter().any(|t| t == e),
                    "{input:?}: expected {e:?} in {terms:?}"
                );
            }
        }
    }

    #[test]
    fn stop_words_removed() {
        assert_eq!(analyze("the of and"), Vec::<String>::new());
        assert!(!analyze("我的文档").contains(&"的".to_string()));
    }

    #[test]
    fn stemmer_leaves_cjk_alone() {
        // Every CJK token must equal its source text (stemming, lower-casing
        // and folding must not touch it).
        let text = "数据库部署规范テストとひらがなのケース검색s";
        for token in analyze_tokens(text) {
            let source = &text[token.offset_from..token.offset_to];
            if source.chars().all(|c| script(c) != Script::Other) {
                assert_eq!(token.text, source);
            }
        }
    }

    #[test]
    fn offsets_are_byte_offsets_into_the_original() {
        let text = "Ünïcode 数据库 and Kubernetes部署规范v2 – カタカナ x86_64!";
        let tokens = analyze_tokens(text);
        assert!(!tokens.is_empty());
        for t in &tokens {
            assert!(text.is_char_boundary(t.offset_from));
            assert!(text.is_char_boundary(t.offset_to));
            assert!(t.offset_from < t.offset_to);
        }
        let raw = raw(text);
        for expected in [
            "Ünïcode",
            "数据库",
            "数据",
            "Kubernetes",
            "部署",
            "v2",
            "カタ",
            "x86_64",
        ] {
            assert!(raw.contains(&expected), "{expected} not in {raw:?}");
        }
    }

    #[test]
    fn positions_never_decrease() {
        let text = "中华人民共和国 数据库管理系统 x86_64 テスト";
        let tokens = tokenize(text);
        for pair in tokens.windows(2) {
            assert!(pair[0].position <= pair[1].position, "{tokens:?}");
        }
    }

    #[test]
    fn lone_kana_and_empty_input() {
        assert_eq!(analyze(""), Vec::<String>::new());
        assert_eq!(analyze("   !!! "), Vec::<String>::new());
        assert_eq!(raw("ア"), vec!["ア"]);
    }
}
