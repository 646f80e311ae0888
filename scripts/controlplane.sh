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
# published k8s.io/* version. Binaries are cached under
# ${WASMSCHED_K8S_CACHE:-$HOME/.cache/wasmsched/k8s}/v$K8S_VERSION (first build
# about 8 minutes on 2 cores; cached: instant).
#
# No controller manager runs, so the API server starts without the
# ServiceAccount and TaintNodesByCondition admission plugins (pods would be
# refused for a missing service account; every node would keep a not-ready
# taint nobody removes) and without the endpoint reconciler.
set -euo pipefail
K8S_VERSION=${K8S_VERSION:-1.35.4}
CACHE=${WASMSCHED_K8S_CACHE:-$HOME/.cache/wasmsched/k8s}/v$K8S_VERSION

# k8smodule writes, in the current directory, the throw-away module that
# requires k8s.io/kubernetes with its staging modules at published versions.
k8smodule() {
  local staging=v0.${K8S_VERSION#1.}
  local gomod; gomod=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
  {
    printf 'module k8sbins\n\ngo 1.25.0\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$K8S_VERSION"
    awk -v v="$staging" '$2 == "=>" && $3 ~ /^\.\/staging\// { printf "\t%s => %s %s\n", $1, $1, v }' "$gomod"
    printf ')\n'
  } > go.mod
}

build() {
  if [[ -x $CACHE/kube-apiserver && -x $CACHE/etcd ]]; then echo "$CACHE"; return; fi
  mkdir -p "$CACHE"
  local work; work=$(mktemp -d); trap 'rm -rf "$work"' RETURN
  cd "$work"
  local minor; minor=$(cut -d. -f2 <<<"$K8S_VERSION")
  k8smodule
  go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@v$K8S_VERSION" >&2
  local etcd; etcd=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3) # the etcd this release pins
  go get -tool "go.etcd.io/etcd/server/v3@$etcd" >&2
  local vpkg=k8s.io/component-base/version
  go build -trimpath -ldflags "-s -w -X $vpkg.gitVersion=v$K8S_VERSION -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean" \
    -o "$CACHE/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2
  go build -trimpath -ldflags "-s -w" -o "$CACHE/etcd" go.etcd.io/etcd/server/v3 >&2
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
    -o "$CACHE/kube-scheduler" k8s.io/kubernetes/cmd/kube-scheduler >&2
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
