# wasmsched — build, test and benchmark.
#
#   make demo    run the embedded default (in-memory cluster simulation)
#   make build   build/wasmsched, the release binary (what the image ships): cgo and
#                -tags wasmtime, so modules run on wasmtime by default; stamped with the
#                checkout's version and revision (wasmsched version; go run and a build
#                in a git worktree carry none). Needs a C compiler (gcc)
#   make build-static  build/wasmsched, the static pure-Go build (CGO_ENABLED=0): wazero
#                only, for platforms without cgo (what go run and go build give)
#   make test    everything CI runs: wasm reproducibility (TinyGo and Rust builds), vet,
#                unit tests (-race on the host; includes the README's plugin walk-through),
#                the wasmtime backend's tests (cgo), then the e2e suite against a real
#                kube-apiserver and etcd
#   make test-wasmtime  the wasmtime backend (-tags wasmtime, cgo) and the conformance suite,
#                and scripts/check-release.sh: the release binary built as the Dockerfile
#                builds it runs on distroless/cc-debian12 (its libraries, glibc <= 2.36)
#   make wasm    rebuild the committed TinyGo builds of the policy bundles
#   make bench   the benchmarks recorded in docs/PERFORMANCE.md
#   make bench-report  run docs/PERFORMANCE.md's benchmark table (Wasm against native,
#                rounds alternated) and write it and docs/bench-ratios.svg back;
#                BENCH_ROUNDS=N (default 3), BENCH_ONLY=row,row (not part of make test)
#   make chart   the Helm chart (deploy/helm/wasmsched): helm lint and helm template for
#                each engine mix, the rendered RBAC checked, deploy/wasmsched.yaml not drifted
#   make manifest  regenerate deploy/wasmsched.yaml from the chart
#   make report-test  simulate --report's page in headless Chromium (Debian's, installed
#                by scripts/chromium.sh) for every example
#   make e2e     end-to-end tests against a real kube-apiserver v1.37.2 (builds it once);
#                K8S_VERSION=1.35.4 make e2e against v1.35.4; runs the release (wasmtime)
#                build when a C compiler is there, WASMSCHED_E2E_RUNTIME=wazero the static one
#   make perf-e2e  only the load driver's end-to-end test (wasmsched perf against serve)
#   make sidebyside  wasmsched serve against kube-scheduler v1.37.2 on a real API server
#                (NODES=1000,5000 by default; scripts/sidebyside.sh; not part of make test)
#   make parity  wasmsched against kube-scheduler v1.37.2's own framework on generated
#                clusters: 1000 cases of each kind (single pod, queue, preemption,
#                profiles, labelkeys; test/parity, docs/PARITY.md; not part of make test)
#   make tinygo  install TinyGo (needs root/sudo for apt)

