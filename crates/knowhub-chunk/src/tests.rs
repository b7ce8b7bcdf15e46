//! Behavioural tests of `chunk_document`; every test also runs the invariant checker.

use knowhub_parse::{Block, BlockKind, ParsedDocument};

use crate::{Chunk, ChunkConfig, HeuristicTokenCounter, TokenCounter, chunk_document};

const C: HeuristicTokenCounter = HeuristicTokenCounter;

fn doc(blocks: Vec<Block>) -> ParsedDocument {
    ParsedDocument {
        blocks,
        ..ParsedDocument::default()
    }
}

fn chunk(d: &ParsedDocument) -> Vec<Chunk> {
    chunk_with(d, &ChunkConfig::default())
}

fn chunk_with(d: &ParsedDocument, cfg: &ChunkConfig) -> Vec<Chunk> {
    let chunks = chunk_document(d, cfg, &C);
    check_invariants(d, &cfg.sanitized(), &chunks);
    chunks
}

/// What must hold for every document and configuration.
fn check_invariants(d: &ParsedDocument, cfg: &ChunkConfig, chunks: &[Chunk]) {
    let plain: Vec<char> = d.plain_text().chars().collect();
    let mut covered_to = 0;
    for (k, c) in chunks.iter().enumerate() {
        assert_eq!(c.ordinal as usize, k);
        assert!(!c.text.trim().is_empty(), "chunk {k} is empty");
        assert_eq!(c.token_count as usize, C.count(&c.text), "chunk {k} count");
        assert!(
            c.token_count as usize <= cfg.max_tokens,
            "chunk {k} has {} tokens > {}",
            c.token_count,
            cfg.max_tokens
        );
        // Offsets round-trip: the main content is the tail of `text`, and `text` is the slice
        // of plain text right before it.
        assert!(
            c.char_start < c.char_end && c.char_end <= plain.len(),
            "chunk {k}"
        );
        let main: String = plain[c.char_start..c.char_end].iter().collect();
        assert!(
            c.text.ends_with(&main),
            "chunk {k}: {main:?} not in {:?}",
            c.text
        );
        assert_eq!(c.main_text(), main);
        let ov = c.overlap_chars();
        let before: String = plain[c.char_start - ov..c.char_start].iter().collect();
        assert_eq!(
            format!("{before}{main}"),
            c.text,
            "chunk {k} text is not one slice"
        );
        // Main contents are ordered, disjoint, and together cover all non-whitespace text.
        assert!(
            c.char_start >= covered_to,
            "chunk {k} overlaps the previous main content"
        );
        let gap: String = plain[covered_to..c.char_start].iter().collect();
        assert!(
            gap.trim().is_empty(),
            "text {gap:?} before chunk {k} is lost"
        );
        covered_to = c.char_end;
        // Overlap stays within budget.
        let ov_text: String = c.text.chars().take(ov).collect();
        assert!(
            C.count(&ov_text) <= cfg.overlap_tokens,
            "chunk {k} overlap {ov_text:?}"
        );
        if let (Some(a), Some(b)) = (c.page_start, c.page_end) {
            assert!(a <= b);
        }
    }
    let rest: String = plain[covered_to..].iter().collect();
    assert!(rest.trim().is_empty(), "trailing text {rest:?} is lost");
}

/// Deterministic English prose: sentences of varying length.
fn english(sentences: usize, seed: u64) -> String {
    let words = [
        "employees",
        "may",
        "take",
        "annual",
        "leave",
        "after",
        "probation",
        "the",
        "manager",
        "approves",
        "requests",
        "within",
        "five",
        "working",
        "days",
        "and",
        "records",
        "them",
        "in",
        "system",
        "unused",
        "carry",
        "over",
        "to",
        "next",
        "year",
        "policy",
        "applies",
    ];
    let mut rng = Rng(seed);
    let mut out = String::new();
    for s in 0..sentences {
        if s > 0 {
            out.push(' ');
        }
        let n = 6 + rng.below(14);
        for w in 0..n {
            let word = words[rng.below(words.len())];
            if w == 0 {
                let mut cs = word.chars();
                if let Some(f) = cs.next() {
                    out.extend(f.to_uppercase());
                    out.push_str(cs.as_str());
                }
            } else {
                out.push(' ');
                out.push_str(word);
            }
        }
        out.push(['.', '!', '?'][rng.below(3)]);
    }
    out
}

