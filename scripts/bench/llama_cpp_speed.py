#!/usr/bin/env python3
"""llama.cpp on the same GGUF files and the same request as `llm_speed` (the candle path):
time to first token and decode speed, for the ratio in docs/measurements.md.

    python3 -m venv /tmp/llcpp && /tmp/llcpp/bin/pip install llama-cpp-python
    /tmp/llcpp/bin/python scripts/bench/llama_cpp_speed.py [MODEL.gguf ...]

Without arguments it measures the Qwen2.5-Coder 0.5B and 1.5B files in models/. Threads: the
machine's cores (as candle uses), greedy decoding, 128 new tokens, best of 2 after a warm-up.
"""
import os
import sys
import time

from llama_cpp import Llama

PASSAGE = (
    "Employees who travel for work must submit an expense claim within 30 days "
    "of returning. The claim lists every expense with its date, amount and purpose, and each item "
    "needs a receipt. Meals are reimbursed up to the daily allowance of the destination city; hotel "
    "costs up to the company's negotiated rate. Taxis are allowed when no public transport is "
    "available or when travelling late at night. Claims go to the employee's manager first, then "
    "to the finance department, which pays approved claims with the next monthly salary. "
    "员工出差回来后，应在 30 天内提交报销单，并附上所有发票。"
)
MODELS = [
    "qwen2.5-coder-0.5b-instruct/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    "qwen2.5-coder-1.5b-instruct/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
]


def run(llm, messages, max_tokens):
    start = time.perf_counter()
    first = None
    pieces = 0
    for chunk in llm.create_chat_completion(
        messages=messages, max_tokens=max_tokens, temperature=0.0, top_k=1, stream=True
    ):
        delta = chunk["choices"][0]["delta"].get("content")
        if delta:
            if first is None:
                first = time.perf_counter()
            pieces += 1
    end = time.perf_counter()
    return first - start, end - first, pieces


def measure(path):
    threads = os.cpu_count() or 1
    t = time.perf_counter()
    llm = Llama(model_path=path, n_ctx=2048, n_threads=threads, n_threads_batch=threads,
                n_batch=512, verbose=False)
    load = time.perf_counter() - t
    messages = [
        {"role": "system", "content": "Answer from this text only:\n" + PASSAGE * 4},
        {"role": "user", "content": "How long do employees have to submit an expense claim, "
                                    "and who approves it? Explain in detail."},
    ]
    prompt_tokens = len(llm.tokenize(
        ("<|im_start|>system\n" + messages[0]["content"] + "<|im_end|>\n<|im_start|>user\n"
         + messages[1]["content"] + "<|im_end|>\n<|im_start|>assistant\n").encode(),
        add_bos=False, special=True))
    run(llm, messages, 4)  # warm-up
    best = None
    for _ in range(2):
        llm.reset()  # no prompt cache between runs: every run processes the whole prompt
        ttft, rest, n = run(llm, messages, 128)
        tg = max(n - 1, 1) / max(rest, 1e-9)
        if best is None or ttft < best[0]:
            best = (ttft, tg, n)
    ttft, tg, n = best
    print(f"{os.path.basename(path):<44} load {load:5.2f}s  prompt {prompt_tokens:4d} tok  "
          f"TTFT {ttft:6.3f}s ({prompt_tokens / ttft:7.1f} tok/s)  generate {n:3d} tok "
          f"{tg:6.1f} tok/s  threads {threads}")


def main():
    models_dir = os.environ.get("KNOWHUB_MODELS_DIR",
                                os.path.join(os.path.dirname(__file__), "..", "..", "models"))
    paths = sys.argv[1:] or [os.path.join(models_dir, m) for m in MODELS]
    for p in paths:
        if not os.path.isfile(p):
            print(f"skipping missing {p}", file=sys.stderr)
            continue
        measure(p)


if __name__ == "__main__":
    main()
