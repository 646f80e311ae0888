#!/usr/bin/env bash
# sidebyside.sh — wasmsched serve and upstream kube-scheduler, side by side,
# on a real kube-apiserver and etcd (scripts/controlplane.sh), loaded by
# `wasmsched perf`; prints one table and the ratios.
#
#   scripts/sidebyside.sh                      # 1000 and 5000 nodes, one round
#   NODES=5000,15000 ROUNDS=2 scripts/sidebyside.sh
#   make sidebyside NODES=5000                 # the same through make
#
# For every size in NODES, shape in SHAPES and round in ROUNDS it runs each
# scheduler in SCHEDULERS on a fresh control plane (etcd and kube-apiserver
# started for that run alone, stopped after it), the order of the
# schedulers alternating from one run pair to the next:
#
#   basic    scheduler_perf's SchedulingBasic: the scheduler runs from the
#            start; INIT_PODS pods are placed first, then PODS measured
#            pods are created (pods/s: SchedulingThroughput's average)
#   backlog  the nodes, INIT_PODS pods (created bound) and PODS measured
#            pods are created with no scheduler running, then the
#            scheduler is started (pods/s: the drain rate, from its start
#            to the last pod bound)
#
# The schedulers, with the same client QPS/burst (QPS, default 5000) and
# no leader election, each speaking protobuf and posting events.k8s.io/v1
# Events (both their defaults):
#
#   wasmsched       build/wasmsched serve, built by `make build` (as
#                   shipped), with a fresh module cache per run, so its
#                   cold start includes compiling the modules
#   kube-scheduler  kube-scheduler of K8S_VERSION (default 1.37.2, the
#                   API server's release), built by
#                   scripts/controlplane.sh build-scheduler
#
# perf starts each scheduler itself (--scheduler-cmd), so it reads the
# process's CPU time (CPU s/pod: over its life, per pod it placed), peak
# RSS (VmHWM) and cold start, and after the last bind counts the
# Scheduled Events the API server holds for the measured pods and the
# failed bindings. Everything lands under OUT (default: a new directory
# under /tmp, printed first): results/*.json (one perf report per run),
# summary.txt and summary.json (perf compare), runs/<run>/ (the scheduler's,
# the driver's, the API server's and etcd's logs) and load.txt (the load
# average before and after each run). On exit or interrupt the running
# driver, its scheduler and the control plane are stopped.
#
# Environment: NODES (1000,5000), SHAPES (basic,backlog), ROUNDS (1),
# INIT_PODS (1000), PODS (10000), SCHEDULERS (wasmsched,kube-scheduler),
# QPS (5000), TIMEOUT (per run, 20m), OUT, K8S_VERSION.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NODES=${NODES:-1000,5000}
SHAPES=${SHAPES:-basic,backlog}
ROUNDS=${ROUNDS:-1}
INIT_PODS=${INIT_PODS:-1000}
PODS=${PODS:-10000}
SCHEDULERS=${SCHEDULERS:-wasmsched,kube-scheduler}
QPS=${QPS:-5000}
TIMEOUT=${TIMEOUT:-20m}

die() { echo "sidebyside.sh: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
  -h|--help) usage; exit 0 ;;
  "") ;;
  *) usage >&2; die "takes no arguments (settings are environment variables), not: $*" ;;
esac

