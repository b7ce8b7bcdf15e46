//! A tiny, project-made E5S1 container written by the test itself: round-trip of every
//! section, exact dequantization, and table-driven truncation/corruption cases that must
//! fail with a clear error (never a panic, never a huge allocation).

use half::f16;
use knowhub_embed::{DType, E5s1, EmbedError, dequantize_q4_0};

/// Description of a synthetic container; the `*_override` fields write deliberately wrong
/// values where the writer would otherwise compute the right ones.
#[derive(Clone)]
struct Synth {
    magic: [u8; 4],
    version: u32,
    hidden: i32,
    layers: i32,
    heads: i32,
    ffn: i32,
    vocab: i32,
    max_positions: i32,
    type_vocab: i32,
    eps: f32,
    block: i32,
    pieces: Vec<Vec<u8>>,
    n_pieces_override: Option<i32>,
    special: [i32; 4], // bos, eos, pad, unk
    blob_len_override: Option<u64>,
    offsets_override: Option<Vec<u32>>,
    scores: Vec<f32>,
    norm: Vec<(u32, Vec<u32>)>,
    norm_count_override: Option<i32>,
    norm_len_override: Option<u32>,
    tensor_count_override: Option<i32>,
    tensors: Vec<SynthTensor>,
}

#[derive(Clone)]
struct SynthTensor {
    name: String,
    dtype: u8,
    elements: u32,
    data: Vec<u8>,
    offset_override: Option<u64>,
    len_override: Option<u64>,
}

const F32_VALUES: [f32; 3] = [1.5, -2.0, 0.25];

/// Two Q4_0 blocks with known scales and nibbles, and the weights they encode.
fn q4_tensor() -> (Vec<u8>, Vec<f32>) {
    let mut bytes = Vec::new();
    let mut want = vec![0.0f32; 64];
    for (b, scale) in [0.5f32, -2.0].into_iter().enumerate() {
        bytes.extend_from_slice(&f16::from_f32(scale).to_le_bytes());
        for j in 0..16u8 {
            let lo = j; // weights 0..16 of the block: nibbles 0..15
            let hi = 15 - j; // weights 16..32: nibbles 15..0
            bytes.push(lo | (hi << 4));
            want[b * 32 + j as usize] = (f32::from(lo) - 8.0) * scale;
            want[b * 32 + 16 + j as usize] = (f32::from(hi) - 8.0) * scale;
        }
    }
    (bytes, want)
}

fn base() -> Synth {
    let pieces = [
        "<s>",
        "<pad>",
        "</s>",
        "<unk>",
        "\u{2581}hello",
        "\u{2581}world",
        "<mask>",
    ];
    Synth {
        magic: *b"E5S1",
        version: 1,
        hidden: 4,
        layers: 1,
        heads: 2,
        ffn: 8,
        vocab: 9,
        max_positions: 8,
        type_vocab: 2,
        eps: 1e-12,
        block: 32,
        pieces: pieces.iter().map(|p| p.as_bytes().to_vec()).collect(),
        n_pieces_override: None,
        special: [0, 2, 1, 3],
        blob_len_override: None,
        offsets_override: None,
        scores: vec![0.0, 0.0, 0.0, 0.0, -1.0, -2.0, 0.0],
        // tab → space, full-width comma → comma, U+0001 deleted.
        norm: vec![(0x09, vec![0x20]), (0xFF0C, vec![0x2C]), (0x01, vec![])],
        norm_count_override: None,
        norm_len_override: None,
        tensor_count_override: None,
        tensors: vec![
            SynthTensor {
                name: "a.f32".into(),
                dtype: 0,
                elements: 3,
                data: F32_VALUES.iter().flat_map(|v| v.to_le_bytes()).collect(),
                offset_override: None,
                len_override: None,
            },
            SynthTensor {
                name: "b.q4".into(),
                dtype: 1,
                elements: 64,
                data: q4_tensor().0,
                offset_override: None,
                len_override: None,
            },
        ],
    }
}