GO            ?= go
# What `wasmsched version` reports for make build and make demo, from the
# checkout (overridable: make build VERSION=v0.3.0). Recursive, so git runs
# only for the targets that use them.
VERSION       ?= $(shell git describe --tags --dirty 2>/dev/null)
REVISION      ?= $(shell git rev-parse HEAD 2>/dev/null)
REVISION_TIME ?= $(shell git show -s --format=%cI HEAD 2>/dev/null)
MODIFIED      ?= $(shell git rev-parse HEAD >/dev/null 2>&1 && { test -z "$$(git status --porcelain 2>/dev/null)" && echo false || echo true; })
VERSION_LDFLAGS = -X main.version=$(VERSION) -X main.revision=$(REVISION) -X main.revisionTime=$(REVISION_TIME) -X main.modified=$(MODIFIED)
TINYGO_PREFIX ?= /opt/tinygo
TINYGO_ENV     = . $(TINYGO_PREFIX)/env.sh
# -scheduler=none: the asyncify scheduler costs 0.2-0.5 ms per exported call.
# The target (host/tools/pluginbuild/wasip1-plugin.json) links Debian's wasi-libc
# and compiler-rt; `wasmsched plugin build` uses the same file.
# -no-debug: no DWARF, so builds are small and byte-for-byte reproducible.
# -opt=s: with all nine default plugins -opt=2 makes a 243 KB bundle, over
# the 200 KB budget; -opt=s makes 174 KB and measured ~9% slower per node
# (docs/PERFORMANCE.md).
TINYGO_FLAGS   = -target=$(CURDIR)/host/tools/pluginbuild/wasip1-plugin.json -buildmode=c-shared -scheduler=none -no-debug
# Builds optimised for speed (-opt=2) instead of size (-opt=s): the
# knative bundle runs once per vreplica step over every adapter pod, and
# inlining its state accessors makes it ~1.6x faster at 122 KB.
TINYGO_OPT2    = ./cmd/knative
# Builds whose panics trap at once (-panic=trap) instead of printing first:
# the builtin bundles. TinyGo gives every function from which a printing
# panic (a call to WASI's fd_write) is reachable a GC shadow-stack frame;
# trapping drops those frames from the hot per-node code (~15% per node,
# docs/PERFORMANCE.md) and ~7 KB from the default bundle. A trap still
# names the function it happened in (guestout.TrapSite). Test guests and
# examples keep their panic messages.
TINYGO_TRAP    = ./cmd/default ./cmd/batchpreemption ./cmd/eviction ./cmd/knative
# Builds that never collect garbage (-gc=leaking): the default bundle.
# On Wasm a collector needs a shadow stack, a frame TinyGo links, zeroes
# and fills in every function that holds a pointer across a call that
# might collect, and every bounds check counts as such a call: ~25% of the
# per-node time. Without a collector the heap only grows; the host
# replaces an instance whose memory has grown for the last time between
# two cycles (guest.Pool.Put) and the new one mirrors the cluster
# afresh (docs/ARCHITECTURE.md, "Guests without a collector").
TINYGO_LEAKING = ./cmd/default
# PKG_FLAGS sets $$flags to the per-package flags of $$pkg (shell).
PKG_FLAGS      = flags=-opt=s; case " $(TINYGO_OPT2) " in *" $$pkg "*) flags=-opt=2;; esac; \
	case " $(TINYGO_TRAP) " in *" $$pkg "*) flags="$$flags -panic=trap";; esac; \
	case " $(TINYGO_LEAKING) " in *" $$pkg "*) flags="$$flags -gc=leaking";; esac

# guest main package (under plugins-wasm/) => committed TinyGo build (repo-relative)
WASM_BUILDS = \
	./cmd/default=plugins-wasm/dist/default.tinygo.wasm \
	./testguests/misbehave=plugins-wasm/testguests/misbehave/misbehave.tinygo.wasm \
	./cmd/batchpreemption=plugins-wasm/dist/batchpreemption.tinygo.wasm \
	./cmd/eviction=plugins-wasm/dist/eviction.tinygo.wasm \
	./cmd/knative=plugins-wasm/dist/knative.tinygo.wasm \
	./examples/taintviolation/cmd=plugins-wasm/examples/taintviolation/taintviolation.tinygo.wasm \
	./examples/brokerzone/cmd=plugins-wasm/examples/brokerzone/brokerzone.tinygo.wasm

GUEST_MODULES = abi guest-sdk plugins-wasm

.PHONY: all demo build build-static test vet unit test-wasmtime report-test e2e perf-e2e sidebyside parity check-wasm wasm wasm-go bench bench-report tinygo fmt
.PHONY: rust-wasm check-rust chart manifest

all: test

demo:
	$(GO) run -ldflags '$(VERSION_LDFLAGS)' ./cmd/wasmsched simulate examples/cluster.yaml --config examples/profiles.yaml

# scripts/build-release.sh is the one definition of the release build:
# the Dockerfile and scripts/check-release.sh run it too.
RELEASE_ENV = GO='$(GO)' VERSION='$(VERSION)' REVISION='$(REVISION)' REVISION_TIME='$(REVISION_TIME)' MODIFIED='$(MODIFIED)'
build:
	$(RELEASE_ENV) scripts/build-release.sh build/wasmsched wasmtime

build-static:
	$(RELEASE_ENV) scripts/build-release.sh build/wasmsched wazero

