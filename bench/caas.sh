#!/usr/bin/env bash
# Remote compaction (CaaS-LSM §5, the paper's setting on one machine): the database process is
# pinned to one core (taskset -c 0) and its capacity-tier link is throttled (--capacity-mbps);
# the control plane and one worker run on the other core, reading and writing the capacity
# tier (a local object store, `file://`) unthrottled. Each workload runs for --secs with
# 1 KiB values under local, remote and hybrid compaction, interleaved (L R H L R H ...).
#
#   bench/caas.sh [--workloads fillrandom,ycsba] [--modes local,remote,hybrid] [--secs S]
#                 [--repeats R] [--mbps M] [--ycsb-num N] [--fast-budget BYTES] [--out DIR]
#
# The fast tier is bounded (--fast-budget, default 512 MiB: a small fast disk), so compaction
# outputs beyond it must cross the capacity link.
#
# Prints one JSON report per run into $OUT and a summary (median and range per mode) made by
# bench/caas_summary.py.
set -euo pipefail
cd "$(dirname "$0")/.."
WORKLOADS=fillrandom,ycsba MODES=local,remote,hybrid SECS=120 REPEATS=3 MBPS=10 YCSB_NUM=500000 BUDGET=512MiB
OUT=bench/results/caas-$(date +%Y%m%d-%H%M)
while [ $# -gt 0 ]; do
  case "$1" in
    --workloads) WORKLOADS="$2"; shift 2 ;;
    --modes) MODES="$2"; shift 2 ;;
    --secs) SECS="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --mbps) MBPS="$2"; shift 2 ;;
    --ycsb-num) YCSB_NUM="$2"; shift 2 ;;
    --fast-budget) BUDGET="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
TARGET=${CARGO_TARGET_DIR:-target}
cargo build --release -p strata-cli >&2
BIN="$(pwd)/$TARGET/release/strata"
W=${CAAS_WORK:-/tmp/strata-caas}
TOKEN=caas-bench-token
PORT=${CAAS_PORT:-7790}
pids=()
stop() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap stop EXIT
start_service() {
  taskset -c 1 "$BIN" compaction-service --listen "127.0.0.1:$PORT" --token "$TOKEN" \
    --log-level warn 2>"$OUT/service.log" &
  pids+=($!)
  sleep 0.5
  taskset -c 1 "$BIN" compaction-worker --service "http://127.0.0.1:$PORT" --token "$TOKEN" \
    --root "$W" --scratch "$W/scratch" --slots 2 --log-level warn 2>"$OUT/worker.log" &
  pids+=($!)
  for _ in $(seq 50); do
    "$BIN" compaction-service status --service "http://127.0.0.1:$PORT" --token "$TOKEN" \
      2>/dev/null | grep -q '"slots"' && return 0
    sleep 0.2
  done
  echo "the worker did not register" >&2
  exit 1
}
{
  echo "date: $(date -Is)"
  echo "commit: $(git describe --always --dirty)"
  echo "cpu pressure before: $(head -1 /proc/pressure/cpu)"
  echo "workloads=$WORKLOADS modes=$MODES secs=$SECS repeats=$REPEATS mbps=$MBPS ycsb_num=$YCSB_NUM fast_budget=$BUDGET value=1KiB cache=8MiB"
  echo "db: taskset -c 0; control plane + 1 worker (2 slots): taskset -c 1"
} > "$OUT/setup.txt"
IFS=, read -r -a wls <<< "$WORKLOADS"
IFS=, read -r -a modes <<< "$MODES"
for r in $(seq "$REPEATS"); do
  for wl in "${wls[@]}"; do
    for mode in "${modes[@]}"; do
      rm -rf "$W"
      mkdir -p "$W/cap" "$W/scratch"
      svc=()
      if [ "$mode" != local ]; then
        start_service
        svc=(--compaction-service "http://127.0.0.1:$PORT" --compaction-token "$TOKEN"
             --compaction-mode "$mode")
      fi
      case "$wl" in
        fillrandom) what=(--benchmarks fillrandom --num 1000000000 --duration "$SECS") ;;
        ycsba) what=(--workload a --num "$YCSB_NUM" --duration "$SECS") ;;
        *) echo "unknown workload $wl" >&2; exit 2 ;;
      esac
      echo "== $wl $mode run $r ($(head -1 /proc/pressure/cpu))" | tee -a "$OUT/pressure.txt" >&2
      taskset -c 0 "$BIN" bench "${what[@]}" --value-size 1024 --db "$W/db" \
        --capacity "file://$W/cap" --capacity-mbps "$MBPS" --cache-size 8MiB --fast-tier-budget "$BUDGET" \
        "${svc[@]}" --json "$OUT/$wl-$mode-$r.json" --csv "$OUT/$wl-$mode-$r.csv" > "$OUT/$wl-$mode-$r.txt"
      stop
    done
  done
done
rm -rf "$W"
python3 bench/caas_summary.py "$OUT" | tee "$OUT/summary.txt"
