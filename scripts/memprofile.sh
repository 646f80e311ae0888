#!/usr/bin/env bash
# memprofile.sh — where `wasmsched serve`'s memory and CPU go on a real
# kube-apiserver: one SchedulingBasic run (`wasmsched perf`) against serve on
# a fresh control plane (scripts/controlplane.sh), sampling serve every
# INTERVAL seconds while it runs.
#
#   scripts/memprofile.sh NODES OUTDIR [extra serve flags...]
#   scripts/memprofile.sh 5000 /tmp/mem-a                   # the shipped build, as is
#   GOGC=75 scripts/memprofile.sh 5000 /tmp/mem-b           # serve's environment passes through
#   CPUPROF=1 scripts/memprofile.sh 5000 /tmp/mem-c --memory-limit 200Mi
#
# OUTDIR gets, per sample N: heap.N (the Go heap profile: `go tool pprof
# -top -inuse_space OUTDIR/heap.N`), metrics.N (the Go heap's memstats and
# wasmsched_module_memory_bytes), smaps.N and rollup.N (/proc/PID/smaps and
# its Rss/Pss_Anon/Pss_File summary: the binary's pages, the Go heap arena,
# C allocator arenas); with CPUPROF=1 also cpu.prof, 25 s of CPU profile
# from the second sample on. At the end: perf.json (perf's report: pods/s,
# the scheduler's peak RSS, CPU s, cold start), final.status (VmHWM, VmRSS)
# and summary.txt. The control plane is stopped and its data removed.
#
# Environment: BIN (the wasmsched binary; default build/wasmsched, made by
# `make build` as shipped), PORT (serve's plain-HTTP metrics and pprof port
# on loopback, default 18351), INTERVAL (6), INIT_PODS (1000), PODS (10000).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "memprofile.sh: $*" >&2; exit 1; }
(($# >= 2)) || die "usage: memprofile.sh NODES OUTDIR [extra serve flags...]"
NODES=$1 OUT=$2; shift 2
[[ $NODES =~ ^[1-9][0-9]*$ ]] || die "NODES=$NODES: want a positive whole number"
BIN=${BIN:-$ROOT/build/wasmsched}
PORT=${PORT:-18351} INTERVAL=${INTERVAL:-6} INIT_PODS=${INIT_PODS:-1000} PODS=${PODS:-10000}
[[ -x $BIN ]] || die "no wasmsched binary at $BIN: run make build, or set BIN"
command -v curl >/dev/null || die "needs curl"

mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
RUN=$OUT/controlplane SERVE=""
cleanup() {
  [[ -n $SERVE ]] && kill "$SERVE" 2>/dev/null && wait "$SERVE" 2>/dev/null
  "$ROOT/scripts/controlplane.sh" stop "$RUN" >/dev/null 2>&1 || true
  rm -rf "$RUN" "$OUT/wasm-cache"
}
trap cleanup EXIT
"$ROOT/scripts/controlplane.sh" start "$RUN" >"$OUT/controlplane.log" 2>&1 || die "control plane did not start: $OUT/controlplane.log"

"$BIN" serve --kubeconfig "$RUN/kubeconfig" --kube-api-qps 5000 --kube-api-burst 5000 --leader-elect=false \
  --secure-port 0 --wasm-cache-dir "$OUT/wasm-cache" --metrics-bind-address "127.0.0.1:$PORT" --profiling "$@" \
  >"$OUT/serve.log" 2>&1 &
SERVE=$!

sample() {
  local i=0 base="http://127.0.0.1:$PORT"
  while kill -0 "$SERVE" 2>/dev/null; do
    sleep "$INTERVAL"; i=$((i + 1))
    curl -sf "$base/debug/pprof/heap" >"$OUT/heap.$i" || rm -f "$OUT/heap.$i"
    cp "/proc/$SERVE/smaps" "$OUT/smaps.$i" 2>/dev/null || true
    grep -E '^(Rss|Pss_Anon|Pss_File):' "/proc/$SERVE/smaps_rollup" >"$OUT/rollup.$i" 2>/dev/null || true
    curl -sf "$base/metrics" | grep -E '^go_memstats_(heap_alloc|heap_inuse|heap_sys|next_gc)_bytes|^wasmsched_module_memory_bytes' \
      >"$OUT/metrics.$i" || true
    if [[ $i == 2 && ${CPUPROF:-} == 1 ]]; then curl -sf "$base/debug/pprof/profile?seconds=25" >"$OUT/cpu.prof" & fi
  done
}
sample &

status=0
"$BIN" perf --kubeconfig "$RUN/kubeconfig" --nodes "$NODES" --init-pods "$INIT_PODS" --pods "$PODS" \
  --scheduler-pid "$SERVE" -o json >"$OUT/perf.json" 2>"$OUT/perf.log" || status=$?
grep -E '^(VmHWM|VmRSS):' "/proc/$SERVE/status" >"$OUT/final.status" || true
# CPU seconds: utime + stime (fields 14 and 15 of /proc/PID/stat, after
# the command name in parentheses), in clock ticks.
cpu=$(sed 's/.*) //' "/proc/$SERVE/stat" | awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($12 + $13) / hz}') || cpu=?
{
  echo "perf exit status $status; serve: $(tr -s ' \t\n' ' ' <"$OUT/final.status")CPU ${cpu} s"
  grep -oE '"(podsPerSecond|schedulerPeakRSSBytes|coldStartSeconds)": *[0-9.e+]+' "$OUT/perf.json" || true
} | tee "$OUT/summary.txt"
exit "$status"
