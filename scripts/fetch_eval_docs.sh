#!/usr/bin/env bash
# Fetches the documents of the Debian FAQ check set (eval/debian-faq/): the HTML chapter
# pages of the Debian FAQ 11.1 in English and Simplified Chinese, as shipped by Debian
# bookworm's packages debian-faq and debian-faq-zh-cn. Nothing fetched here is committed:
# eval/*/docs/ is git-ignored. See eval/debian-faq/README.md.
#
# Usage: scripts/fetch_eval_docs.sh        (idempotent: does nothing when the docs are complete)
#        FORCE=1 scripts/fetch_eval_docs.sh  (fetch again even when complete)
#
# Needs apt-get and dpkg-deb (Debian/Ubuntu) and Debian's package archive with bookworm's
# version 11.1 of both packages. No root install: the .deb files are only downloaded and
# unpacked into a temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=11.1
DEST=eval/debian-faq/docs
PKG_EN=debian-faq
PKG_ZH=debian-faq-zh-cn
# SHA-256 of the .deb files (Debian bookworm, main, architecture all).
SHA_EN=427426e0cfa6888622fc1d72631071cb4b5a1f86ccde722e7820bcef284de5d0 # debian-faq_11.1_all.deb
SHA_ZH=3545356b1aa04d87e91dd15e8406210cf5b4f476662e597897bcb42234591758 # debian-faq-zh-cn_11.1_all.deb

# Every file the check set needs, with its SHA-256, relative to $DEST.
read -r -d '' MANIFEST <<'EOF' || true
2eddec6dfc904c2274e587a48b1dbf888ee09c668f9d7bf5d70ae3c406b2c822  en/basic-defs.en.html
145fcb9b64ab58d9b58df3539a4d7e9c701c6ee544776fec03c93927afe803e0  en/choosing.en.html
1440c33ea96cc9458725f7d313b038c8a2cc71599e0243fa6a5ee882456745d1  en/compatibility.en.html
e0f97e7053deb62ced14eca9b00bf5f9dd7d1c210ea658b66fdba8780e814254  en/contributing.en.html
e0454b9519257309e236b5347ce41ec3b61b867ba7b548e3d8c8fa9bf53ffbe1  en/customizing.en.html
89b344ad7a6a8c641d31c3eb78a134cb9dc740fbee5702a35d203f8a8c85bd95  en/faqinfo.en.html
a6b992af9d5ab6c4e5267af5f4b16ceb599f9d5ba23e1349d1493927c8fc965d  en/ftparchives.en.html
62f8500b833dacf2e744aef56b6f9443ccd0c22f6c71c252edd0a59aa601fa9e  en/getting-debian.en.html
95c0ee96531c793215e1284e69216cf5c75947b8c9f2ab1ca863e375ab66744a  en/index.en.html
eca6626bc649787581416d22b466c44c91d6fae05b5188f33e83c40a56cc4ac5  en/kernel.en.html
c44bf907db9ad57714440ea969f8ca587b6df786bf1287d0d05c84d070e211c5  en/nextrelease.en.html
736df96913d1270199a80a25cdf27c9bb1d340c4210f91e4204e32d40f75dd56  en/pkg-basics.en.html
5d2f6d576621600d09591d88e96bdc6e994e47c32b1d1ac49154923a279ebe85  en/pkgtools.en.html
848f41003dcdf65c5f9d6d48ad8cfd7a64432d2b1b346ee8a992ae6d3f3b5ed0  en/redistributing.en.html
8537fc3eaefa67a3d42d22509d18be4a9a7b051d4a0799aa2ef6834cfe557ee5  en/software.en.html
729fd5eb5b3f6d497a567ff13dfde83cc37fde795009159e8804eaa4faa2cb18  en/support.en.html
939d5e69781cc2718aedb2ba0fb8662cb4d41db2845fafde833ace90f99aa1ef  en/uptodate.en.html
b7724077f3319c64906fdd41c101280ae779816d1d92be69248226013561f616  zh-cn/basic-defs.zh-cn.html
0da759b045e11e061085b8e031cfc5e90f8b20b4e8d57a55b9b1b0fd0ccf9994  zh-cn/choosing.zh-cn.html
f7d6af9301c5efd9cd73235b7366eee320149322e1df3061e6ef94f7561df540  zh-cn/compatibility.zh-cn.html
11fbf4779ef91fab9798f03e650d05d58c3ce07c54a450ab036c3ba7d9cd62a4  zh-cn/contributing.zh-cn.html
1e6b0ae1cae53df9790c8e7e3d5ce211f271c14e0f43b355b06454a2d9122fb1  zh-cn/customizing.zh-cn.html
b513b9ab3a78ca86343a33b68a2524f7c20611fc710f6cb6aedd3ce46ff9ad7b  zh-cn/faqinfo.zh-cn.html
71820b544799e9ef5f0b9fad90e12a47818e7b31c9f5a39c0973cbda4bf3af7f  zh-cn/ftparchives.zh-cn.html
f5ef2accb735cf8d80dca9671f6e939add47f1e0a7cca190e88bab8b91dd0b99  zh-cn/getting-debian.zh-cn.html
7cd74f8d335926d9fd63bd531c5dba59359b317550f64993788176352d9198b6  zh-cn/index.zh-cn.html
c9e9d64f8f2ef87e51508f090a396b40f301f77d307695337060b75151509f35  zh-cn/kernel.zh-cn.html
32394af7d0de2d3314aa2f10f8ce0e72b4f1f686fae598fef9618eeaa31f844f  zh-cn/nextrelease.zh-cn.html
4abe731f2c07dabeb6833d5643380bc9f64bbb6328ee7b38bd4b5a5bd203ff40  zh-cn/pkg-basics.zh-cn.html
f0bacd0e0819550ade4e16c28c8d8db66bf659ec902a92ba156d4bfea42f8d89  zh-cn/pkgtools.zh-cn.html
c7c5a024e7f323f61fd25efb6a9e5739840bcfa1cdc9943920d42c80fd381319  zh-cn/redistributing.zh-cn.html
ba00c9a1c84985392f338b1faf99715e18cce31491285a3c69ce6880c433b425  zh-cn/software.zh-cn.html
6c91a22ba56e95e073760baab4e0c82fa2f017e8567b2bf0c95f8b3f85de73fd  zh-cn/support.zh-cn.html
801aeb6087260e45310f16fb0942ba53eaedb53ce2f9dc709cf59e61aad98978  zh-cn/uptodate.zh-cn.html
EOF

