#!/usr/bin/env python3
"""Tiny cross-encoder fixtures and reference logits for the Rust `CrossEncoder` parity test.

Writes two small, randomly initialised (fixed seed) sequence-classification models in the
Hugging Face folder layout, each with its reference logits:

* `fixtures/tiny-bert-reranker/`: BertForSequenceClassification (as
  cross-encoder/ms-marco-MiniLM-L-6-v2): WordPiece tokenizer with the pair template
  `[CLS] A [SEP] B [SEP]` (type ids 0/1), `bert.*` weights (plus the `bert.embeddings.position_ids`
  int64 buffer real checkpoints carry), pooler dense+tanh on [CLS], `classifier` Linear.
  Its tokenizer.json has fixed padding (80) and truncation (512) switched on, as some exported
  tokenizers do: the Rust side must switch them off.
* `fixtures/tiny-xlmr-reranker/`: XLMRobertaForSequenceClassification (as BAAI/bge-reranker-base):
  Unigram tokenizer with Metaspace and the template `<s> A </s></s> B </s>` (type ids all 0),
  `roberta.*` weights, head `classifier.dense` + tanh + `classifier.out_proj` on <s>; positions
  start at padding_idx + 1.

Both: hidden 32, 2 layers, intermediate 64, num_labels 1, at most 64 tokens per pair (BERT:
max_position_embeddings 64; XLM-R: 66 - pad_token_id - 1), so the long texts are truncated.

`expected_logits.json` in each folder comes from an INDEPENDENT numpy forward pass (float64, one
unpadded pair at a time, exact erf GELU), on token ids from the Python `tokenizers` library:
`tokenizer.encode(query, passage)` with padding off and truncation at the model's limit with
strategy `only_second` (only the passage is cut), falling back to `longest_first` when the query
alone leaves no room (the last group has such a query).

Needs numpy, safetensors, tokenizers (no torch). Deterministic: re-running rewrites the same files.

usage: make_tiny_rerankers.py [--out DIR]   (default: the fixtures folder next to this script)
"""
import argparse
import json
import math
import os
from collections import Counter

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 20240611
HIDDEN, LAYERS, INTER = 32, 2, 64
MAX_TOKENS = 64

LONG_EN = (
    "Travel expenses are reimbursed only when the employee submits the expense report with the "
    "original receipts, the approved travel request and a short description of the business "
    "purpose of the trip. The finance team checks every report against the travel policy, "
    "rejects items without receipts, and pays the approved amount with the next monthly salary. "
    "Reports that arrive later than thirty days after the end of the trip need a written "
    "explanation and the approval of the department head before finance will process them."
)
LONG_ZH = (
    "员工出差回来后应在三十天内提交报销单，并附上发票原件和经理批准的出差申请。财务部会按照公司的差旅制度逐项审核，"
    "没有发票的项目不予报销，审核通过的金额会随下个月的工资一起发放。超过期限提交的报销单需要书面说明原因，"
    "并由部门负责人签字同意后才能处理。"
)
LONG_QUERY = (
    "I came back from a long business trip to Shanghai last week and I have a pile of receipts "
    "for hotels, trains, taxis and meals, some of them in Chinese and some in English, and I "
    "would like to know exactly which form I have to fill in, who has to approve it, how long "
    "finance needs to process it and whether receipts without a company name are still accepted"
)

# (query, [(kind, passage)]): each group is one `score` call on the Rust side.
GROUPS = [
    (
        "how do I file an expense report after a business trip?",
        [
            ("en", "Employees submit the expense report within thirty days after returning from a business trip."),
            ("en", "The quick brown fox jumps over the lazy dog."),
            ("mixed", "The 报销单 must be approved by your manager before payment 🙂."),
            ("long-en", LONG_EN),
            ("empty", ""),
            ("short", "ok"),
        ],
    ),
    (
        "如何申请出差报销？",
        [
            ("zh", "员工出差回来后应在三十天内提交报销单。"),
            ("zh", "今天天气很好，我们去公园散步。"),
            ("mixed", "Submit the 报销单 via the HR portal，财务部 checks it."),
            ("long-zh", LONG_ZH),
            ("short", "好"),
        ],
    ),
    (
        LONG_QUERY,
        [
            ("long-query", "The manager approves expense reports and finance pays them."),
        ],
    ),
]

# Left out of both vocabularies on purpose: maps to [UNK] / <unk>.
UNKNOWN_CHARS = {"🙂"}


