#!/usr/bin/env bash
# controlplane.sh — a real kube-apiserver and etcd on loopback, for e2e tests.
#
#   scripts/controlplane.sh build          # build (or reuse) the binaries; prints their directory
#   scripts/controlplane.sh build-scheduler # opt-in: also upstream kube-scheduler (comparisons); prints its path
#   scripts/controlplane.sh start RUNDIR   # start etcd + kube-apiserver; writes RUNDIR/kubeconfig
#   scripts/controlplane.sh stop RUNDIR    # stop them
#
# With WASMSCHED_AUDIT=1, start also has the API server write an audit log
# of every request (metadata: user, user agent, verb, resource; one JSON
# line per request) to RUNDIR/audit.log, so a test can see what a client did.
#
# Why build: no release archives are reachable from here, but the Go module
# proxy serves k8s.io/kubernetes. It cannot be `go install`ed (its go.mod
# replaces the staging modules with local paths), so `build` writes a
# throw-away module that requires it and points every staging module at its
# published k8s.io/* version. K8S_VERSION picks the release (default
# 1.37.2; 1.35.x, 1.36.x and 1.37.x are the ones wasmsched supports, README:
# "Kubernetes versions"). etcd is the release the Kubernetes release itself
# tests with (the etcd entry of its build/dependencies.yaml, what its
# hack/lib/etcd.sh installs), built next to kube-apiserver when its go.mod
# pins the same etcd server module and in a module of its own when not
# (v1.35.4: dependencies.yaml 3.6.6, go.mod 3.6.5), so kube-apiserver is
# always built with exactly its release's dependencies. Binaries are cached
# under ${WASMSCHED_K8S_CACHE:-$HOME/.cache/wasmsched/k8s}/v$K8S_VERSION
# (first build about 10 minutes on 2 cores with empty Go caches, README:
# "The two commands"; cached: instant); `build` says on stderr which it has.
#
# No controller manager runs, so the API server starts without the
# ServiceAccount and TaintNodesByCondition admission plugins (pods would be
# refused for a missing service account; every node would keep a not-ready
# taint nobody removes) and without the endpoint reconciler.
set -euo pipefail
K8S_VERSION=${K8S_VERSION:-1.37.2}
if ! [[ $K8S_VERSION =~ ^1\.[0-9]+\.[0-9]+$ ]]; then
  echo "controlplane.sh: K8S_VERSION=$K8S_VERSION is not a Kubernetes release such as 1.37.2 (no leading v)" >&2
  exit 2
fi
CACHE=${WASMSCHED_K8S_CACHE:-$HOME/.cache/wasmsched/k8s}/v$K8S_VERSION