complete() {
  [ -d "$DEST" ] && (cd "$DEST" && sha256sum --check --quiet --status - <<<"$MANIFEST")
}

if [ "${FORCE:-0}" != 1 ] && complete; then
  echo "fetch_eval_docs: $DEST is complete (34 HTML files), nothing to do"
  exit 0
fi

for tool in apt-get dpkg-deb sha256sum; do
  command -v "$tool" >/dev/null 2>&1 || { echo "fetch_eval_docs: needs $tool (a Debian system)" >&2; exit 1; }
done

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# apt downloads as the unprivileged _apt user where it can write the folder.
chmod 0777 "$TMP"

download() {
  (cd "$TMP" && apt-get download -q "$PKG_EN=$VERSION" "$PKG_ZH=$VERSION")
}
if ! download; then
  if [ "$(id -u)" = 0 ]; then
    echo "fetch_eval_docs: download failed; refreshing the package lists (apt-get update) and retrying" >&2
    apt-get update -q >/dev/null
    download
  else
    echo "fetch_eval_docs: apt-get download failed; run 'apt-get update' (as root) and try again" >&2
    exit 1
  fi
fi

verify() { # file expected-sha256
  local got
  got=$(sha256sum "$1" | cut -d' ' -f1)
  if [ "$got" != "$2" ]; then
    echo "fetch_eval_docs: SHA-256 mismatch for $(basename "$1"): got $got, expected $2" >&2
    exit 1
  fi
}
verify "$TMP/${PKG_EN}_${VERSION}_all.deb" "$SHA_EN"
verify "$TMP/${PKG_ZH}_${VERSION}_all.deb" "$SHA_ZH"

dpkg-deb -x "$TMP/${PKG_EN}_${VERSION}_all.deb" "$TMP/en"
dpkg-deb -x "$TMP/${PKG_ZH}_${VERSION}_all.deb" "$TMP/zh"

# Copy only the real HTML chapter pages: the English package also ships NAME.html symlinks
# to NAME.en.html, which are skipped (-type f); the CSS, images, text and PDF are not copied.
STAGE="$TMP/stage"
mkdir -p "$STAGE/en" "$STAGE/zh-cn"
find "$TMP/en/usr/share/doc/debian/FAQ" -maxdepth 1 -type f -name '*.en.html' -exec cp -p {} "$STAGE/en/" \;
find "$TMP/zh/usr/share/doc/debian/FAQ/zh-cn" -maxdepth 1 -type f -name '*.zh-cn.html' -exec cp -p {} "$STAGE/zh-cn/" \;
(cd "$STAGE" && sha256sum --check --quiet - <<<"$MANIFEST") || {
  echo "fetch_eval_docs: the unpacked HTML files do not match the manifest" >&2
  exit 1
}

mkdir -p "$DEST"
rm -rf "$DEST/en" "$DEST/zh-cn"
mv "$STAGE/en" "$STAGE/zh-cn" "$DEST/"
complete
echo "fetch_eval_docs: wrote $(find "$DEST" -type f -name '*.html' | wc -l) HTML files under $DEST"