impl Synth {
    fn write(&self) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&self.magic);
        b.extend_from_slice(&self.version.to_le_bytes());
        for v in [
            self.hidden,
            self.layers,
            self.heads,
            self.ffn,
            self.vocab,
            self.max_positions,
            self.type_vocab,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&self.eps.to_le_bytes());
        b.extend_from_slice(&self.block.to_le_bytes());

        let n = self.n_pieces_override.unwrap_or(self.pieces.len() as i32);
        b.extend_from_slice(&n.to_le_bytes());
        for s in self.special {
            b.extend_from_slice(&s.to_le_bytes());
        }
        let blob: Vec<u8> = self.pieces.concat();
        let mut offsets = vec![0u32];
        for p in &self.pieces {
            offsets.push(offsets.last().copied().unwrap_or(0) + p.len() as u32);
        }
        let offsets = self.offsets_override.clone().unwrap_or(offsets);
        b.extend_from_slice(
            &self
                .blob_len_override
                .unwrap_or(blob.len() as u64)
                .to_le_bytes(),
        );
        for o in offsets {
            b.extend_from_slice(&o.to_le_bytes());
        }
        for s in &self.scores {
            b.extend_from_slice(&s.to_le_bytes());
        }
        b.extend_from_slice(&blob);

        let mut nm = Vec::new();
        for (cp, to) in &self.norm {
            nm.extend_from_slice(&cp.to_le_bytes());
            nm.push(to.len() as u8);
            for t in to {
                nm.extend_from_slice(&t.to_le_bytes());
            }
        }
        let count = self.norm_count_override.unwrap_or(self.norm.len() as i32);
        b.extend_from_slice(&count.to_le_bytes());
        b.extend_from_slice(
            &self
                .norm_len_override
                .unwrap_or(nm.len() as u32)
                .to_le_bytes(),
        );
        b.extend_from_slice(&nm);

        let count = self
            .tensor_count_override
            .unwrap_or(self.tensors.len() as i32);
        b.extend_from_slice(&count.to_le_bytes());
        let dir_len: usize = self.tensors.iter().map(|t| 23 + t.name.len()).sum();
        let mut data_at = (b.len() + dir_len) as u64;
        for t in &self.tensors {
            b.extend_from_slice(&(t.name.len() as u16).to_le_bytes());
            b.extend_from_slice(t.name.as_bytes());
            b.push(t.dtype);
            b.extend_from_slice(&t.elements.to_le_bytes());
            b.extend_from_slice(&t.offset_override.unwrap_or(data_at).to_le_bytes());
            b.extend_from_slice(&t.len_override.unwrap_or(t.data.len() as u64).to_le_bytes());
            data_at += t.data.len() as u64;
        }
        for t in &self.tensors {
            b.extend_from_slice(&t.data);
        }
        b
    }
}

#[test]
fn round_trip_from_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tiny.bin");
    std::fs::write(&path, base().write()).expect("write");
    let m = E5s1::open(&path).expect("open synthetic container");

    let h = m.header();
    assert_eq!(
        (h.version, h.hidden, h.layers, h.heads, h.ffn),
        (1, 4, 1, 2, 8)
    );
    assert_eq!((h.vocab, h.max_positions, h.type_vocab), (9, 8, 2));
    assert_eq!(h.layer_norm_eps, 1e-12);
    assert_eq!(h.block_size, 32);

    let t = m.tokenizer_spec();
    assert_eq!(t.pieces[4], "\u{2581}hello");
    assert_eq!(t.pieces.len(), 7);
    assert_eq!((t.bos, t.eos, t.pad, t.unk), (0, 2, 1, 3));
    assert_eq!(t.scores[5], -2.0);
    // Sorted by character.
    assert_eq!(
        t.normalization,
        vec![
            ('\u{1}', String::new()),
            ('\t', " ".to_owned()),
            ('\u{FF0C}', ",".to_owned())
        ]
    );

    assert_eq!(m.tensors().len(), 2);
    let a = m.tensor("a.f32").expect("a.f32 listed");
    assert_eq!((a.dtype, a.elements, a.byte_len), (DType::F32, 3, 12));
    assert_eq!(m.tensor_f32("a.f32").expect("a.f32"), F32_VALUES);

    let (raw, want) = q4_tensor();
    assert_eq!(m.tensor("b.q4").map(|t| t.dtype), Some(DType::Q4_0));
    assert_eq!(m.tensor_bytes("b.q4").expect("b.q4 bytes"), raw.as_slice());
    assert_eq!(dequantize_q4_0(&raw, 64).expect("dequantize"), want);
    assert_eq!(m.tensor_f32("b.q4").expect("b.q4"), want);
    // Spot values, written out so that the expectation does not share code with the writer:
    // block 0 has scale 0.5, nibble 0 → -4.0, nibble 15 (weight 16) → 3.5; block 1 scale -2.
    assert_eq!(
        (want[0], want[15], want[16], want[31]),
        (-4.0, 3.5, 3.5, -4.0)
    );
    assert_eq!((want[32], want[48]), (16.0, -14.0));

    assert!(matches!(m.tensor_bytes("nope"), Err(EmbedError::TensorNotFound(n)) if n == "nope"));
    // The tiny header implies tensors this container does not have.
    assert!(matches!(m.check_complete(), Err(EmbedError::TensorNotFound(n)) if n == "emb.word"));
}

