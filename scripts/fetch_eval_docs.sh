#!/usr/bin/env bash
# Fetches the documents of an eval question set into eval/SET/docs/. Nothing fetched here is
# committed: eval/*/docs/ is git-ignored.
#
#   debian-faq (default): the check set (eval/debian-faq/README.md). The HTML chapter pages of the
#     Debian FAQ 11.1 in English and Simplified Chinese, as shipped by Debian bookworm's packages
#     debian-faq and debian-faq-zh-cn.
#   gimp-help: the development set (eval/gimp-help/README.md). 20 pages of the GIMP 2.10 user
#     manual in English and Simplified Chinese, as shipped by Debian bookworm's packages
#     gimp-help-en and gimp-help-zh-cn 2.10.34-2.
#
# Usage: scripts/fetch_eval_docs.sh [SET]        (idempotent: does nothing when the docs are complete)
#        FORCE=1 scripts/fetch_eval_docs.sh [SET]  (fetch again even when complete)
#
# Needs apt-get and dpkg-deb (Debian/Ubuntu) and Debian's package archive with bookworm's
# versions of the packages. No root install: the .deb files are only downloaded and unpacked
# into a temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."

SET=${1:-debian-faq}
case "$SET" in
  debian-faq)
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
    ;;
  gimp-help)
    VERSION=2.10.34-2
    DEST=eval/gimp-help/docs
    PKG_EN=gimp-help-en
    PKG_ZH=gimp-help-zh-cn
    # SHA-256 of the .deb files (Debian bookworm, main, architecture all); the same values as
    # the SHA256 fields of bookworm's package index.
    SHA_EN=a2deec76763aaf2fcdd197bac0736cdcb0770ba993d48d233329e1c92b0bfe36 # gimp-help-en_2.10.34-2_all.deb
    SHA_ZH=4b2c2c8c0e92dde4d278d668e0ae83fd3731ef1e717d76240ae60339b703efda # gimp-help-zh-cn_2.10.34-2_all.deb
    # The pages the set uses, the same names in both languages. Only these: the Chinese manual
    # of 2.10.34 is translated in a few appendices only (history, GFDL, the web-images section);
    # every other page is English text under Chinese headings. See eval/gimp-help/README.md.
    PAGES="gimp-introduction-history gimp-introduction-history-early-days
      gimp-introduction-history-1-0 gimp-introduction-history-2-0 gimp-introduction-history-2-2
      gimp-introduction-history-2-4 gimp-introduction-history-2-6 gimp-using-web legal
      gfdl-1 gfdl-2 gfdl-3 gfdl-4 gfdl-5 gfdl-6 gfdl-7 gfdl-8 gfdl-9 gfdl-10 gfdl-addendum"
    # Every file the set needs, with its SHA-256, relative to $DEST.
    read -r -d '' MANIFEST <<'EOF' || true
