#!/usr/bin/env bash
# Installs what KQueen needs on a fresh Debian machine, skipping what is already there.
#   scripts/setup.sh run    what building and running the portal needs
#   scripts/setup.sh test   the above, plus what the tests need (Chromium, browser-test driver,
#                           moto as the S3 test server,
#                           containerd, runc, the CNI plugins, busybox-static and kubectl for
#                           real nodes, a running PostgreSQL when one is installed but stopped)
# Every version is pinned in scripts/versions.env. Nothing is downloaded from outside the
# package registries (Debian, the crate registry, npm, PyPI).
set -euo pipefail
export RUSTUP_AUTO_INSTALL=0
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source scripts/versions.env
mode="${1:-run}"
log() { echo "setup: $*" >&2; }
export PATH="$HOME/.cargo/bin:$PATH"

as_root() { if [[ $(id -u) == 0 ]]; then "$@"; else sudo "$@"; fi; }
apt_updated=0
# Another install running (unattended upgrades, a second setup) holds dpkg's lock: wait for it
# (up to 10 minutes) rather than fail.
apt_wait=(-o DPkg::Lock::Timeout=600)
apt_install() { # packages...
  if [[ $apt_updated == 0 ]]; then as_root apt-get "${apt_wait[@]}" update -qq; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get "${apt_wait[@]}" install -y -qq --no-install-recommends "$@" >&2
}

command -v cargo >/dev/null || { log "cargo not found: install Rust with rustup first"; exit 1; }
command -v npm >/dev/null || apt_install nodejs npm

# 0. protoc and the well-known .proto files (libprotobuf-dev, only "recommended" by
#    protobuf-compiler): etcd-client (the vault's etcd backend) compiles etcd's gRPC protocol
#    at build time and imports google/protobuf/descriptor.proto.
if ! command -v protoc >/dev/null || [[ ! -e /usr/include/google/protobuf/descriptor.proto ]]; then
  apt_install protobuf-compiler libprotobuf-dev
fi

# 1. A toolchain that compiles to wasm32 (rustup, or the local fallback build of std).
toolchain="$(scripts/wasm-toolchain.sh | tail -1)"
log "wasm32 toolchain: $toolchain"

# 2. wasm-bindgen CLI, exactly the version of the wasm-bindgen crate in Cargo.lock.
locked="$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/"/,""); print $3}' Cargo.lock)"
if [[ -n "$locked" && "$locked" != "$WASM_BINDGEN_VERSION" ]]; then
  log "Cargo.lock has wasm-bindgen $locked but scripts/versions.env pins $WASM_BINDGEN_VERSION"
  exit 1
fi
if [[ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$WASM_BINDGEN_VERSION" ]]; then
  log "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (a few minutes, once)"
  # Not --locked: one of its locked dependencies is missing from the registry mirror.
  cargo install -q wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
fi

# 3. npm tools: wasm-opt (binaryen) for release bundles.
npm_ci() { # dir, marker file
  if [[ ! -e "$1/$2" ]] || ! (cd "$1" && npm ls --depth=0 >/dev/null 2>&1); then
    log "npm ci in $1"
    (cd "$1" && npm ci --no-fund --no-audit --loglevel=error >&2)
  fi
}
npm_ci tools node_modules/.bin/wasm-opt
if [[ -x /usr/bin/wasm-opt ]]; then
  log "warning: /usr/bin/wasm-opt (Debian binaryen) is installed; KQueen uses tools/node_modules/.bin/wasm-opt instead"
fi

if [[ "$mode" == test ]]; then
  # 4. Browser tests: Debian's Chromium driven by playwright-core (no browser download).
  [[ -x /usr/bin/chromium ]] || apt_install chromium
  npm_ci end2end node_modules/playwright-core/package.json
  # 5. The API fuzzer (scripts/api-fuzz.sh) installs schemathesis into a venv with pip.
  python3 -c 'import ensurepip, venv' 2>/dev/null || apt_install python3-venv
  # 6. Real nodes (the test kit's node lab): containerd, runc and the CNI plugins run pods;
  #    images are built from busybox-static; kubectl drives the pods (logs, exec).
  node_packages=()
  for pair in containerd:containerd runc:runc unshare:util-linux ip:iproute2; do
    command -v "${pair%%:*}" >/dev/null || node_packages+=("${pair#*:}")
  done
  [[ -x /usr/lib/cni/bridge ]] || node_packages+=(containernetworking-plugins)
  # The images copy /bin/busybox into an empty root: it must be the static build.
  dpkg -s busybox-static >/dev/null 2>&1 || node_packages+=(busybox-static)
  command -v kubectl >/dev/null || node_packages+=(kubernetes-client)
  if (( ${#node_packages[@]} )); then apt_install "${node_packages[@]}"; fi
  # 7. Backup archives in an S3-compatible store (core/tests/backup_s3.rs): moto's server,
  #    pinned with its dependencies, in a venv under target/; the test finds it through the
  #    link target/moto/moto_server.
  moto_constraints=scripts/moto.constraints.txt
  moto_venv="target/moto/venv-$MOTO_VERSION-$(sha256sum "$moto_constraints" | cut -c1-12)"
  if [[ ! -x "$moto_venv/bin/moto_server" ]]; then
    log "installing moto $MOTO_VERSION (S3 test server) into $moto_venv"
    rm -rf "$moto_venv"
    python3 -m venv "$moto_venv"
    "$moto_venv/bin/pip" install -q --disable-pip-version-check -c "$moto_constraints" \
      "moto[s3]==$MOTO_VERSION" flask flask-cors >&2
  fi
  ln -sfn "$root/$moto_venv/bin/moto_server" target/moto/moto_server
  # 8. Store tests also run on PostgreSQL (127.0.0.1:5432): start a stopped local cluster.
  if [[ "${KQUEEN_TEST_SKIP_POSTGRES:-0}" != 1 ]] && command -v pg_isready >/dev/null \
    && ! pg_isready -q -h 127.0.0.1 -p 5432 && command -v pg_ctlcluster >/dev/null; then
    log "starting the local PostgreSQL cluster"
    as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
  fi
fi
log "done ($mode)"