/// Deterministic Chinese prose: sentences with clauses, no spaces.
fn chinese(sentences: usize, seed: u64) -> String {
    let phrases = [
        "员工",
        "入职满一年",
        "可享受",
        "带薪年假",
        "经理",
        "审批",
        "五个工作日内",
        "完成",
        "未使用的",
        "假期",
        "可以结转",
        "至下一年度",
        "本制度",
        "适用于",
        "全体员工",
    ];
    let mut rng = Rng(seed);
    let mut out = String::new();
    for _ in 0..sentences {
        let n = 4 + rng.below(10);
        for w in 0..n {
            out.push_str(phrases[rng.below(phrases.len())]);
            if w + 1 < n && rng.below(4) == 0 {
                out.push('，');
            }
        }
        out.push(['。', '！', '？', '；'][rng.below(4)]);
    }
    out
}

/// A tiny xorshift generator: deterministic, dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0.max(1);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn ends_sentence(s: &str) -> bool {
    s.trim_end()
        .ends_with(['.', '!', '?', '。', '！', '？', '；'])
}

#[test]
fn empty_and_blank_documents() {
    assert!(chunk(&ParsedDocument::default()).is_empty());
    assert!(chunk(&doc(vec![Block::paragraph(""), Block::paragraph(" \n\t ")])).is_empty());
    // Leading empty blocks add no newline to plain_text; offsets must agree.
    let d = doc(vec![Block::paragraph(""), Block::paragraph("Hello.")]);
    let c = chunk(&d);
    assert_eq!((c[0].char_start, c[0].char_end), (0, 6));
}

#[test]
fn long_texts_split_near_target_at_sentence_ends() {
    let cfg = ChunkConfig::default();
    for (name, text) in [("english", english(600, 7)), ("chinese", chinese(600, 7))] {
        let d = doc(vec![Block::paragraph(text)]);
        let chunks = chunk_with(&d, &cfg);
        assert!(chunks.len() > 5, "{name}: {} chunks", chunks.len());
        for c in &chunks[..chunks.len() - 1] {
            let t = c.token_count as usize;
            assert!(
                t >= cfg.target_tokens * 3 / 4 && t <= cfg.target_tokens,
                "{name}: chunk of {t} tokens"
            );
            assert!(
                ends_sentence(c.main_text()),
                "{name}: mid-sentence cut {:?}",
                c.text
            );
        }
        for c in &chunks[1..] {
            assert!(
                c.overlap_chars() > 0,
                "{name}: chunk {} has no overlap",
                c.ordinal
            );
        }
    }
}

#[test]
fn many_paragraphs_keep_paragraphs_whole_when_chunks_are_full_enough() {
    let blocks: Vec<Block> = (0..80)
        .map(|i| Block::paragraph(english(3 + i % 5, i as u64)))
        .collect();
    let d = doc(blocks.clone());
    let chunks = chunk(&d);
    let mut whole = 0;
    for c in &chunks[..chunks.len() - 1] {
        let last_line = c.main_text().lines().last().unwrap_or_default();
        if blocks.iter().any(|b| b.text == last_line) {
            whole += 1;
        }
    }
    // Paragraphs (≤ 100 tokens) against a 400 target: nearly every cut is between blocks.
    assert!(
        whole * 10 >= (chunks.len() - 1) * 9,
        "{whole} of {}",
        chunks.len()
    );
}

