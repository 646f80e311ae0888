#!/usr/bin/env bash
# registry.sh — a real OCI registry (the CNCF distribution registry) on
# loopback with TLS and basic auth, for the tests of modules from a registry.
#
#   scripts/registry.sh build                  # build (or reuse) the registry; prints its directory
#   scripts/registry.sh start RUNDIR USER PASS  # start it; writes RUNDIR/addr (host:port) and RUNDIR/ca.crt
#   scripts/registry.sh stop RUNDIR             # stop it
#
# Why build: as scripts/controlplane.sh does for kube-apiserver, `build`
# writes a throw-away module that requires
# github.com/distribution/distribution/v3 from the Go module proxy and
# builds its cmd/registry, plus regtool (scripts/registry/regtool.go), which
# makes the CA, the serving certificate and the bcrypt htpasswd file in Go,
# so neither openssl nor apache2-utils is needed. Cached under
# ${WASMSCHED_REGISTRY_CACHE:-$HOME/.cache/wasmsched/registry}/v$REGISTRY_VERSION
# (first build about 2 minutes on 2 cores; cached: instant).
set -euo pipefail
REGISTRY_VERSION=${REGISTRY_VERSION:-3.1.1} # v3.1.2 needs Go 1.26; the project builds with Go 1.25
CACHE=${WASMSCHED_REGISTRY_CACHE:-$HOME/.cache/wasmsched/registry}/v$REGISTRY_VERSION
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

build() {
  if [[ -x $CACHE/registry && -x $CACHE/regtool ]]; then echo "$CACHE"; return; fi
  mkdir -p "$CACHE"
  local work; work=$(mktemp -d); trap 'rm -rf "$work"' RETURN
  cd "$work"
  printf 'module registrybins\n\ngo 1.25.0\n' > go.mod
  go get -tool "github.com/distribution/distribution/v3/cmd/registry@v$REGISTRY_VERSION" >&2
  cp "$HERE/registry/regtool.go" regtool.go
  local crypto; crypto=$(go list -m -f '{{.Version}}' golang.org/x/crypto) # regtool's bcrypt: the version the registry pins
  go get "golang.org/x/crypto@$crypto" >&2
  go build -trimpath -ldflags "-s -w" -o "$CACHE/registry" github.com/distribution/distribution/v3/cmd/registry >&2
  go build -trimpath -ldflags "-s -w" -o "$CACHE/regtool" regtool.go >&2
  echo "$CACHE"
}

start() {
  local run=$1 user=$2 pass=$3 bins; bins=$(build); mkdir -p "$run"; run=$(cd "$run" && pwd)
  "$bins/regtool" setup "$run" "$user" "$pass"
  OTEL_TRACES_EXPORTER=none "$bins/registry" serve "$run/config.yml" > "$run/registry.log" 2>&1 &
  echo $! > "$run/registry.pid"
  if ! "$bins/regtool" wait "$run"; then tail -20 "$run/registry.log" >&2; stop "$run"; exit 1; fi
  echo "registry ready at https://$(cat "$run/addr"); CA: $run/ca.crt"
}

stop() {
  local run=$1
  [[ -f $run/registry.pid ]] || return 0
  kill "$(cat "$run/registry.pid")" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$(cat "$run/registry.pid")" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$(cat "$run/registry.pid")" 2>/dev/null || true
  rm -f "$run/registry.pid"
}

case ${1:-} in
  build) build ;;
  start) start "${2:?usage: registry.sh start RUNDIR USER PASS}" "${3:?user}" "${4:?password}" ;;
  stop) stop "${2:?usage: registry.sh stop RUNDIR}" ;;
  *) echo "usage: registry.sh build | start RUNDIR USER PASS | stop RUNDIR" >&2; exit 2 ;;
esac
