#!/usr/bin/env bash
# HotRAP's evaluation (papers/hotrap.txt §4.2, §4.6) with `strata bench`: the same database
# with HotRAP on, with HotRAP off, and with everything on the fast tier, over HotRAP's mixes.
#
#   bash bench/hotrap.sh [--num N] [--threads T] [--secs S] [--repeats R]
#                        [--workloads ro,rw,wh,uh] [--dists hotspot-5%,zipfian,uniform]
#                        [--configs on,off,fast] [--warmup S] [--dynamic] [--out DIR]
#
# Every run: 1 KiB incompressible values (so bytes on disk are bytes of data), 16-byte keys in
# hashed order, the capacity tier on file:// emulated at --latency-ms (5) per request, the
# fast tier ~10% of the data (max_bytes_for_level_base = num × 1 KiB / 16, fast-tier budget =
# num × 1 KiB / 10), a 4 MiB block cache (smaller than any hot set here: the paper runs with
# direct I/O) and 8 MiB memtables, 8 MiB tables, no persistent block cache (HotRAP's setup:
# promotion is the only way back to the fast tier). Each configuration loads once into a
# golden copy; every run starts from it. Runs are interleaved (on off fast, on off fast, ...)
# and repeated --repeats times: quote the median and the range. --warmup runs the workload
# unmeasured first (HotRAP needs each hot record read from the capacity tier before it can
# promote it: about hot records × capacity latency / threads).
#
# Output: DIR/<workload>-<dist>-<config>-<repeat>.{json,txt}, DIR/summary.md (also printed).
set -euo pipefail
cd "$(dirname "$0")/.."

NUM=1000000
THREADS=8
SECS=60
REPEATS=3
WORKLOADS=ro
DISTS="hotspot-5%,uniform"
LATENCY=5
DYNAMIC=0
CONFIGS=on,off,fast
WARMUP=0
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --num) NUM="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --secs) SECS="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --workloads) WORKLOADS="$2"; shift 2 ;;
    --dists) DISTS="$2"; shift 2 ;;
    --latency-ms) LATENCY="$2"; shift 2 ;;
    --dynamic) DYNAMIC=1; shift ;;
    --configs) CONFIGS="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
COMMIT=$(git rev-parse --short=10 HEAD)
OUT=${OUT:-bench/results/hotrap-$(date +%Y%m%d-%H%M)-$COMMIT}
mkdir -p "$OUT"
TARGET=${CARGO_TARGET_DIR:-target}
cargo build --release -p strata-bench >&2
BIN="$TARGET/release/strata-bench"
WORK=${HOTRAP_WORK:-/tmp/strata-hotrap}
mkdir -p "$WORK"

DATA=$((NUM * 1024))
BASE=$((DATA / 16))
BUDGET=$((DATA / 10))
common=(--num "$NUM" --value-size 1024 --compression-ratio 1.0 --threads "$THREADS"
  --cache-size 4MiB --write-buffer-size 8MiB --target-file-size-base 8MiB
  --max-bytes-for-level-base "$BASE" --persistent-cache-size 0)

run() { # workload dist config repeat
  local w=$1 d=$2 c=$3 r=$4 name="$1-${2//%/}-$3-$4"
  local db="$WORK/$c/db" flags=()
  rm -rf "$WORK/$c"
  case "$c" in
    on) flags=(--capacity "file://$WORK/$c/capacity" --capacity-latency-ms "$LATENCY"
          --fast-tier-budget "$BUDGET" --hotrap true) ;;
    off) flags=(--capacity "file://$WORK/$c/capacity" --capacity-latency-ms "$LATENCY"
          --fast-tier-budget "$BUDGET" --hotrap false) ;;
    fast) flags=() ;;
  esac
  local sched=(--distribution "$d")
  if [ "$d" = dynamic ]; then sched=(--hotspot-schedule hotrap); fi
  echo "== $name ($(head -1 /proc/pressure/cpu))" >&2
  "$BIN" --workload "$w" "${common[@]}" "${flags[@]}" "${sched[@]}" --db "$db" \
    --golden "$WORK/golden-$c" --duration "$SECS" --warmup "$WARMUP" \
    --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1
  rm -rf "$WORK/$c"
}

IFS=, read -ra WS <<<"$WORKLOADS"
IFS=, read -ra DS <<<"$DISTS"
IFS=, read -ra CS <<<"$CONFIGS"
if [ "$DYNAMIC" = 1 ]; then DS=(dynamic); fi
for w in "${WS[@]}"; do
  for d in "${DS[@]}"; do
    for r in $(seq 1 "$REPEATS"); do
      for c in "${CS[@]}"; do
        run "$w" "$d" "$c" "$r"
      done
    done
  done
done
python3 bench/hotrap_summary.py "$OUT" | tee "$OUT/summary.md"
