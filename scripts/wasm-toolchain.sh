#!/usr/bin/env bash
# Makes a Rust toolchain able to compile for wasm32-unknown-unknown and prints its name on the
# last line of stdout (e.g. "stable" or "nightly").
#
# 1. The normal way, as on a laptop with internet: `rustup target add` with a short timeout.
# 2. The fallback, for machines that reach package registries but not rustup's servers: build
#    the wasm32 std once with -Zbuild-std on the installed nightly, from Debian's `rust-src`
#    package of the matching version, and install the rlibs into the nightly sysroot as a real
#    target. KQUEEN_WASM_FALLBACK=1 skips step 1 (CI forces it so the fallback stays tested).
#
# Idempotent: a toolchain that already has the target is reported at once.
set -euo pipefail
export RUSTUP_AUTO_INSTALL=0
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
log() { echo "wasm-toolchain: $*" >&2; }

has_wasm_std() { # $1 = toolchain
  local sysroot
  sysroot="$(rustc "+$1" --print sysroot 2>/dev/null)" || return 1
  compgen -G "$sysroot/lib/rustlib/wasm32-unknown-unknown/lib/libstd-*.rlib" >/dev/null
}

fallback="$WASM_FALLBACK_TOOLCHAIN"
if [[ "${KQUEEN_WASM_FALLBACK:-0}" != 1 ]]; then
  if has_wasm_std stable; then echo stable; exit 0; fi
  if has_wasm_std "$fallback"; then echo "$fallback"; exit 0; fi
  log "trying 'rustup target add wasm32-unknown-unknown' (60 s limit)"
  if timeout 60 rustup target add --toolchain stable wasm32-unknown-unknown >&2 && has_wasm_std stable; then
    echo stable; exit 0
  fi
  log "rustup could not add the target; building the wasm32 std locally instead"
fi
if has_wasm_std "$fallback"; then echo "$fallback"; exit 0; fi

if ! rustc "+$fallback" --version >/dev/null 2>&1; then
  log "the fallback needs the '$fallback' toolchain installed (it is absent); install it with rustup"
  exit 1
fi
sysroot="$(rustc "+$fallback" --print sysroot)"
# "rustc 1.97.0-nightly (...)" -> 1.97
minor="$(rustc "+$fallback" --version | sed -E 's/^rustc ([0-9]+\.[0-9]+).*/\1/')"
src_dst="$sysroot/lib/rustlib/src/rust/library"

if [[ ! -f "$src_dst/Cargo.lock" ]]; then
  log "fetching Debian's rust-src $minor.x (std sources for $fallback)"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  # A private apt configuration with the machine's own Debian mirror, suite sid, used only to
  # download one architecture-independent package. Nothing is installed from sid.
  mirror="$(grep -hoE '^URIs: *\S+' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -1 || true)"
  if [[ -z "$mirror" ]]; then
    mirror="$(grep -hoE '^deb +\S+' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | grep -v security | head -1 || true)"
  fi
  [[ -n "$mirror" ]] || { log "no Debian mirror found in /etc/apt"; exit 1; }
  mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/etc/preferences.d"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror sid main" >"$work/etc/sources.list"
  printf 'Package: *\nPin: release a=unstable\nPin-Priority: 100\n' >"$work/etc/preferences.d/sid"
  apt_opts=(-o "Dir::Etc::SourceList=$work/etc/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
    -o "Dir::Etc::PreferencesParts=$work/etc/preferences.d" -o "Dir::State::Lists=$work/lists"
    -o "Dir::Cache=$work/cache" -o "APT::Get::List-Cleanup=0")
  apt-get "${apt_opts[@]}" update -qq >&2
  version="$(apt-cache "${apt_opts[@]}" madison rust-src | awk -F'|' '{gsub(/ /,"",$2); print $2}' \
    | grep -E "^([0-9]+:)?$minor\." | head -1 || true)"
  [[ -n "$version" ]] || { log "sid has no rust-src $minor.x for $fallback"; exit 1; }
  log "downloading rust-src=$version"
  (cd "$work" && apt-get "${apt_opts[@]}" download "rust-src=$version" >&2)
  dpkg-deb -x "$work"/rust-src_*.deb "$work/x"
  lib="$(ls -d "$work"/x/usr/src/rustc-*/library | head -1)"
  [[ -f "$lib/Cargo.lock" ]] || { log "rust-src package has no library/Cargo.lock"; exit 1; }
  mkdir -p "$(dirname "$src_dst")"
  rm -rf "$src_dst"
  cp -a "$lib" "$src_dst"
fi

log "building the wasm32 std with $fallback (once; 2-3 minutes)"
crate="$(mktemp -d)"
mkdir -p "$crate/src"
printf '[package]\nname = "wasm_std_seed"\nversion = "0.0.0"\nedition = "2021"\n[workspace]\n' >"$crate/Cargo.toml"
: >"$crate/src/lib.rs"
(cd "$crate" && RUSTFLAGS=-Cembed-bitcode=yes cargo "+$fallback" build --release -q \
  -Zbuild-std=std,panic_abort,panic_unwind,test --target wasm32-unknown-unknown >&2)
dst="$sysroot/lib/rustlib/wasm32-unknown-unknown/lib"
mkdir -p "$dst"
find "$crate/target/wasm32-unknown-unknown/release/deps" -name 'lib*.rlib' ! -name 'libwasm_std_seed-*' -exec cp {} "$dst/" \;
rm -rf "$crate"
has_wasm_std "$fallback" || { log "std was built but is not visible to $fallback"; exit 1; }
log "wasm32-unknown-unknown installed into $fallback"
echo "$fallback"
