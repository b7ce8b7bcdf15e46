#!/usr/bin/env python3
"""Validates an eval question set: eval/debian-faq/questions.jsonl by default (stdlib only).

Checks: one JSON object per line, unique ids, required fields and their types, the kinds,
the id pattern, the history rules (followup: 1-2 earlier questions; other kinds: none), that
every gold string (one alternative at least) occurs in the visible text of its gold document
(tags stripped, whitespace normalised, case-insensitive), that `doc`/`also` name existing files
of the question's language, and that unanswerable questions have no gold, doc or section.
Prints the counts per language x kind and checks the set's minimums.

Usage:
    python3 eval/debian-faq/check_questions.py [questions.jsonl] [--docs DIR] [--skip-docs]
    python3 eval/debian-faq/check_questions.py --set eval/gimp-help [--skip-docs]

--set DIR validates another set laid out like this one: DIR/questions.jsonl over DIR/docs/, with
the minimums of MINIMUMS[basename of DIR] (the Debian FAQ's for an unknown name). A questions file
given without --set is taken as its folder's set. --docs defaults to the docs/ folder beside the
questions file; --min KIND=N overrides a minimum.

The documents are fetched by scripts/fetch_eval_docs.sh [SET] into eval/SET/docs/ (git-ignored).
--skip-docs runs only the structural checks (for machines without the documents).

The normalisation used here (norm) is the one the scoring rule refers to: case folded, runs of
whitespace collapsed to one space, and whitespace next to a CJK character dropped (so "7 个" and
"7个" match alike). Visible text: tags removed (block-level tags separate words), entities
decoded, <head>/<script>/<style> skipped.
"""
import argparse
import html
import json
import os
import re
import sys
from html.parser import HTMLParser

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ("fact", "howto", "comparison", "followup", "unanswerable")
LANGS = {"en": "en", "zh-cn": "zh"}  # lang -> id prefix; lang is also the docs folder
REQUIRED = ("id", "lang", "kind", "history", "question", "gold", "doc", "section", "page")
OPTIONAL = ("also",)
# Minimums per set (by folder name). debian-faq: the check set; gimp-help: a development set.
MINIMUMS = {
    "debian-faq": {"total": 120, "fact": 50, "howto": 20, "comparison": 10, "followup": 12, "unanswerable": 15},
    "gimp-help": {"total": 80, "fact": 35, "howto": 15, "comparison": 8, "followup": 8, "unanswerable": 16},
}

CJK = r"\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_CJK_SPACE = re.compile(r"(?<=[%s]) | (?=[%s])" % (CJK, CJK))
_HAS_CJK = re.compile(r"[\u4e00-\u9fff]")

BLOCK_TAGS = {
    "address", "article", "aside", "blockquote", "body", "br", "caption", "dd", "div", "dl", "dt",
    "figcaption", "figure", "footer", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "html",
    "li", "main", "nav", "ol", "p", "pre", "section", "table", "tbody", "td", "tfoot", "th",
    "thead", "tr", "ul",
}
SKIP_TAGS = {"head", "script", "style", "title"}