test: check-wasm check-rust vet unit chart test-wasmtime report-test e2e

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	@for m in $(GUEST_MODULES); do (cd $$m && $(GO) vet ./... && GOOS=wasip1 GOARCH=wasm $(GO) vet ./...) || exit 1; done

unit:
	@for m in $(GUEST_MODULES); do (cd $$m && $(GO) test -count=1 ./...) || exit 1; done
	$(GO) test -count=1 -race ./...

# test-wasmtime runs the wasmtime backend (host/platform/runtime/wasmtime, built only with
# -tags wasmtime) and the conformance suite with that tag. It needs cgo:
# wasmtime-go links the libwasmtime.a shipped in its module, so a C
# compiler is all it takes (CI has gcc). Without one it fails under CI
# and says it skipped otherwise.
test-wasmtime:
	@cc=$${CC:-gcc}; if ! command -v $$cc >/dev/null; then \
	  if [ "$$CI" = "true" ]; then echo "test-wasmtime: no C compiler ($$cc) for cgo"; exit 1; fi; \
	  echo "test-wasmtime: SKIPPED, no C compiler ($$cc) for cgo"; exit 0; fi; \
	CGO_ENABLED=1 $(GO) vet -tags wasmtime ./host/platform/runtime/wasmtime/ ./host/platform/runtime/backendtest/... && \
	CGO_ENABLED=1 $(GO) test -count=1 -race -tags wasmtime ./host/platform/runtime/wasmtime/ ./host/platform/runtime/backendtest/... && \
	CGO_ENABLED=1 $(GO) test -count=1 -tags wasmtime -run 'Runtime' ./host/platform/modules/ && \
	CGO_ENABLED=1 $(GO) test -count=1 -tags wasmtime -run 'Version|Runtime' ./cmd/wasmsched/ && \
	GO='$(GO)' scripts/check-release.sh

# report-test loads the page `simulate --report` writes for every example
# in headless Chromium (Debian's package, which scripts/chromium.sh
# installs when it is absent and this user may: root or password-less
# sudo) over the DevTools protocol: no console error, no request leaving
# the page, a screenshot that is not blank, and the numbers on the page
# equal to -o json's. Without Chromium it says it skipped; under CI=true
# that fails. `make unit` runs the same test when chromium is on PATH.
report-test:
	@chromium=$$(scripts/chromium.sh); status=$$?; \
	if [ $$status -ne 0 ]; then \
	  if [ "$$CI" = "true" ]; then echo "report-test: no Chromium (scripts/chromium.sh exited $$status)"; exit 1; fi; \
	  echo "report-test: SKIPPED, no Chromium (scripts/chromium.sh says how to install it)"; exit 0; fi; \
	echo "report-test: $$chromium"; \
	WASMSCHED_CHROMIUM=$$chromium $(GO) test -count=1 -run 'TestReportInBrowser' ./cmd/wasmsched/

# chart runs the real helm (scripts/helm.sh builds the pinned release from
# the Go module proxy once, about 3 minutes, and caches it) on the chart:
# helm lint and helm template for each mix of engines, with the rendered
# RBAC checked against what each mix uses, and deploy/wasmsched.yaml
# compared with the chart rendered with its defaults. `make unit` runs the
# same tests but skips them, saying so, while helm is not built.
HELM_RELEASE_ARGS = wasmsched deploy/helm/wasmsched --namespace kube-system
chart:
	@echo "chart: helm in $$(scripts/helm.sh)"
	$(GO) test -count=1 ./deploy/...

# manifest regenerates deploy/wasmsched.yaml: the chart with its default values.
manifest:
	@helm=$$(scripts/helm.sh) && { \
	  cat deploy/manifest-header.txt; \
	  $$helm template $(HELM_RELEASE_ARGS); } > deploy/wasmsched.yaml.tmp && mv deploy/wasmsched.yaml.tmp deploy/wasmsched.yaml
	@echo "manifest: deploy/wasmsched.yaml regenerated from deploy/helm/wasmsched"