#[test]
fn synthetic_tokenizer() {
    let m = E5s1::from_bytes(base().write()).expect("parse");
    let tk = m.tokenizer().expect("tokenizer");
    let ids = |s: &str| tk.encode(s, true).expect("encode").get_ids().to_vec();
    assert_eq!(ids("hello world"), [0, 4, 5, 2]);
    // Tab mapped to space by the container's map, runs of spaces collapsed.
    assert_eq!(ids("hello\t  world"), [0, 4, 5, 2]);
    // Unknown characters become <unk>.
    assert!(ids("hello zzz").contains(&3));
    // Truncated at max positions (8), special tokens included, `</s>` kept.
    let long = ids(&"hello ".repeat(20));
    assert_eq!(long.len(), 8);
    assert_eq!((long[0], long[7]), (0, 2));
}

#[test]
fn dequantize_rejects_bad_lengths() {
    let (raw, _) = q4_tensor();
    assert!(matches!(
        dequantize_q4_0(&raw, 65),
        Err(EmbedError::Corrupt { .. })
    ));
    assert!(matches!(
        dequantize_q4_0(&raw, 96),
        Err(EmbedError::Truncated { .. })
    ));
    assert_eq!(dequantize_q4_0(&raw, 32).expect("first block").len(), 32);
}

#[test]
fn every_truncation_fails_cleanly() {
    let full = base().write();
    for len in 0..full.len() {
        let err = E5s1::from_bytes(full[..len].to_vec()).expect_err("a strict prefix must fail");
        assert!(
            matches!(
                err,
                EmbedError::BadMagic { .. } | EmbedError::Truncated { .. }
            ),
            "prefix of {len} bytes: unexpected error {err}"
        );
    }
}

type Mutation = fn(&mut Synth);

