#!/usr/bin/env python3
"""Writes tests/fixtures/tokenizer_ids.json: token ids of fixed sentences under the reference
tokenizer (shared/models/reference/gguf2tokenizer.py + the `tokenizers` Python package).
usage: make_tokenizer_ids.py MODELS_DIR"""
import json, os, subprocess, sys, tempfile
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
REF = os.path.join(HERE, '..', '..', '..', '..', 'shared', 'models', 'reference', 'gguf2tokenizer.py')
MODELS = {
    'smollm2': 'smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf',
    'qwen2': 'qwen2.5-coder-0.5b-instruct/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf',
}
TEXTS = [
    "Hello, world! How are you doing today?",
    "员工出差回来后应提交报销单。",
    "报销单应该在 30 天内提交给财务部（Finance）。",
    "def add(a, b):\n    return a + b  # 12345 + 67890\n",
    "  leading spaces, tabs\tand\n\nnewlines  ",
    "It's we'll they'd I'M — “quotes” café naïve 日本語のテキスト 한국어",
    "<|im_start|>user\n你好<|im_end|>\n",
]

def main():
    models_dir = sys.argv[1]
    out = {}
    for name, rel in MODELS.items():
        with tempfile.TemporaryDirectory() as d:
            tj = os.path.join(d, 'tokenizer.json')
            subprocess.run([sys.executable, REF, os.path.join(models_dir, rel), tj], check=True)
            tok = Tokenizer.from_file(tj)
            out[name] = [{'text': t, 'ids': tok.encode(t, add_special_tokens=False).ids} for t in TEXTS]
    with open(os.path.join(HERE, 'fixtures', 'tokenizer_ids.json'), 'w', encoding='utf-8') as f:
        lines = ['{']
        for i, (name, items) in enumerate(out.items()):
            lines.append(f' "{name}": [')
            lines += ['  ' + json.dumps(it, ensure_ascii=False) + (',' if j + 1 < len(items) else '')
                      for j, it in enumerate(items)]
            lines.append(' ]' + (',' if i + 1 < len(out) else ''))
        lines.append('}')
        f.write('\n'.join(lines) + '\n')

if __name__ == '__main__':
    main()