class _TextExtractor(HTMLParser):
    """Visible text: inline tags vanish, block tags separate words, head/script/style skipped."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in SKIP_TAGS:
            self.skip += 1
        elif tag in BLOCK_TAGS:
            self.parts.append(" ")

    def handle_startendtag(self, tag, attrs):
        if tag in BLOCK_TAGS:
            self.parts.append(" ")

    def handle_endtag(self, tag):
        if tag in SKIP_TAGS:
            self.skip = max(0, self.skip - 1)
        elif tag in BLOCK_TAGS:
            self.parts.append(" ")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def visible_text(path):
    with open(path, encoding="utf-8") as f:
        parser = _TextExtractor()
        parser.feed(f.read())
        parser.close()
    return html.unescape("".join(parser.parts))


def norm(s):
    s = re.sub(r"\s+", " ", s.casefold()).strip()
    return _CJK_SPACE.sub("", s)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("questions", nargs="?", help="default: SET/questions.jsonl")
    ap.add_argument("--set", help="the set's folder (default: the questions file's, else this script's)")
    ap.add_argument("--docs", help="default: the docs/ folder beside the questions file")
    ap.add_argument("--min", action="append", default=[], metavar="KIND=N", help="override a minimum")
    ap.add_argument("--skip-docs", action="store_true", help="structural checks only")
    args = ap.parse_args()
    if args.set is None:
        args.set = os.path.dirname(os.path.abspath(args.questions)) if args.questions else HERE
    set_name = os.path.basename(os.path.normpath(os.path.abspath(args.set)))
    if args.questions is None:
        args.questions = os.path.join(args.set, "questions.jsonl")
    if args.docs is None:
        args.docs = os.path.join(os.path.dirname(os.path.abspath(args.questions)), "docs")
    minimums = dict(MINIMUMS.get(set_name, MINIMUMS["debian-faq"]))
    for m in args.min:
        k, _, n = m.partition("=")
        if k not in minimums or not n.isdigit():
            sys.exit(f"--min {m!r}: expected KIND=N with KIND in {list(minimums)}")
        minimums[k] = int(n)

    if not args.skip_docs and not os.path.isdir(args.docs):
        fetch = "scripts/fetch_eval_docs.sh" + ("" if set_name == "debian-faq" else f" {set_name}")
        sys.exit(f"{args.docs} is missing: run {fetch} first (or pass --skip-docs)")

    errors = []
    texts = {}

    def doc_text(rel):
        if rel not in texts:
            texts[rel] = norm(visible_text(os.path.join(args.docs, rel)))
        return texts[rel]

    ids, questions = set(), set()
    counts = {lang: {k: 0 for k in KINDS} for lang in LANGS}
    with open(args.questions, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for n, line in enumerate(lines, 1):
        where = f"line {n}"
        def err(msg):
            errors.append(f"{where}: {msg}")
        try:
            q = json.loads(line)
        except json.JSONDecodeError as e:
            err(f"not JSON: {e}")
            continue
        if not isinstance(q, dict):
            err("not a JSON object")
            continue
        where = f"line {n} ({q.get('id')})"
        missing = [k for k in REQUIRED if k not in q]
        unknown = [k for k in q if k not in REQUIRED + OPTIONAL]
        if missing:
            err(f"missing fields {missing}")
            continue
        if unknown:
            err(f"unknown fields {unknown}")
        qid, lang, kind = q["id"], q["lang"], q["kind"]
        if lang not in LANGS:
            err(f"lang {lang!r} not in {list(LANGS)}")
            continue
        if kind not in KINDS:
            err(f"kind {kind!r} not in {KINDS}")
            continue
        counts[lang][kind] += 1
        if not isinstance(qid, str) or not re.fullmatch(rf"{LANGS[lang]}-{kind}-\d{{3}}", qid):
            err(f"id should look like {LANGS[lang]}-{kind}-NNN")
        if qid in ids:
            err("duplicate id")
        ids.add(qid)

        question = q["question"]
        if not isinstance(question, str) or not question.strip():
            err("question must be a non-empty string")
            continue
        key = (tuple(q["history"]) if isinstance(q["history"], list) else (), norm(question))
        if key in questions:
            err("duplicate question")
        questions.add(key)
        history = q["history"]
        if not isinstance(history, list) or not all(isinstance(h, str) and h.strip() for h in history):
            err("history must be a list of non-empty strings")
            history = []
        if kind == "followup" and not 1 <= len(history) <= 2:
            err("a followup needs 1 or 2 earlier user questions in history")
        if kind != "followup" and history:
            err("only followup questions have a history")
        for s in [question] + history:
            if lang == "zh-cn" and not _HAS_CJK.search(s):
                err(f"Chinese question without Chinese text: {s!r}")
            if lang == "en" and _HAS_CJK.search(s):
                err(f"English question with Chinese text: {s!r}")
        if q["page"] is not None:
            err("page must be null (HTML documents)")

        gold, doc, also = q["gold"], q["doc"], q.get("also", [])
        if kind == "unanswerable":
            if gold != [] or doc is not None or q["section"] is not None or "also" in q:
                err("unanswerable: gold must be [], doc and section null, no also")
            continue
        if not isinstance(q["section"], str) or not q["section"].strip():
            err("section must be a non-empty string")
        if not isinstance(gold, list) or not gold:
            err("gold must be a non-empty list")
            continue
        alts_list = []
        for g in gold:
            alts = g if isinstance(g, list) else [g]
            if not alts or not all(isinstance(a, str) and a.strip() for a in alts):
                err(f"bad gold element {g!r}: a non-empty string or a non-empty list of them")
                continue
            alts_list.append(alts)
        docs = [doc] + (also if isinstance(also, list) else [])
        if not isinstance(also, list):
            err("also must be a list of paths")
        for d in docs:
            if not isinstance(d, str) or not d.startswith(lang + "/") or not d.endswith(".html"):
                err(f"doc {d!r} must be an HTML file under {lang}/")
                break
        else:
            if len(set(docs)) != len(docs):
                err("doc repeated in also")
            if args.skip_docs:
                continue
            absent = [d for d in docs if not os.path.isfile(os.path.join(args.docs, d))]
            if absent:
                err(f"no such document {absent}")
                continue
            text = doc_text(doc)
            for alts in alts_list:
                if not any(norm(a) in text for a in alts):
                    err(f"gold {alts!r} not found in {doc}")

    kinds_total = {k: sum(counts[l][k] for l in LANGS) for k in KINDS}
    total = sum(kinds_total.values())
    width = max(len(k) for k in KINDS + ("total",))
    print(f"{'':{width}} " + " ".join(f"{l:>6}" for l in LANGS) + f" {'total':>6}")
    for k in KINDS:
        print(f"{k:{width}} " + " ".join(f"{counts[l][k]:>6}" for l in LANGS) + f" {kinds_total[k]:>6}")
    print(f"{'total':{width}} " + " ".join(f"{sum(counts[l].values()):>6}" for l in LANGS) + f" {total:>6}")

    for k, minimum in minimums.items():
        have = total if k == "total" else kinds_total[k]
        if have < minimum:
            errors.append(f"too few {k}: {have} < {minimum}")
    if errors:
        print(f"\n{len(errors)} problem(s):", file=sys.stderr)
        for e in errors:
            print("  " + e, file=sys.stderr)
        sys.exit(1)
    print(f"\nOK: {total} questions" + (" (documents not checked)" if args.skip_docs else ", every gold string found in its document"))


if __name__ == "__main__":
    main()
