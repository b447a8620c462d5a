#!/usr/bin/env bash
# MashMeta vs block index + bloom filter on capacity-tier tables, end to end (RocksMash §3.3):
# for 16 B and 24 B keys in sequential (dense: a table's keys share long prefixes) and hashed
# (random 64-bit) order, each index kind loads the same YCSB data once (a golden copy per
# configuration), then runs readmissing and readrandom for --secs each, interleaved over
# --repeats. Reports ops/s, capacity-tier GETs per 1000 reads and the capacity tables' metadata
# bytes on the fast tier (`engine_stats.capacity_meta_bytes`).
#
#   bash bench/mashmeta.sh [--num N] [--secs S] [--repeats R] [--threads T] [--latency-ms MS]
#                          [--keys 16,24] [--orders sequential,hashed] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
NUM=1000000 SECS=15 REPEATS=3 THREADS=4 LATENCY=5 KEYS=16,24 ORDERS=sequential,hashed
OUT=bench/results/mashmeta-$(date +%Y%m%d-%H%M)
while [ $# -gt 0 ]; do
  case "$1" in
    --num) NUM="$2"; shift 2 ;;
    --secs) SECS="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --latency-ms) LATENCY="$2"; shift 2 ;;
    --keys) KEYS="$2"; shift 2 ;;
    --orders) ORDERS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
TARGET=${CARGO_TARGET_DIR:-target}
cargo build --release -p strata-bench >&2
BIN="$TARGET/release/strata-bench"
WORK=${MASHMETA_WORK:-/tmp/strata-mashmeta}
# 100-byte values, an 8 MiB block cache (far below the data), no persistent data cache: every
# data block a read needs below the cache is one capacity-tier GET at --latency-ms.
shape=(--value-size 100 --threads "$THREADS" --cache-size 8MiB --write-buffer-size 8MiB
  --target-file-size-base 8MiB --max-bytes-for-level-base 32MiB --persistent-cache-size 0
  --hotrap false --capacity-latency-ms "$LATENCY")
IFS=, read -ra KS <<<"$KEYS"
IFS=, read -ra OS <<<"$ORDERS"
for r in $(seq 1 "$REPEATS"); do
  for ks in "${KS[@]}"; do
    for order in "${OS[@]}"; do
      for idx in block mashmeta; do
        c="$ks-$order-$idx"
        db="$WORK/run/db" cap="file://$WORK/cap-$c"
        rm -rf "$WORK/run"
        common=(--num "$NUM" --key-size "$ks" --key-order "$order" "${shape[@]}"
          --capacity-index "$idx" --capacity "$cap" --db "$db")
        echo "== $c repeat $r ($(head -1 /proc/pressure/cpu))" >&2
        # The load (or a copy of its golden state), settled.
        "$BIN" --workload ycsb-c --ops 0 "${common[@]}" --golden "$WORK/golden-$c" \
          >"$OUT/load-$c.txt" 2>&1
        for b in readmissing readrandom; do
          "$BIN" --use-existing-db --benchmarks "$b" --duration "$SECS" "${common[@]}" \
            --json "$OUT/$b-$c-$r.json" >"$OUT/$b-$c-$r.txt" 2>&1
        done
      done
    done
  done
done
rm -rf "$WORK/run"
python3 bench/mashmeta_summary.py "$OUT" | tee "$OUT/summary.md"