def all_texts():
    for q, ps in GROUPS:
        yield q
        for _, p in ps:
            yield p


# ---------------------------------------------------------------------------------------------
# Tokenizers


def words_of(tok, text):
    """Pre-tokenized words of `text` under `tok`'s normalizer and pre-tokenizer."""
    norm = tok.normalizer.normalize_str(text) if tok.normalizer else text
    return [w for w, _ in tok.pre_tokenizer.pre_tokenize_str(norm)]


def bert_tokenizer():
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    probe = Tokenizer(models.WordPiece({"[UNK]": 0}, unk_token="[UNK]"))
    probe.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    probe.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    counts = Counter(w for t in all_texts() for w in words_of(probe, t))
    vocab = list(specials)
    # Whole words seen at least twice; every other word is spelled with characters, so the
    # `##` continuation pieces are exercised too.
    vocab += sorted(w for w, c in counts.items() if c >= 2 and len(w) > 1)
    chars = sorted({ch for w in counts for ch in w} - UNKNOWN_CHARS)
    vocab += chars
    vocab += ["##" + ch for ch in chars]
    vocab = list(dict.fromkeys(vocab))
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = probe.normalizer
    tok.pre_tokenizer = probe.pre_tokenizer
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab.index("[CLS]")), ("[SEP]", vocab.index("[SEP]"))],
    )
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.add_special_tokens(specials)
    return tok, vocab.index("[PAD]")


def xlmr_tokenizer():
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    probe = Tokenizer(models.Unigram([("<unk>", 0.0)], unk_id=0, byte_fallback=False))
    probe.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace(" {2,}", " ")])
    probe.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    counts = Counter(w for t in all_texts() for w in words_of(probe, t))
    pieces = [(s, 0.0) for s in specials]
    # Frequent words whole; a few Chinese words so the Viterbi segmentation has choices; every
    # character alone (and "▁" alone) so that anything else can still be spelled.
    for w in sorted(w for w, c in counts.items() if c >= 2):
        pieces.append((w, -3.0 - 0.1 * len(w)))
    for w in ["报销", "报销单", "出差", "员工", "财务部", "提交", "天气", "公园", "经理", "发票"]:
        pieces.append((w, -4.0))
    chars = sorted({ch for w in counts for ch in w} - UNKNOWN_CHARS - {"▁"})
    pieces.append(("▁", -5.0))
    pieces += [(ch, -7.0 - 0.01 * i) for i, ch in enumerate(chars)]
    seen, vocab = set(), []
    for p, s in pieces:
        if p not in seen:
            seen.add(p)
            vocab.append((p, s))
    tok = Tokenizer(models.Unigram(vocab, unk_id=3, byte_fallback=False))
    tok.normalizer = probe.normalizer
    tok.pre_tokenizer = probe.pre_tokenizer
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)],
    )
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.add_special_tokens(specials)
    return tok, 1


def encode_pair(tok_path, query, passage):
    """Reference tokenisation: the library's own pair encoding, only the passage truncated."""
    tok = Tokenizer.from_file(tok_path)
    tok.no_padding()
    tok.enable_truncation(MAX_TOKENS, strategy="only_second")
    try:
        return tok.encode(query, passage), "only_second"
    except Exception:  # the query alone is too long: cut the longer side first
        tok.enable_truncation(MAX_TOKENS, strategy="longest_first")
        return tok.encode(query, passage), "longest_first"


# ---------------------------------------------------------------------------------------------
# Weights


class Init:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.t = {}

    def normal(self, name, shape, std):
        self.t[name] = (self.rng.standard_normal(shape) * std).astype(np.float32)

    def linear(self, name, n_out, n_in, std=0.15):
        self.normal(name + ".weight", (n_out, n_in), std)
        self.normal(name + ".bias", (n_out,), 0.05)

    def layer_norm(self, name, n):
        self.t[name + ".weight"] = (1.0 + 0.1 * self.rng.standard_normal(n)).astype(np.float32)
        self.t[name + ".bias"] = (0.1 * self.rng.standard_normal(n)).astype(np.float32)