#[test]
fn heading_paths() {
    let d = doc(vec![
        Block::heading(1, "Handbook"),
        Block::paragraph("Welcome to the handbook."),
        Block::heading(2, "Leave"),
        Block::heading(3, "Annual leave"),
        Block::paragraph("Fifteen days."),
        Block::heading(3, "Sick leave"),
        Block::paragraph("Ten days."),
        Block::heading(2, "Pay"),
        Block::paragraph("Monthly."),
        Block::heading(1, "附录"),
        Block::heading(4, "深层"),
        Block::paragraph("内容。"),
    ]);
    let chunks = chunk(&d);
    let got: Vec<(Vec<&str>, &str)> = chunks
        .iter()
        .map(|c| {
            (
                c.heading_path.iter().map(String::as_str).collect(),
                c.text.as_str(),
            )
        })
        .collect();
    let want: Vec<(Vec<&str>, &str)> = vec![
        (vec!["Handbook"], "Handbook\nWelcome to the handbook."),
        // Level-3 headings under a nearly empty chunk stay in it; the path is that of the
        // first body block.
        (
            vec!["Handbook", "Leave", "Annual leave"],
            "Leave\nAnnual leave\nFifteen days.\nSick leave\nTen days.",
        ),
        (vec!["Handbook", "Pay"], "Pay\nMonthly."),
        (vec!["附录", "深层"], "附录\n深层\n内容。"),
    ];
    assert_eq!(got, want);
}

#[test]
fn deep_heading_starts_a_chunk_when_over_half_full() {
    let d = doc(vec![
        Block::heading(2, "Leave"),
        Block::paragraph(english(30, 1)),
        Block::heading(3, "Annual leave"),
        Block::paragraph("Fifteen days."),
    ]);
    let chunks = chunk(&d);
    let last = chunks.last().expect("chunks");
    assert_eq!(last.heading_path, ["Leave", "Annual leave"]);
    assert_eq!(
        last.text, "Annual leave\nFifteen days.",
        "no overlap into a new section"
    );
}

#[test]
fn only_headings() {
    let blocks: Vec<Block> = (0..500)
        .map(|i| Block::heading((i % 4 + 1) as u8, format!("Heading {i}")))
        .collect();
    let chunks = chunk(&doc(blocks));
    assert!(!chunks.is_empty());
}

#[test]
fn page_ranges_and_page_breaks() {
    // Three pages of ~150 tokens each: chunks prefer to end at page breaks.
    let mut blocks = Vec::new();
    for page in 1..=6u32 {
        for p in 0..3u64 {
            blocks.push(Block::paragraph(english(4, u64::from(page) * 10 + p)).on_page(page));
        }
    }
    let d = doc(blocks);
    let chunks = chunk(&d);
    let mut at_page_end = 0;
    for (k, c) in chunks.iter().enumerate() {
        let (a, b) = (c.page_start.expect("page"), c.page_end.expect("page"));
        assert!(b <= a + 1, "chunk {k} spans pages {a}..{b}");
        if let Some(next) = chunks.get(k + 1)
            && next.page_start > c.page_end
        {
            at_page_end += 1;
        }
    }
    assert!(
        at_page_end * 2 >= chunks.len() - 1,
        "{at_page_end} of {}",
        chunks.len()
    );
    // No page info at all: None.
    let c = chunk(&doc(vec![Block::paragraph("No pages here.")]));
    assert_eq!((c[0].page_start, c[0].page_end), (None, None));
}

#[test]
fn table_rows_are_never_split() {
    let mut blocks = vec![Block::heading(1, "Staff")];
    let rows: Vec<String> = (0..400)
        .map(|i| {
            format!(
                "name: Person {i}; department: Dept {}; days: {}",
                i % 7,
                i % 30
            )
        })
        .collect();
    blocks.extend(
        rows.iter()
            .map(|r| Block::new(BlockKind::TableRow, r.clone())),
    );
    let d = doc(blocks);
    let chunks = chunk(&d);
    assert!(chunks.len() > 3);
    for c in &chunks {
        for line in c.text.lines().filter(|l| *l != "Staff") {
            assert!(rows.iter().any(|r| r == line), "partial row {line:?}");
        }
    }
}