# e2e runs wasmsched against a real kube-apiserver and etcd on loopback
# (each test starts its own); scripts/controlplane.sh builds them from the
# Go module proxy the first time (README: "The two commands" has the
# times) and caches them. K8S_VERSION picks the Kubernetes release,
# v1.37.2 by default: `K8S_VERSION=1.35.4 make e2e` runs the suite against
# the oldest supported one (README: "Kubernetes versions"). The tests of
# modules from a registry start the CNCF distribution registry with TLS
# and basic auth, which scripts/registry.sh builds the same way.
# E2E_FLAGS=-v shows each test.
#
# The suite runs what ships: the release build (cgo, -tags wasmtime, so
# serve runs modules on wasmtime, in process and as the binary
# scripts/build-release.sh builds) whenever a C compiler is there, which
# CI requires. WASMSCHED_E2E_RUNTIME=wazero runs it on the static pure-Go
# build instead; without a C compiler outside CI it falls back to that,
# saying so.
E2E_FLAGS ?=
E2E_RUNTIME = rt=$${WASMSCHED_E2E_RUNTIME:-}; cc=$${CC:-gcc}; \
	if [ -z "$$rt" ]; then \
	  if command -v $$cc >/dev/null; then rt=wasmtime; \
	  elif [ "$$CI" = "true" ]; then echo "e2e: no C compiler ($$cc) for the release (wasmtime) build; WASMSCHED_E2E_RUNTIME=wazero runs the static build"; exit 1; \
	  else rt=wazero; echo "e2e: no C compiler ($$cc): running the static (wazero) build"; fi; fi; \
	case $$rt in wasmtime) tags="-tags wasmtime"; export CGO_ENABLED=1;; wazero) tags=;; \
	  *) echo "e2e: WASMSCHED_E2E_RUNTIME must be wasmtime or wazero, not $$rt"; exit 1;; esac; \
	echo "e2e: serve runs modules on $$rt ($$( [ $$rt = wasmtime ] && echo 'the release build: cgo, -tags wasmtime' || echo 'the static pure-Go build'))"; \
	export WASMSCHED_E2E_RUNTIME=$$rt
e2e:
	@echo "e2e: kube-apiserver and etcd in $$(scripts/controlplane.sh build)"
	@echo "e2e: OCI registry in $$(scripts/registry.sh build)"
	@echo "e2e: helm in $$(scripts/helm.sh)"
	@$(E2E_RUNTIME); set -x; WASMSCHED_E2E=1 $(GO) test $$tags -count=1 -timeout 20m $(E2E_FLAGS) ./test/e2e/

# perf-e2e runs the load driver (wasmsched perf) against serve on a real
# kube-apiserver: a small SchedulingBasic and SchedulingDaemonset, all pods
# bound, one sample at least; a small backlog drained by serve started by
# perf itself, every pod with its Scheduled Event. The real measurements
# are in docs/PERFORMANCE.md.
perf-e2e:
	scripts/controlplane.sh build >/dev/null
	@$(E2E_RUNTIME); set -x; WASMSCHED_E2E=1 $(GO) test $$tags -count=1 -run Perf -v ./test/e2e/

# sidebyside measures wasmsched serve (make build) and kube-scheduler
# v1.37.2 side by side on a real API server, a fresh one per run, and
# prints one table with the ratios (scripts/sidebyside.sh says how;
# docs/PERFORMANCE.md has the numbers). Its settings pass through:
# make sidebyside NODES=5000,15000 ROUNDS=2 (also SHAPES, INIT_PODS, PODS,
# SCHEDULERS, QPS, TIMEOUT, OUT). Not part of make test.
SIDEBYSIDE_VARS = NODES SHAPES ROUNDS INIT_PODS PODS SCHEDULERS QPS TIMEOUT OUT
sidebyside:
	$(foreach v,$(SIDEBYSIDE_VARS),$(if $($(v)),$(v)='$($(v))')) scripts/sidebyside.sh

# parity compares wasmsched with kube-scheduler v1.37.2 (its framework,
# queue and plugins imported from k8s.io/kubernetes) on generated
# clusters: 1000 cases of each kind (one pod under the default profile,
# a queue of pods, preemption, KubeSchedulerConfiguration profiles,
# matchLabelKeys); test/parity is its own module so the main module never
# depends on k8s.io/kubernetes. PARITY_FLAGS passes its flags, e.g.
# PARITY_FLAGS='-parity.kind=queue -parity.n=200' (docs/PARITY.md); a
# plain go test there runs 20 cases of each kind.
PARITY_FLAGS ?=
parity:
	cd test/parity && $(GO) test -count=1 -timeout 90m ./... -parity.n=1000 $(PARITY_FLAGS)