#[test]
fn corrupt_variants_fail_with_clear_errors() {
    let cases: &[(&str, Mutation, &str)] = &[
        ("bad magic", |s| s.magic = *b"GGUF", "not an E5S1"),
        (
            "unknown version",
            |s| s.version = 2,
            "unsupported E5S1 version 2",
        ),
        ("zero hidden", |s| s.hidden = 0, "hidden size is 0"),
        ("negative layers", |s| s.layers = -1, "layer count is -1"),
        (
            "heads do not divide hidden",
            |s| s.heads = 3,
            "not divisible by 3 heads",
        ),
        ("huge vocab", |s| s.vocab = i32::MAX, "vocabulary size"),
        ("nan eps", |s| s.eps = f32::NAN, "layer-norm eps"),
        ("block size", |s| s.block = 16, "block size 16"),
        (
            "negative piece count",
            |s| s.n_pieces_override = Some(-5),
            "piece count is negative",
        ),
        (
            "huge piece count",
            |s| s.n_pieces_override = Some(i32::MAX),
            "truncated: piece count",
        ),
        (
            "zero pieces",
            |s| s.n_pieces_override = Some(0),
            "no pieces",
        ),
        ("unk id out of range", |s| s.special[3] = 7, "unk id is 7"),
        ("negative bos", |s| s.special[0] = -1, "bos id is -1"),
        (
            "huge blob",
            |s| s.blob_len_override = Some(u64::MAX),
            "piece blob",
        ),
        (
            "offsets go backwards",
            |s| s.offsets_override = Some(vec![0, 3, 2, 10, 15, 23, 31, 37]),
            "piece 1 spans 3..2",
        ),
        (
            "offset past blob",
            |s| s.offsets_override = Some(vec![0, 3, 8, 12, 17, 25, 33, 99]),
            "piece 6 spans",
        ),
        (
            "piece not UTF-8",
            |s| s.pieces[4] = vec![0xE2, 0x28, 0xA1],
            "not UTF-8",
        ),
        (
            "huge norm count",
            |s| s.norm_count_override = Some(1 << 30),
            "normalisation entry count",
        ),
        (
            "negative norm count",
            |s| s.norm_count_override = Some(-1),
            "is negative",
        ),
        (
            "norm count too high for its bytes",
            |s| s.norm_count_override = Some(4),
            "beyond the map",
        ),
        (
            "norm count too low",
            |s| s.norm_count_override = Some(2),
            "unread bytes",
        ),
        (
            "norm map length huge",
            |s| s.norm_len_override = Some(u32::MAX),
            "normalisation map",
        ),
        (
            "norm surrogate",
            |s| s.norm[0].0 = 0xD800,
            "is not a character",
        ),
        (
            "norm replacement out of range",
            |s| s.norm[1].1 = vec![0x110000],
            "is not a character",
        ),
        ("norm duplicate", |s| s.norm[1].0 = 0x09, "normalised twice"),
        (
            "huge tensor count",
            |s| s.tensor_count_override = Some(i32::MAX),
            "tensor count",
        ),
        (
            "unknown dtype",
            |s| s.tensors[0].dtype = 7,
            "unknown dtype 7",
        ),
        (
            "f32 length mismatch",
            |s| s.tensors[0].len_override = Some(8),
            "expected 12",
        ),
        (
            "q4 not whole blocks",
            |s| s.tensors[1].elements = 40,
            "not a multiple of 32",
        ),
        (
            "q4 length mismatch",
            |s| s.tensors[1].len_override = Some(18),
            "expected 36",
        ),
        (
            "offset past end",
            |s| s.tensors[1].offset_override = Some(1 << 40),
            "truncated",
        ),
        (
            "offset overflows",
            |s| s.tensors[0].offset_override = Some(u64::MAX - 4),
            "truncated",
        ),
        (
            "duplicate tensor",
            |s| s.tensors[1].name = "a.f32".into(),
            "listed twice",
        ),
    ];
    for (label, mutate, needle) in cases {
        let mut s = base();
        mutate(&mut s);
        let bytes = s.write();
        match E5s1::from_bytes(bytes) {
            Ok(_) => panic!("{label}: corrupt container was accepted"),
            Err(e) => {
                let msg = e.to_string();
                assert!(
                    msg.contains(needle),
                    "{label}: message {msg:?} lacks {needle:?}"
                );
            }
        }
    }
}

#[test]
fn non_utf8_tensor_name_is_rejected() {
    let mut bytes = base().write();
    // The first tensor name ("a.f32") starts right after the directory count and its u16 length.
    let at = bytes
        .windows(5)
        .position(|w| w == b"a.f32")
        .expect("name present");
    bytes[at] = 0xFF;
    let err = E5s1::from_bytes(bytes).expect_err("bad name");
    assert!(err.to_string().contains("name is not UTF-8"), "{err}");
}

#[test]
fn missing_file_is_an_io_error() {
    let err = E5s1::open("/nonexistent/knowhub/e5.bin").expect_err("no file");
    assert!(matches!(err, EmbedError::Io { .. }), "{err}");
    assert!(err.to_string().contains("/nonexistent/knowhub/e5.bin"));
}
