#!/usr/bin/env bash
# LogStore's evaluation with `strata bench` (issue 12): static placement, LogStore, HotRAP and
# LogStore+HotRAP side by side, over four workloads:
#
#   hotrange  YCSB-C, keys loaded in sequential order, hotspot-5%: the hot records are a
#             contiguous key range, so temperature follows tables (LogStore's case)
#   zipf      YCSB-C, zipfian, hashed key order: hot keys spread over every table (table
#             placement cannot help; HotRAP can)
#   burst     an overwrite burst of --burst records with no reads (LogStore defers compaction
#             while the fast tier holds less than --defer-fast-bytes, default half the data),
#             then --reads random reads
#   shift     YCSB-C, keys loaded in sequential order, hotspot-5% whose hot range moves to the
#             middle of the key space halfway through the run
#
#   bash bench/logstore.sh [--num N] [--threads T] [--secs S] [--repeats R] [--burst B] [--reads R]
#                          [--defer-fast-bytes BYTES] [--workloads hotrange,zipf,burst,shift]
#                          [--configs static,logstore,hotrap,both] [--out DIR]
#
# Every run: 1 KiB incompressible values, 16-byte keys, the capacity tier on file:// emulated
# at --latency-ms (5) per request, the fast tier ~10% of the data (max_bytes_for_level_base =
# data / 16, fast-tier budget = data / 10), a 4 MiB block cache (smaller than any hot set),
# 8 MiB memtables and tables, no persistent block cache. Each configuration loads once per key
# order into a golden copy; every run starts from it. Runs are interleaved (static logstore
# hotrap both, static ...) and repeated: quote the median and the range.
#
# Output: DIR/<workload>-<config>-<repeat>.{json,txt}, DIR/summary.md (also printed).
set -euo pipefail
cd "$(dirname "$0")/.."

NUM=500000
THREADS=4
SECS=40
REPEATS=3
BURST=100000
READS=20000
LATENCY=5
WORKLOADS=hotrange,zipf,burst,shift
CONFIGS=static,logstore,hotrap,both
OUT=""
DEFER=""
while [ $# -gt 0 ]; do
  case "$1" in
    --num) NUM="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --secs) SECS="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --burst) BURST="$2"; shift 2 ;;
    --reads) READS="$2"; shift 2 ;;
    --defer-fast-bytes) DEFER="$2"; shift 2 ;;
    --latency-ms) LATENCY="$2"; shift 2 ;;
    --workloads) WORKLOADS="$2"; shift 2 ;;
    --configs) CONFIGS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
COMMIT=$(git rev-parse --short=10 HEAD)
OUT=${OUT:-bench/results/logstore-$(date +%Y%m%d-%H%M)-$COMMIT}
mkdir -p "$OUT"
TARGET=${CARGO_TARGET_DIR:-target}
cargo build --release -p strata-bench >&2
BIN="$TARGET/release/strata-bench"
WORK=${LOGSTORE_WORK:-/tmp/strata-logstore}
mkdir -p "$WORK"

DATA=$((NUM * 1024))
BASE=$((DATA / 16))
BUDGET=$((DATA / 10))
DEFER=${DEFER:-$((DATA / 2))}
shape=(--value-size 1024 --compression-ratio 1.0 --threads "$THREADS"
  --cache-size 4MiB --write-buffer-size 8MiB --target-file-size-base 8MiB
  --max-bytes-for-level-base "$BASE" --persistent-cache-size 0 --fast-tier-budget "$BUDGET"
  --capacity-latency-ms "$LATENCY")
common=(--num "$NUM" "${shape[@]}")

flags_of() { # config
  case "$1" in
    static) echo "--placement-policy static --hotrap false" ;;
    logstore) echo "--placement-policy logstore --hotrap false" ;;
    hotrap) echo "--placement-policy static --hotrap true" ;;
    both) echo "--placement-policy logstore --hotrap true" ;;
  esac
}

run() { # workload config repeat
  local w=$1 c=$2 r=$3 name="$1-$2-$3"
  local db="$WORK/$c/db" order=hashed
  # shellcheck disable=SC2046
  local flags=($(flags_of "$c") --capacity "file://$WORK/$c/capacity")
  rm -rf "$WORK/$c"
  echo "== $name ($(head -1 /proc/pressure/cpu))" >&2
  case "$w" in
    hotrange)
      "$BIN" --workload ycsb-c --key-order sequential --distribution hotspot-5% \
        "${common[@]}" "${flags[@]}" --db "$db" --golden "$WORK/golden-seq-$c" \
        --duration "$SECS" --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1 ;;
    zipf)
      "$BIN" --workload ycsb-c --distribution zipfian \
        "${common[@]}" "${flags[@]}" --db "$db" --golden "$WORK/golden-hash-$c" \
        --duration "$SECS" --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1 ;;
    shift)
      "$BIN" --workload ycsb-c --key-order sequential \
        --hotspot-schedule "0=hotspot:0.05,$((SECS / 2))=hotspot:0.05@0.5" \
        "${common[@]}" "${flags[@]}" --db "$db" --golden "$WORK/golden-seq-$c" \
        --duration "$SECS" --plot "$OUT/$name.png" --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1 ;;
    burst)
      # The loaded state (the golden copy of the hashed load), then the burst and the reads.
      "$BIN" --workload ycsb-c --ops 0 "${common[@]}" "${flags[@]}" --db "$db" \
        --golden "$WORK/golden-hash-$c" >/dev/null 2>&1
      "$BIN" --use-existing-db --benchmarks overwrite,readrandom --reads "$READS" --key-order hashed \
        --num "$BURST" "${shape[@]}" "${flags[@]}" --db "$db" --defer-fast-bytes "$DEFER" \
        --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1 ;;
  esac
  rm -rf "$WORK/$c"
}

IFS=, read -ra WS <<<"$WORKLOADS"
IFS=, read -ra CS <<<"$CONFIGS"
for w in "${WS[@]}"; do
  for r in $(seq 1 "$REPEATS"); do
    for c in "${CS[@]}"; do
      run "$w" "$c" "$r"
    done
  done
done
python3 bench/logstore_summary.py "$OUT" | tee "$OUT/summary.md"