# check-wasm rebuilds every committed TinyGo build and fails if a byte
# differs. With no TinyGo it installs one when CI=true and otherwise says
# it skipped (the committed builds are still loaded by the tests).
# With CI=true the install script always runs: it is idempotent and quick
# when everything is there, and it puts back a system package (binaryen's
# wasm-opt) removed since TinyGo was built.
check-wasm:
	@if [ "$$CI" = "true" ]; then scripts/install-tinygo.sh || exit 1; \
	elif [ ! -x $(TINYGO_PREFIX)/build/tinygo ]; then \
	  echo "check-wasm: SKIPPED, TinyGo not installed (make tinygo); committed builds not re-verified"; exit 0; \
	elif ! command -v wasm-opt >/dev/null; then \
	  echo "check-wasm: TinyGo needs binaryen's wasm-opt: run make tinygo (it installs it)"; exit 1; \
	fi; \
	tmp=$$(mktemp -d); status=0; \
	for b in $(WASM_BUILDS); do pkg=$${b%%=*}; out=$${b#*=}; \
	  $(PKG_FLAGS); \
	  ( $(TINYGO_ENV) && cd plugins-wasm && tinygo build $(TINYGO_FLAGS) $$flags -o $$tmp/check.wasm $$pkg ) || exit 1; \
	  if cmp -s $$tmp/check.wasm $$out; then echo "check-wasm: $$out reproduces ($$(wc -c < $$out) bytes)"; \
	  else echo "check-wasm: $$out differs from a fresh build of $$pkg: run make wasm and commit"; status=1; fi; \
	done; rm -rf $$tmp; exit $$status

wasm:
	@for b in $(WASM_BUILDS); do pkg=$${b%%=*}; out=$${b#*=}; \
	  $(PKG_FLAGS); \
	  ( $(TINYGO_ENV) && cd plugins-wasm && tinygo build $(TINYGO_FLAGS) $$flags -o ../$$out $$pkg ) || exit 1; \
	  echo "wasm: $$out ($$(wc -c < $$out) bytes)"; \
	done

# The Rust example module (plugins-rust/), built with Debian's rustc.
rust-wasm:
	scripts/build-rust-plugin.sh

# check-rust rebuilds the Rust module and fails if a byte differs; like
# check-wasm it installs the toolchain (Debian's rustc) only when CI=true.
check-rust:
	@if [ ! -x /usr/bin/rustc ] && [ "$$CI" != "true" ]; then \
	  echo "check-rust: SKIPPED, Debian's rustc not installed (make rust-wasm installs it); committed build not re-verified"; exit 0; fi; \
	scripts/build-rust-plugin.sh --check

# Standard Go (wasip1) builds; tests also make these on demand.
wasm-go:
	@mkdir -p build/wasm
	@for b in $(WASM_BUILDS); do pkg=$${b%%=*}; name=$$(basename $$pkg); \
	  ( cd plugins-wasm && GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -o ../build/wasm/$$name.go.wasm $$pkg ) || exit 1; \
	done

# The benchmarks of docs/PERFORMANCE.md, with the settings recorded there.
# docs/PERFORMANCE.md's "Benchmark report" table and its chart, regenerated
# (host/tools/benchreport; rows in its rows.go).
bench-report:
	$(GO) run ./host/tools/benchreport

bench:
	$(GO) test -run '^$$' -bench 'FilterScorePerNode|MirrorDeltaSync|TopologyPlugins' -benchtime 40x -count 3 ./host/platform/guest/
	$(GO) test -run '^$$' -bench 'SchedulingBasic$$' -benchtime 1x -count 2 ./host/run/sim/

tinygo:
	scripts/install-tinygo.sh

fmt:
	gofmt -w $$(git ls-files '*.go')
