# Shared settings for the project's scripts (sourced, not run).
# Build output lives outside the clone so repeated runs and fresh clones reuse it.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/knowhub/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# Installs the Debian packages the build needs, when missing and when we can.
ensure_system_packages() {
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "please install: ${missing[*]}" >&2; return 1
    fi
  fi
  echo "installing system packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

ensure_rust() {
  if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
  fi
  if ! command -v cargo >/dev/null 2>&1; then
    echo "Rust is not installed: install it from https://rustup.rs (Rust 1.88 or newer), then re-run." >&2
    exit 1
  fi
}
