#!/usr/bin/env bash
# Runs the whole test suite: formatting, lints, the UI's type and i18n checks, unit,
# integration and end-to-end tests (the real desktop window under Xvfb through WebDriver).
# Tests that need the shared evaluation corpus (../shared) skip with a message when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
# Incremental state is kept per clone folder and never reused by a fresh clone: skip it.
export CARGO_INCREMENTAL=0

ensure_rust
if command -v dpkg >/dev/null 2>&1; then
  ensure_system_packages "${BUILD_PACKAGES[@]}" "${DESKTOP_PACKAGES[@]}" "${E2E_PACKAGES[@]}"
fi
use_fast_linker

ensure_build_space 20
echo "== UI: install, type check, i18n check, build (ui/dist is embedded in the app)"
build_ui
npm --prefix ui run --silent typecheck
npm --prefix ui run --silent i18n:check
echo "== answer evaluation sets: well-formed questions (their documents are fetched only to run them)"
python3 eval/debian-faq/check_questions.py --skip-docs
python3 eval/debian-faq/check_questions.py --set eval/gimp-help --skip-docs
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== models (the default embedders, the two small answer models and the OCR model the tests use, SHA-256 verified)"
# Without them model tests skip with a message, except under CI=true, where a skip fails.
if ! { cargo run --locked -q -p knowhub-cli -- models fetch &&
  cargo run --locked -q -p knowhub-cli -- models fetch smollm2-135m-instruct qwen2.5-coder-0.5b-instruct pp-ocrv6-small; }; then
  [ "${CI:-}" = "true" ] && { echo "models could not be fetched (CI=true: tests may not skip)" >&2; exit 1; }
  echo "warning: models not fetched; model tests will skip"
fi
echo "== PostgreSQL with pgvector (private clusters for the team store's tests, SHA-256 verified)"
if ! ensure_postgres; then
  [ "${CI:-}" = "true" ] && { echo "PostgreSQL could not be fetched (CI=true: tests may not skip)" >&2; exit 1; }
  echo "warning: PostgreSQL not fetched; team store tests will skip"
fi
if ! ensure_tls_postgres; then
  [ "${CI:-}" = "true" ] && { echo "no PostgreSQL with TLS (CI=true: tests may not skip)" >&2; exit 1; }
  echo "warning: no PostgreSQL with TLS; the TLS test will skip"
fi
echo "== tauri-driver (WebDriver for the end-to-end tests)"
ensure_tauri_driver
echo "== cargo test (includes tests/e2e.rs: the desktop window end to end, and the bindings freshness check)"
cargo test --workspace --locked
echo "== the .deb package: built, installed with apt-get, both binaries run from PATH"
# A release build of the app and the CLI (about 15 minutes cold), so only where asked: always
# under CI=true, else with KNOWHUB_PACKAGE_CHECK=1.
if [ "${CI:-}" = "true" ] || [ -n "${KNOWHUB_PACKAGE_CHECK:-}" ]; then
  scripts/package.sh --check
else
  echo "skipped (set KNOWHUB_PACKAGE_CHECK=1, or CI=true, to build and install the package)"
fi
