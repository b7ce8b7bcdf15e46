//! The tokenizer rebuilt from GGUF metadata against the reference converter
//! (`shared/models/reference/gguf2tokenizer.py`; fixture made by `make_tokenizer_ids.py`), and
//! round trips of Chinese and English text for both GGUF families.

#![allow(clippy::unwrap_used)]

mod common;

use knowhub_llm::gguf_tokenizer::tokenizer_from_gguf;
use serde_json::Value;

const FIXTURE: &str = include_str!("fixtures/tokenizer_ids.json");

const ROUND_TRIP: &[&str] = &[
    "The quick brown fox jumps over the lazy dog. 3.14159",
    "员工出差回来后，应在 30 天内提交报销单和发票。",
    "混合 mixed text：Qwen2.5 模型 with emoji 😀 and tabs\tand\nnewlines.",
    "",
];

fn check(family: &str, rel: &str) {
    let Some(path) = common::model(rel) else {
        return;
    };
    let tok = tokenizer_from_gguf(&path).unwrap();
    let fixture: Value = serde_json::from_str(FIXTURE).unwrap();
    let cases = fixture[family].as_array().unwrap();
    assert!(!cases.is_empty());
    for case in cases {
        let text = case["text"].as_str().unwrap();
        let want: Vec<u32> = case["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| u32::try_from(v.as_u64().unwrap()).unwrap())
            .collect();
        let got = tok.encode(text, false).unwrap();
        assert_eq!(got.get_ids(), want.as_slice(), "{family}: {text:?}");
    }
    for text in ROUND_TRIP {
        let ids = tok.encode(*text, false).unwrap().get_ids().to_vec();
        assert_eq!(tok.decode(&ids, false).unwrap(), *text, "{family}");
    }
}

#[test]
fn smollm2_matches_the_reference_and_round_trips() {
    check("smollm2", common::SMOLLM);
}

#[test]
fn qwen2_matches_the_reference_and_round_trips() {
    check("qwen2", common::QWEN_05B);
}

#[test]
fn chinese_is_compact_in_qwen() {
    let Some(path) = common::model(common::QWEN_05B) else {
        return;
    };
    let tok = tokenizer_from_gguf(&path).unwrap();
    let n = tok
        .encode("员工出差回来后应提交报销单。", false)
        .unwrap()
        .len();
    assert!(n <= 10, "{n} tokens");
}
