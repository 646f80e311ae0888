#!/usr/bin/env bash
# build-rust-plugin.sh — builds the Rust example policy module
# (plugins-rust/zonepreference) with Debian's rustc and Rust standard
# library for wasm32, into plugins-rust/dist/zonepreference.wasm.
#
# Why Debian's rustc (/usr/bin/rustc, not whatever rustc is first on PATH):
# the committed build must be byte-for-byte reproducible, and a pinned
# distribution compiler is what a fresh machine of this kind gets. No
# cargo, no crates: one crate, plain rustc.
#
#   scripts/build-rust-plugin.sh           # rebuild the committed module
#   scripts/build-rust-plugin.sh --check   # rebuild to a temp file; fail if a byte differs
#
# Installs rustc, libstd-rust-dev-wasm32 and lld-14 with apt when missing
# (root or sudo). Every package is named: Debian's rustc links wasm32
# through /usr/bin/rust-lld, a symlink to lld-14, and lld-14 is only a
# Recommends of libstd-rust-dev-wasm32, which --no-install-recommends skips.
set -euo pipefail

RUSTC=/usr/bin/rustc
TARGET=wasm32-unknown-unknown
root=$(cd "$(dirname "$0")/.." && pwd)
src_dir=plugins-rust/zonepreference
out=plugins-rust/dist/zonepreference.wasm

mode=build
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

# -e follows the symlink: rust-lld without lld-14 behind it is missing.
if [[ ! -x $RUSTC || ! -d /usr/lib/rustlib/$TARGET/lib || ! -e /usr/bin/rust-lld ]]; then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "build-rust-plugin: need root or sudo to apt-get install rustc" >&2; exit 1; }
    SUDO=sudo
  fi
  echo "build-rust-plugin: installing rustc, libstd-rust-dev-wasm32 and lld-14 (apt)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends rustc libstd-rust-dev-wasm32 lld-14 >/dev/null
  [[ -e /usr/bin/rust-lld ]] || { echo "build-rust-plugin: /usr/bin/rust-lld does not resolve after installing lld-14" >&2; exit 1; }
fi

# -C opt-level=s, LTO and one codegen unit: small and deterministic.
# panic=abort: a panic traps, which the host treats like any other trap.
# strip=symbols: no name section. The 64 KiB stack (rust-lld's default is
# 1 MiB) keeps an instance's initial memory small; the module does not
# recurse. The source path is made relative so the checkout's location
# leaves no trace in the bytes.
build() {
  (cd "$root/$src_dir" && $RUSTC --edition 2021 --crate-type cdylib --crate-name zonepreference \
    --target $TARGET -C opt-level=s -C lto -C codegen-units=1 -C panic=abort -C strip=symbols \
    -C link-arg=-zstack-size=65536 --remap-path-prefix="$root/$src_dir=." \
    -o "$1" src/lib.rs)
}

echo "build-rust-plugin: $($RUSTC --version)"
if [[ $mode == build ]]; then
  mkdir -p "$root/$(dirname $out)"
  build "$root/$out"
  chmod 644 "$root/$out"
  echo "build-rust-plugin: $out ($(wc -c < "$root/$out") bytes)"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
build "$tmp/check.wasm"
if cmp -s "$tmp/check.wasm" "$root/$out"; then
  echo "build-rust-plugin: $out reproduces ($(wc -c < "$root/$out") bytes)"
else
  echo "build-rust-plugin: $out differs from a fresh build of $src_dir (rustc $($RUSTC --version)): run scripts/build-rust-plugin.sh and commit" >&2
  exit 1
fi
