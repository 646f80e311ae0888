#!/usr/bin/env bash
# install-tinygo.sh — builds TinyGo from the Go module proxy against Debian's LLVM 19.
#
# Why build from source: no TinyGo release archive is reachable from the
# registries this project may use, but the TinyGo module is on the Go module
# proxy and Debian ships LLVM 19, a prebuilt wasi-libc and compiler-rt.
#
# Idempotent: an install whose stamp matches TINYGO_VERSION is left alone.
# Needs: Go on PATH, apt (root or sudo) for the LLVM/wasi packages.
#
#   scripts/install-tinygo.sh            # installs into $TINYGO_PREFIX (default /opt/tinygo)
#   source /opt/tinygo/env.sh; tinygo version
set -euo pipefail
PREFIX=${TINYGO_PREFIX:-/opt/tinygo}
TINYGO_VERSION=${TINYGO_VERSION:-v0.40.1}
GO_FOR_TINYGO=${GO_FOR_TINYGO:-go1.25.9} # TinyGo 0.40.x compiles against a Go <= 1.25 standard library
stamp="$TINYGO_VERSION/$GO_FOR_TINYGO/llvm19"

# The stamp alone is not enough: a system package (binaryen's wasm-opt) can
# be removed after TinyGo was built, so its tools are checked too.
if [[ -f "$PREFIX/.wasmsched-stamp" && "$(cat "$PREFIX/.wasmsched-stamp")" == "$stamp" && -x "$PREFIX/build/tinygo" ]] \
   && command -v wasm-opt >/dev/null && [[ -f /usr/lib/wasm32-wasi/libc.a ]] \
   && [[ -f /usr/lib/llvm-19/lib/clang/19/lib/wasi/libclang_rt.builtins-wasm32.a ]]; then
  echo "tinygo $TINYGO_VERSION already installed in $PREFIX"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-tinygo: need root or sudo to apt-get install LLVM 19" >&2; exit 1; }
  SUDO=sudo
fi

# binaryen: TinyGo runs its wasm-opt on every wasm build with -opt=s/z/2;
# without it a build stops with "could not find wasm-opt".
APT_PACKAGES=(llvm-19-dev libclang-19-dev clang-19 lld-19 wasi-libc libclang-rt-19-dev-wasm32 binaryen)
echo "install-tinygo: apt packages (LLVM 19, wasi-libc, compiler-rt for wasm32, binaryen)"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${APT_PACKAGES[@]}" >/dev/null

echo "install-tinygo: TinyGo $TINYGO_VERSION source from the Go module proxy"
# 'go install pkg@version' needs the proxy's version list, which is refused for
# this module; downloading the exact version works.
dir=$(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json "github.com/tinygo-org/tinygo@$TINYGO_VERSION" \
  | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
[[ -n "$dir" ]] || { echo "install-tinygo: could not download tinygo $TINYGO_VERSION" >&2; exit 1; }
$SUDO rm -rf "$PREFIX"
$SUDO mkdir -p "$PREFIX"
$SUDO cp -r "$dir/." "$PREFIX/"
$SUDO chmod -R u+w "$PREFIX"
$SUDO chown -R "$(id -u):$(id -g)" "$PREFIX"
mkdir -p "$PREFIX/src/net" # a git submodule missing from the module zip; TinyGo opens it unconditionally

echo "install-tinygo: compiling TinyGo (about 2 minutes on 2 cores)"
(cd "$PREFIX" && CGO_ENABLED=1 go build -trimpath -tags llvm19 -o build/tinygo .)

echo "install-tinygo: fetching the $GO_FOR_TINYGO standard library"
GOTOOLCHAIN=$GO_FOR_TINYGO go version >/dev/null
GO_STD_BIN=$(GOTOOLCHAIN=$GO_FOR_TINYGO go env GOROOT)/bin

# The build target (Debian's prebuilt wasi-libc and compiler-rt, whose
# sources are git submodules the module zip lacks; -scheduler=none) is not
# installed here: it lives in the repository, host/tools/pluginbuild/wasip1-plugin.json,
# and `wasmsched plugin build` carries its own copy of it.

cat > "$PREFIX/env.sh" <<ENV
export TINYGOROOT=$PREFIX
export PATH=$GO_STD_BIN:$PREFIX/build:\$PATH
ENV
echo "$stamp" > "$PREFIX/.wasmsched-stamp"
echo "install-tinygo: done. source $PREFIX/env.sh; tinygo version"
