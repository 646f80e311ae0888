#!/bin/sh
# check-release.sh: build the release binary exactly as the Dockerfile
# does (scripts/build-release.sh, the wasmtime build) and check that it
# would run on the image's base, gcr.io/distroless/cc-debian12, without a
# Docker daemon:
#   - every shared library it needs (readelf -d, NEEDED) is one that
#     distroless/cc-debian12 ships: glibc's (libc, libm, libdl,
#     libpthread, librt, the loader) and libgcc_s;
#   - no glibc symbol version it asks for (objdump -T) is newer than
#     Debian 12's glibc, 2.36;
#   - it runs: `wasmsched version` names wasmtime as the default runtime,
#     and a short simulate of the embedded example places pods.
# readelf and objdump are binutils' (on the machine image; CI has them).
# `make test-wasmtime` runs it.
set -eu
cd "$(dirname "$0")/.."
max_glibc=2.36
allowed="libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libgcc_s.so.1 ld-linux-x86-64.so.2 ld-linux-aarch64.so.1"
for tool in readelf objdump; do
	command -v $tool >/dev/null 2>&1 || { echo "check-release: $tool (binutils) is missing" >&2; exit 1; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
bin=$dir/wasmsched
scripts/build-release.sh "$bin" wasmtime
fail=0

needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[ -n "$needed" ] || { echo "check-release: readelf -d lists no NEEDED library: is the binary dynamic?" >&2; exit 1; }
for lib in $needed; do
	case " $allowed " in
	*" $lib "*) ;;
	*) echo "check-release: the binary needs $lib, which distroless/cc-debian12 does not ship" >&2; fail=1 ;;
	esac
done
interp=$(readelf -l "$bin" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')
echo "check-release: NEEDED $(echo $needed); interpreter $interp"

# The newest GLIBC_x.y[.z] the binary's dynamic symbols ask for.
newest=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -t. -k1,1n -k2,2n -k3,3n -u | tail -1)
[ -n "$newest" ] || { echo "check-release: objdump -T shows no GLIBC symbol version" >&2; exit 1; }
if [ "$(printf '%s\n%s\n' "$newest" "$max_glibc" | sort -t. -k1,1n -k2,2n -k3,3n | tail -1)" != "$max_glibc" ]; then
	echo "check-release: the binary asks for GLIBC_$newest, newer than Debian 12's $max_glibc:" >&2
	objdump -T "$bin" | grep "GLIBC_$newest" >&2
	fail=1
fi
echo "check-release: newest glibc symbol version GLIBC_$newest (Debian 12 has $max_glibc)"

version=$("$bin" version)
echo "$version" | grep -q '^runtimes .* wasmtime (default)' || {
	echo "check-release: wasmsched version does not name wasmtime as the default runtime:" >&2
	echo "$version" >&2
	fail=1
}
echo "$version" | grep '^runtimes\|^wasmtime'

out=$(XDG_CACHE_HOME="$dir/cache" "$bin" simulate examples/cluster.yaml --config examples/profiles.yaml -o json 2>&1) || {
	echo "check-release: simulate failed:" >&2
	echo "$out" >&2
	exit 1
}
placed=$(echo "$out" | grep -c '"status": *"Scheduled"' || true)
if [ "$placed" -eq 0 ]; then
	echo "check-release: simulate placed no pod:" >&2
	echo "$out" | head -40 >&2
	fail=1
fi
echo "check-release: simulate on wasmtime placed $placed pods"
[ $fail -eq 0 ] && echo "check-release: ok"
exit $fail
