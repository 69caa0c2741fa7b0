#!/usr/bin/env bash
# Builds the portal's browser side into the site directory the server serves:
#   <site>/pkg/kqueen.js, kqueen_bg.wasm   wasm bundle (frontend crate) + wasm-bindgen glue
#   <site>/pkg/kqueen.css                  style/main.css
#   <site>/*                               public/
# <site> is $KQUEEN_SITE_ROOT, default target/site. `--release` builds the small optimised
# bundle (profile wasm-release + wasm-opt -Oz); the default is a quick debug bundle.
# Run scripts/setup.sh first (it installs wasm-bindgen, wasm-opt and the wasm32 std).
set -euo pipefail
export RUSTUP_AUTO_INSTALL=0
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source scripts/versions.env
release=0
[[ "${1:-}" == "--release" ]] && release=1
site="${KQUEEN_SITE_ROOT:-target/site}"
toolchain="$(scripts/wasm-toolchain.sh | tail -1)"
export PATH="$HOME/.cargo/bin:$root/tools/node_modules/.bin:$PATH"

have="$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')"
if [[ "$have" != "$WASM_BINDGEN_VERSION" ]]; then
  echo "build-site: wasm-bindgen $WASM_BINDGEN_VERSION is needed (found '${have:-none}'); run scripts/setup.sh" >&2
  exit 1
fi

if [[ $release == 1 ]]; then profile=wasm-release; else profile=dev; fi
outdir=$([[ $profile == dev ]] && echo debug || echo "$profile")
echo "build-site: frontend ($profile) with toolchain $toolchain" >&2
cargo "+$toolchain" build -p kqueen-frontend --lib --target wasm32-unknown-unknown --profile "$profile"

rm -rf "$site/pkg"
mkdir -p "$site/pkg"
wasm-bindgen --target web --no-typescript --out-dir "$site/pkg" --out-name kqueen \
  "target/wasm32-unknown-unknown/$outdir/kqueen_frontend.wasm"
if [[ $release == 1 ]]; then
  # Features come from the module's target_features section. Never --all-features: it turns
  # on proposals browsers reject ("Invalid import kind", compact imports).
  wasm-opt -Oz -o "$site/pkg/kqueen_bg.wasm.opt" "$site/pkg/kqueen_bg.wasm"
  mv "$site/pkg/kqueen_bg.wasm.opt" "$site/pkg/kqueen_bg.wasm"
fi
cp style/main.css "$site/pkg/kqueen.css"
cp -R public/. "$site/"
size=$(stat -c %s "$site/pkg/kqueen_bg.wasm")
gz=$(gzip -9 -c "$site/pkg/kqueen_bg.wasm" | wc -c)
echo "build-site: $site ready; kqueen_bg.wasm $((size / 1024)) KiB ($((gz / 1024)) KiB gzipped)" >&2