#[test]
fn code_blocks_stay_whole_up_to_max() {
    let code: String = (0..80).map(|i| format!("let x{i} = {i};\n")).collect();
    let code = code.trim_end().to_string();
    let n = C.count(&code);
    assert!(n > 400 && n <= 512, "code has {n} tokens");
    let d = doc(vec![
        Block::paragraph(english(20, 3)),
        Block::new(BlockKind::Code, code.clone()),
        Block::paragraph("After the code."),
    ]);
    let chunks = chunk(&d);
    assert!(
        chunks.iter().any(|c| c.text.contains(&code)),
        "code block was split"
    );
}

#[test]
fn tiny_tail_merges_into_previous_chunk() {
    let d = doc(vec![
        Block::heading(1, "A"),
        Block::paragraph(english(40, 5)),
        Block::paragraph("Short tail."),
        Block::heading(1, "B"),
        Block::paragraph("Other section."),
    ]);
    let chunks = chunk(&d);
    let a: Vec<&Chunk> = chunks.iter().filter(|c| c.heading_path == ["A"]).collect();
    let last = a.last().expect("section A");
    assert!(last.text.ends_with("Short tail."));
    assert!(
        C.count(last.main_text()) >= 40,
        "tiny tail left alone: {:?}",
        last.text
    );
    assert_eq!(
        chunks.last().map(|c| c.text.as_str()),
        Some("B\nOther section.")
    );
}

#[test]
fn overlap_starts_at_a_sentence_and_is_bounded() {
    let d = doc(vec![Block::paragraph(english(300, 11))]);
    let cfg = ChunkConfig::default();
    let chunks = chunk_with(&d, &cfg);
    for c in &chunks[1..] {
        let ov: String = c.text.chars().take(c.overlap_chars()).collect();
        let t = C.count(&ov);
        assert!(
            t * 2 >= cfg.overlap_tokens && t <= cfg.overlap_tokens,
            "{t}: {ov:?}"
        );
        assert!(
            ov.starts_with(char::is_uppercase),
            "overlap mid-sentence: {ov:?}"
        );
    }
    let no_overlap = ChunkConfig {
        overlap_tokens: 0,
        ..cfg
    };
    for c in chunk_with(&d, &no_overlap) {
        assert_eq!(c.overlap_chars(), 0);
    }
}

#[test]
fn pathological_inputs_stay_within_max() {
    let mb = 1 << 20;
    let cases: Vec<(&str, String)> = vec![
        ("one letter run", "a".repeat(mb)),
        ("words no punctuation", "lorem ipsum dolor ".repeat(mb / 18)),
        ("chinese no punctuation", "中文没有标点".repeat(mb / 18)),
        ("digits", "0123456789".repeat(mb / 10)),
        ("emoji", "👨‍👩‍👧👍🏽🇨🇳".repeat(20_000)),
        ("combining", "e\u{301}\u{302}\u{303}".repeat(50_000)),
        ("zalgo", format!("a{}", "\u{301}".repeat(100_000))),
        ("newlines", "\n".repeat(10_000) + "x"),
        ("commas", "a, ".repeat(100_000)),
        ("dots", ". ".repeat(100_000)),
    ];
    for (name, text) in cases {
        let d = doc(vec![Block::paragraph(text)]);
        let chunks = chunk(&d);
        assert!(!chunks.is_empty(), "{name}");
        if name.ends_with("run") || name.starts_with("words") || name.starts_with("chinese") {
            // Long runs still fill chunks reasonably (no one-char chunks).
            assert!(
                chunks.len() < d.text_len() / 100,
                "{name}: {} chunks",
                chunks.len()
            );
        }
    }
    // Never mid-word: a line of long words splits only at spaces.
    let words = "internationalization ".repeat(20_000);
    for c in chunk(&doc(vec![Block::paragraph(words)])) {
        assert!(
            c.text.split(' ').all(|w| w == "internationalization"),
            "{:?}",
            c.text
        );
    }
}