# k8smodule writes, in the current directory, the throw-away module that
# requires k8s.io/kubernetes with its staging modules at published versions,
# and sets K8S_DIR to the downloaded k8s.io/kubernetes source and K8S_GO to
# the Go version its go.mod states.
k8smodule() {
  local staging=v0.${K8S_VERSION#1.} json gomod
  if ! json=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" 2>&1); then
    echo "controlplane.sh: k8s.io/kubernetes v$K8S_VERSION cannot be downloaded from the Go module proxy:" >&2
    echo "$json" >&2
    exit 1
  fi
  gomod=$(sed -n 's/.*"GoMod": "\(.*\)",*/\1/p' <<<"$json")
  K8S_DIR=$(sed -n 's/.*"Dir": "\(.*\)",*/\1/p' <<<"$json")
  K8S_GO=$(awk '$1 == "go" { print $2; exit }' "$gomod")
  {
    printf 'module k8sbins\n\ngo %s\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$K8S_GO" "$K8S_VERSION"
    awk -v v="$staging" '$2 == "=>" && $3 ~ /^\.\/staging\// { printf "\t%s => %s %s\n", $1, $1, v }' "$gomod"
    printf ')\n'
  } > go.mod
}

# versions prints, on stderr, what the cache holds.
versions() {
  local what
  if [[ -f $CACHE/VERSIONS ]]; then what=$(tr '\n' ' ' < "$CACHE/VERSIONS")
  else what="kube-apiserver v$K8S_VERSION, etcd v$("$CACHE/etcd" --version 2>/dev/null | awk 'NR == 1 { print $3 }') "; fi
  echo "controlplane.sh: ${what}in $CACHE" >&2
}

build() {
  if [[ -x $CACHE/kube-apiserver && -x $CACHE/etcd ]]; then versions; echo "$CACHE"; return; fi
  mkdir -p "$CACHE"
  local work; work=$(mktemp -d); trap 'rm -rf "$work"' RETURN
  cd "$work"
  local minor; minor=$(cut -d. -f2 <<<"$K8S_VERSION")
  k8smodule
  go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@v$K8S_VERSION" >&2
  local vpkg=k8s.io/component-base/version
  go build -trimpath -ldflags "-s -w -X $vpkg.gitVersion=v$K8S_VERSION -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean" \
    -o "$CACHE/.kube-apiserver.$$" k8s.io/kubernetes/cmd/kube-apiserver >&2
  # etcd: the server this release tests with (build/dependencies.yaml)
  # when it says one, else the one its go.mod pins. A different one is
  # built in a module of its own so kube-apiserver keeps its release's
  # dependencies; if that fails, the pinned one is built instead.
  local pinned tested etcd from
  pinned=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
  tested=$(awk '/- name: "etcd"$/ { f = 1; next } f && $1 == "version:" { print $2; exit }' "$K8S_DIR/build/dependencies.yaml" 2>/dev/null || true)
  etcd=$pinned from="go.mod of k8s.io/kubernetes v$K8S_VERSION"
  if [[ -n $tested && v$tested != "$pinned" ]]; then
    etcd=v$tested from="build/dependencies.yaml of k8s.io/kubernetes v$K8S_VERSION; its go.mod pins $pinned"
    mkdir etcd
    ( cd etcd && printf 'module etcdbin\n\ngo %s\n' "$K8S_GO" > go.mod &&
      go get -tool "go.etcd.io/etcd/server/v3@$etcd" >&2 &&
      go build -trimpath -ldflags "-s -w" -o "$CACHE/.etcd.$$" go.etcd.io/etcd/server/v3 >&2 ) || {
      echo "controlplane.sh: etcd $etcd (build/dependencies.yaml) did not build; building $pinned, the one go.mod pins" >&2
      etcd=$pinned from="go.mod of k8s.io/kubernetes v$K8S_VERSION"
    }
  elif [[ -n $tested ]]; then
    from="build/dependencies.yaml and go.mod of k8s.io/kubernetes v$K8S_VERSION"
  fi
  if [[ $etcd == "$pinned" ]]; then
    go get -tool "go.etcd.io/etcd/server/v3@$etcd" >&2
    go build -trimpath -ldflags "-s -w" -o "$CACHE/.etcd.$$" go.etcd.io/etcd/server/v3 >&2
  fi
  mv "$CACHE/.kube-apiserver.$$" "$CACHE/kube-apiserver"
  mv "$CACHE/.etcd.$$" "$CACHE/etcd"
  printf 'kube-apiserver v%s,\netcd %s (%s)\n' "$K8S_VERSION" "$etcd" "$from" > "$CACHE/VERSIONS"
  versions
  echo "$CACHE"
}

# build-scheduler builds upstream kube-scheduler of the same release next to
# kube-apiserver, for side-by-side throughput comparisons (wasmsched perf).
# Opt-in: neither build nor the tests need it (about 5 more minutes).
build_scheduler() {
  if [[ -x $CACHE/kube-scheduler ]]; then echo "$CACHE/kube-scheduler"; return; fi
  mkdir -p "$CACHE"
  local work; work=$(mktemp -d); trap 'rm -rf "$work"' RETURN
  cd "$work"
  local minor; minor=$(cut -d. -f2 <<<"$K8S_VERSION")
  k8smodule
  go get -tool "k8s.io/kubernetes/cmd/kube-scheduler@v$K8S_VERSION" >&2
  local vpkg=k8s.io/component-base/version
  go build -trimpath -ldflags "-s -w -X $vpkg.gitVersion=v$K8S_VERSION -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean" \
    -o "$CACHE/.kube-scheduler.$$" k8s.io/kubernetes/cmd/kube-scheduler >&2
  # Renamed into place, so a build running beside this one (another
  # checkout) never leaves, or runs, a half-written binary.
  mv "$CACHE/.kube-scheduler.$$" "$CACHE/kube-scheduler"
  echo "$CACHE/kube-scheduler"
}

freeport() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

certs() { # CA, serving cert for 127.0.0.1, an admin client cert, service-account keys
  local p=$1; [[ -f $p/admin.crt ]] && return; mkdir -p "$p"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$p/ca.key" -out "$p/ca.crt" -days 3650 -subj /CN=wasmsched-test-ca 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout "$p/server.key" -out "$p/server.csr" -subj /CN=kube-apiserver 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > "$p/server.ext"
  openssl x509 -req -in "$p/server.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial -days 3650 -extfile "$p/server.ext" -out "$p/server.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout "$p/admin.key" -out "$p/admin.csr" -subj "/O=system:masters/CN=admin" 2>/dev/null
  printf 'extendedKeyUsage=clientAuth\n' > "$p/client.ext"
  openssl x509 -req -in "$p/admin.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial -days 3650 -extfile "$p/client.ext" -out "$p/admin.crt" 2>/dev/null
  openssl genrsa -out "$p/sa.key" 2048 2>/dev/null
  openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
}

start() {
  local run=$1 bins; bins=$(build); mkdir -p "$run"; run=$(cd "$run" && pwd)
  local pki=$run/pki; certs "$pki"
  local etcd_port peer_port api_port; etcd_port=$(freeport); peer_port=$(freeport); api_port=$(freeport)
  rm -rf "$run/etcd-data"
  "$bins/etcd" --name e --data-dir "$run/etcd-data" --unsafe-no-fsync \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "e=http://127.0.0.1:$peer_port" > "$run/etcd.log" 2>&1 &
  echo $! > "$run/etcd.pid"
  local audit=()
  if [[ ${WASMSCHED_AUDIT:-} == 1 ]]; then
    printf 'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n' > "$run/audit-policy.yaml"
    audit=(--audit-policy-file "$run/audit-policy.yaml" --audit-log-path "$run/audit.log" --audit-log-format json)
  fi
  "$bins/kube-apiserver" ${audit[@]+"${audit[@]}"} --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --tls-cert-file "$pki/server.crt" --tls-private-key-file "$pki/server.key" --client-ca-file "$pki/ca.crt" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range 10.0.0.0/24 --authorization-mode RBAC \
    --endpoint-reconciler-type none --disable-admission-plugins ServiceAccount,TaintNodesByCondition \
    > "$run/apiserver.log" 2>&1 &
  echo $! > "$run/apiserver.pid"
  for _ in $(seq 1 600); do
    curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://127.0.0.1:$api_port/readyz" >/dev/null 2>&1 && break
    kill -0 "$(cat "$run/apiserver.pid")" 2>/dev/null || { tail -20 "$run/apiserver.log" >&2; exit 1; }
    sleep 0.1
  done
  cat > "$run/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "https://127.0.0.1:$api_port", certificate-authority-data: "$(base64 -w0 "$pki/ca.crt")"}}]
users: [{name: admin, user: {client-certificate-data: "$(base64 -w0 "$pki/admin.crt")", client-key-data: "$(base64 -w0 "$pki/admin.key")"}}]
contexts: [{name: local, context: {cluster: local, user: admin}}]
current-context: local
KC
  echo "kube-apiserver ready at https://127.0.0.1:$api_port; kubeconfig: $run/kubeconfig"
}

stop() {
  local run=$1 p
  for p in apiserver etcd; do [[ -f $run/$p.pid ]] && kill "$(cat "$run/$p.pid")" 2>/dev/null || true; done
  sleep 1
  for p in apiserver etcd; do [[ -f $run/$p.pid ]] && { kill -9 "$(cat "$run/$p.pid")" 2>/dev/null || true; rm -f "$run/$p.pid"; }; done
  return 0
}

case ${1:-} in
  build) build ;;
  build-scheduler) build_scheduler ;;
  start) start "${2:?usage: controlplane.sh start RUNDIR}" ;;
  stop) stop "${2:?usage: controlplane.sh stop RUNDIR}" ;;
  *) echo "usage: controlplane.sh build | build-scheduler | start RUNDIR | stop RUNDIR" >&2; exit 2 ;;
esac
