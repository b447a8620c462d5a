#!/usr/bin/env bash
# Split-forest (SifrDB) compaction against leveled, side by side on one machine, interleaved
# (leveled, split-forest, leveled, split-forest, ... with --repeat), and a tiered run of
# parallel search against sequential search.
#
#   bash bench/forest.sh [--num N] [--big-num N] [--repeat R] [--rocksdb] [--out DIR]
#                        [--suites random-100,seq-100,random-1k,seq-1k]
#                        [--skip-tiered] [--skip-onetier] [-- EXTRA STRATA-BENCH FLAGS]
#
# Suites (16-byte keys, 4 MiB memtables x 2, 8 MiB block cache, 2 compaction threads, local
# disk; data >= 10x the memtable budget). Table size and level base are scaled to the small
# memtables as RocksDB's tuning guide scales them (target table = memtable = 4 MiB; level base
# = memtable x L0 trigger = 16 MiB): with the engine defaults (64 MiB tables, 256 MiB base) a
# few-hundred-MB database has so few tables that early cleaning never triggers and leveled
# rewrites its whole L1 on every L0 compaction. Every table stays open (--max-open-files 65536,
# as RocksDB's default of unlimited): at 4 MiB a few GB are more than the default 1000 tables,
# and a lookup that meets a closed table reopens it (footer, index and filter reads), which
# halved readrandom for both styles at 8 GB.
#   random-100   fillrandom, overwrite, readrandom: --num records of 100-byte values
#   seq-100      fillseq, readrandom: --num records of 100-byte values
#   random-1k    fillrandom, overwrite, readrandom: --big-num records of 1 KiB values
#   seq-1k       fillseq, readrandom: --big-num records of 1 KiB values
# Each suite runs on Strata leveled and Strata split-forest (and, with --rocksdb, on RocksDB
# level and universal compaction: the `rocksdb` feature and libclang are needed).
#   tiered       split forest with every level below L0 on a file:// capacity tier at 5 ms per
#                request (no fast-tier cache, 1 MiB block cache, HotRAP off, no Bloom filters,
#                so every candidate tree costs a request: the capacity-tier miss path):
#                fillrandom of --tiered-num records with 16 trees per level, then readrandom
#                readmissing and seekrandom (seeks prefetch every tree's block in parallel)
#                with --search-threads 16 and with 0 (sequential), 8 threads.
#
# Output: DIR/<suite>-<engine>-<style>-r<k>.json and .log, DIR/forest.md (printed) with, per
# suite and benchmark, the median ops/s of each style and their ratio [min-max], and the
# write amplification over the suite's write phases (flush + compaction bytes written during
# all the suite's phases / user bytes written), the peak extra space a compaction held and
# the tables probed per lookup. Defaults: --num 1000000 --big-num 200000 --repeat 3
# --out bench/results/forest-<commit>.
set -euo pipefail
cd "$(dirname "$0")/.."

NUM=1000000
BIG_NUM=200000
TIERED_NUM=200000
REPEAT=3
ROCKSDB=0
TIERED=1
ONETIER=1
SUITES="random-100 seq-100 random-1k seq-1k"
OUT=""
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --num) NUM="$2"; shift 2 ;;
    --big-num) BIG_NUM="$2"; shift 2 ;;
    --tiered-num) TIERED_NUM="$2"; shift 2 ;;
    --repeat) REPEAT="$2"; shift 2 ;;
    --rocksdb) ROCKSDB=1; shift ;;
    --skip-tiered) TIERED=0; shift ;;
    --skip-onetier) ONETIER=0; shift ;;
    --suites) SUITES="${2//,/ }"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
OUT=${OUT:-bench/results/forest-$COMMIT}
mkdir -p "$OUT"

FEATURES=()
if [ "$ROCKSDB" = 1 ]; then
  if ! ldconfig -p 2>/dev/null | grep -q libclang; then
    echo "RocksDB's build needs libclang: apt-get install -y libclang-dev" >&2
    exit 1
  fi
  FEATURES=(--features rocksdb)
fi
cargo build --release -p strata-bench "${FEATURES[@]}"
BIN=target/release/strata-bench

# Every open table holds a file descriptor (RocksDB's too): a few thousand at 8 GB.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
COMMON=(--key-size 16 --write-buffer-size 4MiB --max-write-buffer-number 2 --target-file-size-base 4MiB --max-bytes-for-level-base 16MiB --cache-size 8MiB
        --max-open-files 65536 --max-background-compactions 2 --threads 1)
ENGINES=("strata leveled" "strata split-forest")
if [ "$ROCKSDB" = 1 ]; then
  ENGINES+=("rocksdb leveled" "rocksdb split-forest")
fi

run() { # suite engine style json log args...
  local suite=$1 engine=$2 style=$3 json=$4 log=$5; shift 5
  local db="$OUT/db-$engine"
  rm -rf "$db"
  echo "== $suite $engine $style ($(cut -d' ' -f2 /proc/pressure/cpu | head -1))"
  "$BIN" --engine "$engine" --db "$db" --compaction-style "$style" "${COMMON[@]}" "$@" \
    --json "$json" "${EXTRA[@]}" > "$log" 2>&1
  rm -rf "$db"
}

for r in $(seq 1 "$REPEAT"); do
  [ "$ONETIER" = 1 ] || break
  for suite in $SUITES; do
    case $suite in
      random-100) args=(--benchmarks fillrandom,overwrite,readrandom --num "$NUM" --value-size 100) ;;
      seq-100) args=(--benchmarks fillseq,readrandom --num "$NUM" --value-size 100) ;;
      random-1k) args=(--benchmarks fillrandom,overwrite,readrandom --num "$BIG_NUM" --value-size 1024) ;;
      seq-1k) args=(--benchmarks fillseq,readrandom --num "$BIG_NUM" --value-size 1024) ;;
    esac
    for e in "${ENGINES[@]}"; do
      set -- $e
      run "$suite" "$1" "$2" "$OUT/$suite-$1-$2-r$r.json" "$OUT/$suite-$1-$2-r$r.log" "${args[@]}"
    done
  done
done

if [ "$TIERED" = 1 ]; then
  for r in $(seq 1 "$REPEAT"); do
    for st in 16 0; do
      db="$OUT/db-tiered"
      cap="$OUT/cap-tiered"
      rm -rf "$db" "$cap"
      echo "== tiered search-threads $st ($(cut -d' ' -f2 /proc/pressure/cpu | head -1))"
      "$BIN" --engine strata --db "$db" --compaction-style split-forest --trees-per-level 16 \
        --search-threads "$st" --capacity "file://$(realpath -m "$cap")" --fast-levels 0 \
        --capacity-latency-ms 5 --persistent-cache-size 0 --hotrap false --cache-size 1MiB \
        --key-size 16 --value-size 100 --write-buffer-size 1MiB --max-write-buffer-number 2 \
        --bloom-bits 0 --benchmarks fillrandom,readrandom,readmissing,seekrandom --num "$TIERED_NUM" \
        --reads 2000 --threads 8 \
        --json "$OUT/tiered-search$st-r$r.json" "${EXTRA[@]}" \
        > "$OUT/tiered-search$st-r$r.log" 2>&1
      rm -rf "$db" "$cap"
    done
  done
fi

python3 bench/forest_summary.py "$OUT" | tee "$OUT/forest.md"