#[test]
fn tiny_and_odd_configs() {
    let d = doc(vec![
        Block::heading(1, "标题"),
        Block::paragraph(english(20, 2)),
        Block::paragraph(chinese(20, 2)),
        Block::new(BlockKind::Code, "fn main() {}\n".repeat(50)),
    ]);
    let cfgs = [
        ChunkConfig {
            target_tokens: 1,
            max_tokens: 1,
            overlap_tokens: 0,
            min_tokens: 0,
        },
        ChunkConfig {
            target_tokens: 10,
            max_tokens: 12,
            overlap_tokens: 5,
            min_tokens: 3,
        },
        // Invalid: sanitized, not a panic.
        ChunkConfig {
            target_tokens: 1000,
            max_tokens: 0,
            overlap_tokens: 900,
            min_tokens: 5000,
        },
    ];
    for cfg in cfgs {
        chunk_with(&d, &cfg);
    }
}

#[test]
fn random_bilingual_documents() {
    let mut rng = Rng(0x5eed);
    for round in 0..150 {
        let mut blocks = Vec::new();
        let mut page = 1u32;
        for _ in 0..rng.below(30) {
            let text = match rng.below(10) {
                0 => english(1 + rng.below(3), rng.next()),
                1 => chinese(1 + rng.below(3), rng.next()),
                2 => format!("{} {}", english(2, rng.next()), chinese(2, rng.next())),
                3 => english(40 + rng.below(80), rng.next()),
                4 => chinese(40 + rng.below(80), rng.next()).replace('。', ""),
                5 => "🎉é\u{301} mixed 中文 text".repeat(rng.below(200)),
                6 => String::new(),
                _ => english(rng.below(8), rng.next()),
            };
            let kind = match rng.below(8) {
                0 => BlockKind::Heading {
                    level: rng.below(5) as u8,
                },
                1 => BlockKind::TableRow,
                2 => BlockKind::Code,
                3 => BlockKind::ListItem,
                _ => BlockKind::Paragraph,
            };
            if rng.below(5) == 0 {
                page += 1;
            }
            blocks.push(Block::new(kind, text).on_page(page));
        }
        let max = 8 + rng.below(600);
        let cfg = ChunkConfig {
            target_tokens: 1 + rng.below(max),
            max_tokens: max,
            overlap_tokens: rng.below(100),
            min_tokens: rng.below(60),
        };
        let d = doc(blocks);
        let a = chunk_with(&d, &cfg);
        // Deterministic.
        assert_eq!(a, chunk_document(&d, &cfg, &C), "round {round}");
    }
}

#[test]
fn non_additive_counter_still_respects_max() {
    /// Charges 3 extra tokens per call, like a tokenizer that counts special tokens.
    struct Padded;
    impl TokenCounter for Padded {
        fn count(&self, text: &str) -> usize {
            HeuristicTokenCounter.count(text) + 3
        }
    }
    let d = doc(vec![
        Block::paragraph(english(200, 9)),
        Block::paragraph(chinese(200, 9)),
    ]);
    let cfg = ChunkConfig::default();
    for c in chunk_document(&d, &cfg, &Padded) {
        assert!(c.token_count as usize <= cfg.max_tokens);
        assert_eq!(c.token_count as usize, Padded.count(&c.text));
    }
}

#[test]
fn serde_round_trip() {
    let d = doc(vec![
        Block::heading(1, "T"),
        Block::paragraph("Body.").on_page(2),
    ]);
    let chunks = chunk(&d);
    let json = serde_json::to_string(&chunks).expect("serialize");
    let back: Vec<Chunk> = serde_json::from_str(&json).expect("deserialize");
    assert_eq!(back, chunks);
    let cfg: ChunkConfig = serde_json::from_str(r#"{"max_tokens": 256}"#).expect("config");
    assert_eq!(cfg.max_tokens, 256);
    assert_eq!(cfg.target_tokens, 400);
}

#[test]
fn long_words_stay_whole_when_they_fit() {
    let url = format!("https://example.com/{}", "segment".repeat(40));
    let text = format!("{} {url} {}", "word ".repeat(2000), "word ".repeat(2000));
    let chunks = chunk(&doc(vec![Block::paragraph(text)]));
    assert!(
        chunks.iter().any(|c| c.main_text().contains(&url)),
        "URL was cut"
    );
}