def encoder_weights(init, prefix, vocab, positions, type_vocab, pad_id):
    init.normal(f"{prefix}.embeddings.word_embeddings.weight", (vocab, HIDDEN), 0.5)
    init.t[f"{prefix}.embeddings.word_embeddings.weight"][pad_id] = 0.0
    init.normal(f"{prefix}.embeddings.position_embeddings.weight", (positions, HIDDEN), 0.5)
    init.normal(f"{prefix}.embeddings.token_type_embeddings.weight", (type_vocab, HIDDEN), 0.5)
    init.layer_norm(f"{prefix}.embeddings.LayerNorm", HIDDEN)
    for l in range(LAYERS):
        p = f"{prefix}.encoder.layer.{l}"
        for n in ("query", "key", "value"):
            init.linear(f"{p}.attention.self.{n}", HIDDEN, HIDDEN)
        init.linear(f"{p}.attention.output.dense", HIDDEN, HIDDEN)
        init.layer_norm(f"{p}.attention.output.LayerNorm", HIDDEN)
        init.linear(f"{p}.intermediate.dense", INTER, HIDDEN)
        init.linear(f"{p}.output.dense", HIDDEN, INTER)
        init.layer_norm(f"{p}.output.LayerNorm", HIDDEN)


# ---------------------------------------------------------------------------------------------
# numpy forward (float64, one unpadded sequence)

