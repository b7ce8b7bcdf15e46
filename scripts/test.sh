#!/usr/bin/env bash
# Runs the whole test suite: formatting, lints, unit, integration and end-to-end tests.
# Tests that need the shared evaluation corpus (../shared) skip with a message when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

ensure_rust
command -v dpkg >/dev/null 2>&1 && ensure_system_packages build-essential pkg-config

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== models (the default embedders, SHA-256 verified; model tests skip without them)"
cargo run --locked -q -p knowhub-cli -- models fetch || echo "warning: models not fetched; model tests will skip"
echo "== cargo test"
cargo test --workspace --locked