1be134713c3d80268a263659c8d4859927c51198372865ff1db46e17c9f33245  en/gimp-introduction-history.html
9151888fe49a2411cb7f1b5914a561efcec61ada6a2837c59bc310dd854b0fa9  en/gimp-introduction-history-early-days.html
719ccf53fdbc1b50cb122f8bcf21d49d4423cde4599be81ca3964081cc56d897  en/gimp-introduction-history-1-0.html
318121a29a03ed626bb6f862c58908e10247d82982b15b57cc4798ca61056a8d  en/gimp-introduction-history-2-0.html
6dc8040ca7061f53921030c76ec9d7a5a4891d04d6ee4042cf0310a1344002fa  en/gimp-introduction-history-2-2.html
0a9f8d411fac9ec02c12731d9f29ade1817e5183b20347c4023677f9d2fe5394  en/gimp-introduction-history-2-4.html
4beea77a4c833e3acdbb2fe2bde5f9f6ac914ac631a96e2c29e023e0565125e6  en/gimp-introduction-history-2-6.html
328679a445281a664bde0247dd9360cb7fcc917a88faa5dff79777d31629a452  en/gimp-using-web.html
3acf53eb9777e8e0bae62af7cb0077c99e6a7c3a03b580b2159aefdcaf9f8855  en/legal.html
db192a8eb22111d98b25cb3e067aea22b57928bd00d1d119fc40fa73022506cc  en/gfdl-1.html
b70afe8b949f707d9a5933ea3ce4423175d771751b742c87202a4f7457d1a4c6  en/gfdl-2.html
a89222b52378ea481e69e9dce5adc457c4868868a0147f6af5c6666b3aa7c30e  en/gfdl-3.html
380074b1aaf371f064dd7532ef9dc8fb93647ab6ec98117a7b67c1e930ce8918  en/gfdl-4.html
8d101ea65b81981ea90aa7b22ad7ba87ff059db3f71f159f34c72c2a067e1150  en/gfdl-5.html
d8ecbcaab2a33150cf782d3a3734bea05b32bfe71c190a90215fbf1d3453018b  en/gfdl-6.html
00ba04bd731a5be00a3b7891810bf4b479cc08e537762dd67e6e4a2df61acb37  en/gfdl-7.html
82372a38402d52d4a5f3d99cf9589edcd1ff23fa357937b2694f42c53efbdee8  en/gfdl-8.html
c85d98dba438ad805267bd1e7ac6ce23662cdffe8dc966426e885965469451d2  en/gfdl-9.html
8ad900ea3432c02f3b722518add51f55e346d4865df5fc811e43d38f87088e3a  en/gfdl-10.html
a409cbc6cbd2107b3b36558bd19a147e18968a0b1ad2b75a3c519d8b905d8450  en/gfdl-addendum.html
6da6ba8b74eaac90e88c790b21222226998137d82c41a5c1845d140fbcf01591  zh-cn/gimp-introduction-history.html
aa2b0889c4d8c5d8fd2b645213c110bc12a50f9cc864484d99662dcda0bf8223  zh-cn/gimp-introduction-history-early-days.html
757ecef1dd0b9555bc4bafb1362715a96a2d12679907d75d6c60a2be0c35973f  zh-cn/gimp-introduction-history-1-0.html
4f77868f32a8dca3fe9832f4e2fbe67ec92b7fddb59ca5b9f6232f9a0a32592d  zh-cn/gimp-introduction-history-2-0.html
2e02b2e90a9be2a16560ff65ac0fede72975d1fb4d12bc9d064d4635bf61170e  zh-cn/gimp-introduction-history-2-2.html
e3e21cc071c24d1179844ccb42f57580d48e462954fc8705aaa61d758d3dd971  zh-cn/gimp-introduction-history-2-4.html
8b23e7f499fc016c7d24e2f74b70f7ef6d6bb84fef6a273c5f9dfa4117a3dae0  zh-cn/gimp-introduction-history-2-6.html
a1d96ab98a94fbaa52adb04ed21ee286bd0f619d77cdcc404f8a3ec07582c42d  zh-cn/gimp-using-web.html
246eae01635b632e376561de4ebed9d46cbd5b9a80ef1136b3038455e0778551  zh-cn/legal.html
d1ea458585b7d56f895a0a38b1081925ffec2334778fa026bbabb471e0ca827a  zh-cn/gfdl-1.html
42fdf727d20bbfac7a92bbe83f67463e68d14e66bcc02747aedda3dce336ce9a  zh-cn/gfdl-2.html
8484acb98ae61aec2f1a94b57def07bc254bcbd24c445e3bc19dd2c97d0bc1e2  zh-cn/gfdl-3.html
a8014cccd9e2d0354115bb2a3184e97c61ec60ccffaa94705edcb6e7edd4829e  zh-cn/gfdl-4.html
6ec7a7c9a6017e9828e6bc2e1351c29f8c21d9bde2b1d35b588c27752b79e6d5  zh-cn/gfdl-5.html
f7c64147226c5606e22379c476609ddc6803dd62fbc446a4eb2f2d88b52b24a4  zh-cn/gfdl-6.html
991892da73c16b1fa6678c31ae4b82921938df104a3940e3b75bd1a15e458c40  zh-cn/gfdl-7.html
7dee6c6c8ecdae1c8ae70002f03ac1ba5478b43c3d4c3b97c9a4797e761c96a7  zh-cn/gfdl-8.html
321cd544ce325bbacb5468709189f994e0424d7cbdbd6fc2d81d94a30056a589  zh-cn/gfdl-9.html
d35661c00628f7ad777544622086d66a247d95efdb0e76ef36a71e8d9078386b  zh-cn/gfdl-10.html
9734721d40419c125caa483c9e9d36fc3714c70eee728b944fbb3755ff205175  zh-cn/gfdl-addendum.html
EOF
    ;;
  *)
    echo "fetch_eval_docs: unknown set '$SET' (known: debian-faq, gimp-help)" >&2
    exit 2
    ;;
esac
NFILES=$(wc -l <<<"$MANIFEST")

complete() {
  [ -d "$DEST" ] && (cd "$DEST" && sha256sum --check --quiet --status - <<<"$MANIFEST")
}

if [ "${FORCE:-0}" != 1 ] && complete; then
  echo "fetch_eval_docs: $DEST is complete ($NFILES HTML files), nothing to do"
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

STAGE="$TMP/stage"
mkdir -p "$STAGE/en" "$STAGE/zh-cn"
case "$SET" in
  debian-faq)
    # Copy only the real HTML chapter pages: the English package also ships NAME.html symlinks
    # to NAME.en.html, which are skipped (-type f); the CSS, images, text and PDF are not copied.
    find "$TMP/en/usr/share/doc/debian/FAQ" -maxdepth 1 -type f -name '*.en.html' -exec cp -p {} "$STAGE/en/" \;
    find "$TMP/zh/usr/share/doc/debian/FAQ/zh-cn" -maxdepth 1 -type f -name '*.zh-cn.html' -exec cp -p {} "$STAGE/zh-cn/" \;
    ;;
  gimp-help)
    # Copy only the selected pages (the packages hold 685 pages each, plus about 60 MB of
    # images and the CSS, none of which the set needs). The zh-cn package's folder is zh_CN.
    for page in $PAGES; do
      cp -p "$TMP/en/usr/share/gimp/2.0/help/en/$page.html" "$STAGE/en/"
      cp -p "$TMP/zh/usr/share/gimp/2.0/help/zh_CN/$page.html" "$STAGE/zh-cn/"
    done
    ;;
esac
(cd "$STAGE" && sha256sum --check --quiet - <<<"$MANIFEST") || {
  echo "fetch_eval_docs: the unpacked HTML files do not match the manifest" >&2
  exit 1
}

mkdir -p "$DEST"
rm -rf "$DEST/en" "$DEST/zh-cn"
mv "$STAGE/en" "$STAGE/zh-cn" "$DEST/"
complete
echo "fetch_eval_docs: wrote $(find "$DEST" -type f -name '*.html' | wc -l) HTML files under $DEST"
