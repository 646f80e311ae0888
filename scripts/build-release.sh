#!/bin/sh
# build-release.sh OUT [RUNTIME]: build the wasmsched binary the way it
# ships. `make build`, `make build-static`, the Dockerfile and
# scripts/check-release.sh all call this script, so there is one
# definition of the release build.
#
#   RUNTIME=wasmtime (default): cgo and -tags wasmtime, so the binary has
#     both runtimes and runs modules on wasmtime unless told otherwise
#     (docs/PERFORMANCE.md: it runs the policy bundles closer to native).
#     It links glibc dynamically (libc, libm, libgcc_s, libdl, libpthread)
#     and so needs a glibc base image: distroless/cc-debian12.
#   RUNTIME=wazero: CGO_ENABLED=0, pure Go, static: wazero only; for
#     distroless/static and platforms without a C compiler.
#
# What `wasmsched version` reports comes from VERSION, REVISION,
# REVISION_TIME and MODIFIED in the environment (the Makefile takes them
# from the checkout; a Docker build passes them as build arguments).
# GO names the go command (default go).
set -eu
out=${1:?usage: build-release.sh OUT [wasmtime|wazero]}
runtime=${2:-wasmtime}
go=${GO:-go}
ldflags="-s -w -X main.version=${VERSION:-} -X main.revision=${REVISION:-} -X main.revisionTime=${REVISION_TIME:-} -X main.modified=${MODIFIED:-}"
# The build goes to a temporary name and reaches OUT through a plain
# copy. A file as the linker leaves it sits in the page cache in large
# folios (2 MiB on Linux 6.18 with ext4), and each page a process touches
# maps its whole folio: the same binary run straight from the linker's
# output showed 88 MiB of its own pages resident at serve's peak, 65 MiB
# once copied. Copied, OUT is cached as any file written by write(2) or
# cp is (an image layer unpacked by the container runtime, the copy
# scripts/sidebyside.sh runs, kube-scheduler's binary in ~/.cache), so
# peak RSS measured on OUT itself compares like with like.
tmp=$out.link.$$
trap 'rm -f "$tmp" "$tmp.copy"' EXIT
case $runtime in
wasmtime)
	cc=${CC:-gcc}
	if ! command -v "$cc" >/dev/null 2>&1; then
		echo "build-release.sh: the wasmtime build needs cgo and a C compiler ($cc not found); build-release.sh OUT wazero builds the static pure-Go binary" >&2
		exit 1
	fi
	# --gc-sections: the host linker drops the sections of the static
	# libwasmtime.a that nothing calls (its text-format parser, most of
	# its WASI and async code: 5 MiB of Rust code, 7 MB of the binary).
	# Go's own sections are all referenced and stay; cgo's intermediate
	# link does not see -extldflags, so its symbol import is unaffected.
	CGO_ENABLED=1 "$go" build -trimpath -tags wasmtime -ldflags="$ldflags -extldflags=-Wl,--gc-sections" -o "$tmp" ./cmd/wasmsched
	;;
wazero)
	CGO_ENABLED=0 "$go" build -trimpath -ldflags="$ldflags" -o "$tmp" ./cmd/wasmsched
	;;
*)
	echo "build-release.sh: RUNTIME must be wasmtime or wazero, not \"$runtime\"" >&2
	exit 2
	;;
esac
cat "$tmp" >"$tmp.copy"
chmod 0755 "$tmp.copy"
mv -f "$tmp.copy" "$out"
