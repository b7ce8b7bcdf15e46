#!/usr/bin/env bash
# Builds the Linux package: a .deb with the desktop app (`knowhub-desktop`, with its desktop
# entry and icon), the `knowhub` CLI, and the dependencies Debian resolves (WebKitGTK, a CJK
# font). Models are not inside: the window downloads and verifies them on first run.
#   scripts/package.sh            build dist/knowhub_<version>_amd64.deb
#   scripts/package.sh --check    also install it with apt-get, run `knowhub --version` and
#                                 `knowhub-desktop --version` from PATH, then remove it
# The AppImage is not built: its tools (linuxdeploy, appimagetool) come only from GitHub, which
# these machines cannot reach.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
export CARGO_INCREMENTAL=0

ensure_rust
if command -v dpkg >/dev/null 2>&1; then
  ensure_system_packages "${BUILD_PACKAGES[@]}" "${DESKTOP_PACKAGES[@]}"
fi
use_fast_linker
ensure_build_space 20

# The UI's locked dependencies include the Tauri CLI (npm's prebuilt binary), which builds the
# app with the UI embedded and writes the package.
build_ui
echo "== building the CLI (dist profile: release, stripped)"
cargo build --profile dist --locked -p knowhub-cli
cli="$CARGO_TARGET_DIR/dist/knowhub"

echo "== building the app and the .deb"
# The CLI goes in beside the app through the deb's `files` (set here: its path is the build's).
# ui/dist is built above; the CLI would run `beforeBuildCommand` from ui/, where its
# `--prefix ui` does not resolve.
config=$(printf '{"build":{"beforeBuildCommand":"true"},"bundle":{"active":true,"linux":{"deb":{"files":{"/usr/bin/knowhub":"%s"}}}}}' "$cli")
ui/node_modules/.bin/tauri build --ci --bundles deb --config "$config" -- --profile dist --locked -p knowhub-desktop

version=$(sed -n 's/^ *"version": "\(.*\)",$/\1/p' tauri.conf.json | head -n1)
built=$(ls -t "$CARGO_TARGET_DIR"/dist/bundle/deb/*_"$version"_*.deb | head -n1)
mkdir -p dist
deb="dist/knowhub_${version}_$(dpkg --print-architecture 2>/dev/null || echo amd64).deb"
# The bundler names the package after the product in kebab case ("know-hub"); users look for
# `knowhub`, the name of its command, so the package is rebuilt with that name.
work=$(mktemp -d)
dpkg-deb -R "$built" "$work/pkg"
sed -i 's/^Package: .*/Package: knowhub/' "$work/pkg/DEBIAN/control"
dpkg-deb --root-owner-group --build "$work/pkg" "$deb" >/dev/null
rm -rf "$work"
echo "built $deb ($(du -h "$deb" | cut -f1))"
dpkg-deb --info "$deb" | sed -n 's/^ \(Package\|Version\|Depends\|Installed-Size\):/  \1:/p'

if [ "${1:-}" = "--check" ]; then
  echo "== installing $deb with apt-get and running the binaries from PATH"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  package=$(dpkg-deb --field "$deb" Package)
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "./$deb"
  trap 'DEBIAN_FRONTEND=noninteractive $sudo apt-get remove -y -qq "$package" >/dev/null' EXIT
  (cd / && knowhub --version && knowhub-desktop --version)
  test -f "/usr/share/applications/$(dpkg -L "$package" | sed -n 's#^/usr/share/applications/##p' | head -n1)"
  echo "installed and ran: $(command -v knowhub) $(command -v knowhub-desktop)"
fi