# Settings are checked before anything is built or started.
posint() { [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1=$2: want a positive whole number"; }
IFS=, read -r -a node_counts <<<"$NODES"
IFS=, read -r -a shapes <<<"$SHAPES"
IFS=, read -r -a schedulers <<<"$SCHEDULERS"
((${#node_counts[@]} > 0)) || die "NODES is empty: want sizes such as 1000,5000"
for n in "${node_counts[@]}"; do posint NODES "$n"; done
for s in "${shapes[@]}"; do [[ $s == basic || $s == backlog ]] || die "SHAPES: $s is neither basic nor backlog"; done
((${#shapes[@]} > 0)) || die "SHAPES is empty: want basic, backlog or both"
for s in "${schedulers[@]}"; do [[ $s == wasmsched || $s == kube-scheduler ]] || die "SCHEDULERS: $s is neither wasmsched nor kube-scheduler"; done
((${#schedulers[@]} > 0)) || die "SCHEDULERS is empty"
posint ROUNDS "$ROUNDS"; posint PODS "$PODS"; posint QPS "$QPS"
[[ $INIT_PODS =~ ^[0-9]+$ ]] || die "INIT_PODS=$INIT_PODS: want 0 or a positive whole number"
[[ $TIMEOUT =~ ^[0-9]+[smh]$ ]] || die "TIMEOUT=$TIMEOUT: want a duration such as 20m"
for n in "${node_counts[@]}"; do
  ((INIT_PODS + PODS <= 40 * n)) || die "$INIT_PODS init and $PODS measured pods do not fit $n nodes (40 pods each)"
done

if [[ -z ${OUT:-} ]]; then OUT=$(mktemp -d /tmp/sidebyside.XXXXXX); fi
mkdir -p "$OUT/results" "$OUT/runs" "$OUT/bin" || die "cannot create the output directory $OUT"
OUT=$(cd "$OUT" && pwd)
echo "sidebyside.sh: results in $OUT"

# The binaries. wasmsched is copied out of build/ so a rebuild during the
# runs does not change what is measured.
echo "sidebyside.sh: make build" >&2
make -C "$ROOT" build >"$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log" >&2; die "make build failed (log: $OUT/build.log)"; }
cp "$ROOT/build/wasmsched" "$OUT/bin/wasmsched"
BIN=$OUT/bin/wasmsched
"$BIN" version >"$OUT/wasmsched-version.txt" 2>&1 || die "$BIN version failed"
"$ROOT/scripts/controlplane.sh" build >/dev/null 2>"$OUT/controlplane-build.log" ||
  { tail -20 "$OUT/controlplane-build.log" >&2; die "scripts/controlplane.sh build failed (log: $OUT/controlplane-build.log)"; }
KUBE_SCHEDULER=
if [[ " ${schedulers[*]} " == *" kube-scheduler "* ]]; then
  echo "sidebyside.sh: scripts/controlplane.sh build-scheduler (about 5 minutes the first time)" >&2
  KUBE_SCHEDULER=$("$ROOT/scripts/controlplane.sh" build-scheduler 2>"$OUT/kube-scheduler-build.log") ||
    { tail -20 "$OUT/kube-scheduler-build.log" >&2; die "scripts/controlplane.sh build-scheduler failed (log: $OUT/kube-scheduler-build.log)"; }
fi
{
  echo "commit $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)$(test -n "$(git -C "$ROOT" status --porcelain 2>/dev/null)" && echo ' (modified)')"
  echo "kube-apiserver and kube-scheduler v${K8S_VERSION:-1.37.2}; $(nproc) CPUs; $(uname -sr)"
  echo "NODES=$NODES SHAPES=$SHAPES ROUNDS=$ROUNDS INIT_PODS=$INIT_PODS PODS=$PODS SCHEDULERS=$SCHEDULERS QPS=$QPS"
} >"$OUT/meta.txt"

# What runs now, for the trap: the driver's PID and the control plane's
# directory.
PERF_PID= RUN=
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [[ -n $PERF_PID ]] && kill -0 "$PERF_PID" 2>/dev/null; then
    # perf stops the scheduler it started; give it the time to.
    kill -TERM "$PERF_PID" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$PERF_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$PERF_PID" 2>/dev/null || true
  fi
  if [[ -n $RUN ]]; then "$ROOT/scripts/controlplane.sh" stop "$RUN" >/dev/null 2>&1 || true; fi
  exit "$status"
}
trap cleanup EXIT
trap 'echo "sidebyside.sh: interrupted; stopping the run in progress" >&2; exit 130' INT TERM

# scheduler_cmd LABEL RUNDIR prints the command perf starts the scheduler with.
scheduler_cmd() {
  local label=$1 run=$2
  case $label in
    wasmsched)
      printf '%q serve --kubeconfig %q --kube-api-qps %s --kube-api-burst %s --leader-elect=false --secure-port 0 --wasm-cache-dir %q' \
        "$BIN" "$run/kubeconfig" "$QPS" "$QPS" "$run/wasm-cache" ;;
    kube-scheduler)
      cat >"$run/kube-scheduler.yaml" <<YAML
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: "$run/kubeconfig", qps: $QPS, burst: $QPS}
leaderElection: {leaderElect: false}
YAML
      printf '%q --config %q --secure-port 0' "$KUBE_SCHEDULER" "$run/kube-scheduler.yaml" ;;
  esac
}

failed=()
# run_one LABEL NODES SHAPE ROUND runs one scheduler on one fresh control plane.
run_one() {
  local label=$1 nodes=$2 shape=$3 round=$4
  local name="$nodes-$shape-$round-$label"
  RUN=$OUT/runs/$name
  local result=$OUT/results/$name.json
  mkdir -p "$RUN"
  echo "$name start $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/load.txt"
  echo "sidebyside.sh: $name: fresh control plane (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  if ! "$ROOT/scripts/controlplane.sh" start "$RUN" >"$RUN/controlplane.log" 2>&1; then
    tail -20 "$RUN/controlplane.log" >&2
    failed+=("$name: the control plane did not start (log: $RUN/controlplane.log)")
    "$ROOT/scripts/controlplane.sh" stop "$RUN" >/dev/null 2>&1 || true; RUN=
    return
  fi
  local args=(perf --kubeconfig "$RUN/kubeconfig" --nodes "$nodes" --init-pods "$INIT_PODS" --pods "$PODS"
    --scheduler-cmd "$(scheduler_cmd "$label" "$RUN")" --scheduler-log "$RUN/scheduler.log" --label "$label"
    --kube-api-qps "$QPS" --kube-api-burst "$QPS" --timeout "$TIMEOUT" --cleanup=false -o json --log-level info)
  [[ $shape == backlog ]] && args+=(--backlog)
  "$BIN" "${args[@]}" >"$result" 2>"$RUN/perf.log" &
  PERF_PID=$!
  local status=0
  wait "$PERF_PID" || status=$?
  PERF_PID=
  if ((status != 0)); then
    tail -5 "$RUN/perf.log" >&2
    failed+=("$name: perf exited $status (its log: $RUN/perf.log; the scheduler's: $RUN/scheduler.log; report: $result)")
    [[ -s $result ]] || rm -f "$result"
  else
    echo "sidebyside.sh: $name: $(grep -o '"podsPerSecond": [0-9.]*' "$result" | head -1)" >&2
  fi
  "$ROOT/scripts/controlplane.sh" stop "$RUN" >/dev/null 2>&1 || true
  rm -rf "$RUN/etcd-data" "$RUN/wasm-cache"
  RUN=
  echo "$name end $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/load.txt"
}

pair=0
for nodes in "${node_counts[@]}"; do
  for shape in "${shapes[@]}"; do
    for round in $(seq 1 "$ROUNDS"); do
      # Alternate the order (A B, B A, ...) so neither always runs first.
      order=("${schedulers[@]}")
      if ((pair % 2 == 1)); then
        order=(); for ((i = ${#schedulers[@]} - 1; i >= 0; i--)); do order+=("${schedulers[i]}"); done
      fi
      pair=$((pair + 1))
      for label in "${order[@]}"; do run_one "$label" "$nodes" "$shape" "$round"; done
    done
  done
done

baseline=kube-scheduler
[[ " ${schedulers[*]} " == *" kube-scheduler "* ]] || baseline=${schedulers[0]}
echo
cat "$OUT/meta.txt"
if ls "$OUT"/results/*.json >/dev/null 2>&1; then
  if ! "$BIN" perf compare --baseline "$baseline" "$OUT/results" >"$OUT/summary.txt" 2>&1 ||
    ! "$BIN" perf compare --baseline "$baseline" -o json "$OUT/results" >"$OUT/summary.json" 2>&1; then
    failed+=("perf compare: $(cat "$OUT/summary.txt" "$OUT/summary.json" | tail -1)")
  fi
  cat "$OUT/summary.txt"
fi
echo
echo "load average per run: $OUT/load.txt; reports: $OUT/results; logs: $OUT/runs"
if ((${#failed[@]} > 0)); then
  printf 'sidebyside.sh: FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