GELU = np.frompyfunc(lambda x: 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0))), 1, 1)


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def encoder_forward(W, prefix, cfg, ids, types, positions):
    g = lambda n: W[f"{prefix}.{n}"].astype(np.float64)  # noqa: E731
    lin = lambda x, n: x @ g(n + ".weight").T + g(n + ".bias")  # noqa: E731
    H, NH, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
    hd = H // NH
    x = g("embeddings.word_embeddings.weight")[ids]
    x = x + g("embeddings.position_embeddings.weight")[positions]
    x = x + g("embeddings.token_type_embeddings.weight")[types]
    x = layer_norm(x, g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"), eps)
    n = len(ids)
    for l in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{l}"
        q, k, v = (lin(x, f"{p}.attention.self.{m}").reshape(n, NH, hd).transpose(1, 0, 2) for m in ("query", "key", "value"))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        s = np.exp(s - s.max(-1, keepdims=True))
        s = s / s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(n, H)
        a = layer_norm(lin(ctx, f"{p}.attention.output.dense") + x, g(f"{p}.attention.output.LayerNorm.weight"), g(f"{p}.attention.output.LayerNorm.bias"), eps)
        h = GELU(lin(a, f"{p}.intermediate.dense")).astype(np.float64)
        x = layer_norm(lin(h, f"{p}.output.dense") + a, g(f"{p}.output.LayerNorm.weight"), g(f"{p}.output.LayerNorm.bias"), eps)
    return x


def bert_logit(W, cfg, enc):
    ids, types = np.array(enc.ids), np.array(enc.type_ids)
    x = encoder_forward(W, "bert", cfg, ids, types, np.arange(len(ids)))
    d = lambda n: W[n].astype(np.float64)  # noqa: E731
    pooled = np.tanh(x[0] @ d("bert.pooler.dense.weight").T + d("bert.pooler.dense.bias"))
    logits = pooled @ d("classifier.weight").T + d("classifier.bias")
    return float(logits[-1])


def xlmr_logit(W, cfg, enc):
    ids = np.array(enc.ids)
    pad = cfg["pad_token_id"]
    # No padding here, so every position is a real token: pad + 1, pad + 2, ...
    positions = pad + 1 + np.arange(len(ids))
    x = encoder_forward(W, "roberta", cfg, ids, np.zeros_like(ids), positions)
    d = lambda n: W[n].astype(np.float64)  # noqa: E731
    h = np.tanh(x[0] @ d("classifier.dense.weight").T + d("classifier.dense.bias"))
    logits = h @ d("classifier.out_proj.weight").T + d("classifier.out_proj.bias")
    return float(logits[-1])


# ---------------------------------------------------------------------------------------------


def bert_config(vocab):
    return {
        "_name_or_path": "tiny-bert-reranker",
        "architectures": ["BertForSequenceClassification"],
        "attention_probs_dropout_prob": 0.1,
        "classifier_dropout": None,
        "gradient_checkpointing": False,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": HIDDEN,
        "id2label": {"0": "LABEL_0"},
        "initializer_range": 0.02,
        "intermediate_size": INTER,
        "label2id": {"LABEL_0": 0},
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": MAX_TOKENS,
        "model_type": "bert",
        "num_attention_heads": 4,
        "num_hidden_layers": LAYERS,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "sbert_ce_default_activation_function": "torch.nn.modules.linear.Identity",
        "torch_dtype": "float32",
        "transformers_version": "4.40.0",
        "type_vocab_size": 2,
        "use_cache": True,
        "vocab_size": vocab,
    }


def xlmr_config(vocab):
    return {
        "_name_or_path": "tiny-xlmr-reranker",
        "architectures": ["XLMRobertaForSequenceClassification"],
        "attention_probs_dropout_prob": 0.1,
        "bos_token_id": 0,
        "classifier_dropout": None,
        "eos_token_id": 2,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": HIDDEN,
        "id2label": {"0": "LABEL_0"},
        "initializer_range": 0.02,
        "intermediate_size": INTER,
        "label2id": {"LABEL_0": 0},
        "layer_norm_eps": 1e-05,
        "max_position_embeddings": MAX_TOKENS + 2,
        "model_type": "xlm-roberta",
        "num_attention_heads": 2,
        "num_hidden_layers": LAYERS,
        "output_past": True,
        "pad_token_id": 1,
        "position_embedding_type": "absolute",
        "torch_dtype": "float32",
        "transformers_version": "4.40.0",
        "type_vocab_size": 1,
        "use_cache": True,
        "vocab_size": vocab,
    }


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")


def build(out, name, family, seed):
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    if family == "bert":
        tok, pad = bert_tokenizer()
        cfg = bert_config(tok.get_vocab_size())
        init = Init(seed)
        encoder_weights(init, "bert", cfg["vocab_size"], cfg["max_position_embeddings"], cfg["type_vocab_size"], pad)
        init.linear("bert.pooler.dense", HIDDEN, HIDDEN)
        init.linear("classifier", 1, HIDDEN, std=1.0)
        init.t["bert.embeddings.position_ids"] = np.arange(cfg["max_position_embeddings"], dtype=np.int64)[None, :]
        # As shipped by some exports: fixed-length padding and truncation, which the Rust side
        # must switch off (it pads per batch and truncates pairs itself).
        tok.enable_padding(pad_id=pad, pad_token="[PAD]", length=80)
        tok.enable_truncation(512)
        logit = bert_logit
    else:
        tok, pad = xlmr_tokenizer()
        cfg = xlmr_config(tok.get_vocab_size())
        init = Init(seed)
        encoder_weights(init, "roberta", cfg["vocab_size"], cfg["max_position_embeddings"], cfg["type_vocab_size"], pad)
        init.t["roberta.embeddings.position_embeddings.weight"][pad] = 0.0  # as HF (padding_idx row)
        init.linear("classifier.dense", HIDDEN, HIDDEN)
        init.linear("classifier.out_proj", 1, HIDDEN, std=1.0)
        logit = xlmr_logit
    tok_path = os.path.join(folder, "tokenizer.json")
    tok.save(tok_path)
    write_json(os.path.join(folder, "config.json"), cfg)
    save_file(dict(sorted(init.t.items())), os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})

    groups = []
    for query, passages in GROUPS:
        rows = []
        for kind, passage in passages:
            enc, strategy = encode_pair(tok_path, query, passage)
            full = Tokenizer.from_file(tok_path)
            full.no_padding()
            full.no_truncation()
            untruncated = len(full.encode(query, passage).ids)
            rows.append(
                {
                    "kind": kind,
                    "text": passage,
                    "tokens": len(enc.ids),
                    "truncated": untruncated > len(enc.ids),
                    "strategy": strategy,
                    "ids": enc.ids,
                    "logit": round(logit(init.t, cfg, enc), 7),
                }
            )
        groups.append({"query": query, "passages": rows})
    write_json(
        os.path.join(folder, "expected_logits.json"),
        {
            "model": name,
            "model_type": cfg["model_type"],
            "max_tokens": MAX_TOKENS,
            "generator": "make_tiny_rerankers.py (numpy float64 reference)",
            "groups": groups,
        },
    )
    size = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
    print(f"{name}: vocab {cfg['vocab_size']}, {size} bytes")
    for g in groups:
        for r in g["passages"]:
            print(f"  {r['kind']:<11} {r['tokens']:>3} tok {'T' if r['truncated'] else ' '} {r['strategy']:<13} {r['logit']:+.5f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "fixtures"))
    args = ap.parse_args()
    build(args.out, "tiny-bert-reranker", "bert", SEED)
    build(args.out, "tiny-xlmr-reranker", "xlm-roberta", SEED + 1)


if __name__ == "__main__":
    main()
