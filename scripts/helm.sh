#!/usr/bin/env bash
# helm.sh — the real helm (helm.sh/helm/v3) for the chart's tests.
#
#   scripts/helm.sh          # build (or reuse) helm; prints the binary's path
#
# Why build: no release archives are reachable from here, but the Go module
# proxy serves helm.sh/helm/v3. Like scripts/controlplane.sh, this writes a
# throw-away module that requires the pinned release and builds cmd/helm
# with the version stamps the release's own Makefile sets, so `helm version`
# and the Kubernetes version `helm lint`/`helm template` assume (its
# client-go's minor) are the release's. Cached under
# ${WASMSCHED_HELM_CACHE:-$HOME/.cache/wasmsched/helm}/$HELM_VERSION (first
# build a few minutes on 2 cores; cached: instant).
set -euo pipefail
HELM_VERSION=${HELM_VERSION:-v3.20.2}
CACHE=${WASMSCHED_HELM_CACHE:-$HOME/.cache/wasmsched/helm}/$HELM_VERSION

if [[ -x $CACHE/helm ]]; then echo "$CACHE/helm"; exit 0; fi
mkdir -p "$CACHE"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"
printf 'module helmbin\n\ngo 1.25.0\n' > go.mod
go get -tool "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
# The Kubernetes minor helm assumes without a cluster: that of the
# client-go this release pins (v0.35.x => 1.35).
kminor=$(go list -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2)
pkg=helm.sh/helm/v3
go build -trimpath -ldflags "-s -w -X $pkg/internal/version.version=$HELM_VERSION -X $pkg/internal/version.gitTreeState=clean \
  -X $pkg/pkg/lint/rules.k8sVersionMajor=1 -X $pkg/pkg/lint/rules.k8sVersionMinor=$kminor \
  -X $pkg/pkg/chartutil.k8sVersionMajor=1 -X $pkg/pkg/chartutil.k8sVersionMinor=$kminor" \
  -o "$CACHE/helm.tmp.$$" "$pkg/cmd/helm" >&2
mv "$CACHE/helm.tmp.$$" "$CACHE/helm"
echo "$CACHE/helm"
