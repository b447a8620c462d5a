#!/usr/bin/env bash
# The standard comparison of Strata with its peers, in one go: builds strata-bench with the
# peers' cargo features, runs each suite for each engine on the same machine, interleaved
# (A B A B ... with --repeat), and writes a table of median ratios (Strata / peer) with their
# range, the machine and the commit.
#
#   bash bench/compare.sh [--num N] [--threads T[,T...]] [--repeat N]
#                         [--engines strata,rocksdb,slatedb]
#                         [--suites onetier,sync,txn,tiered,requests,scale-100,scale-1k,ycsb] [--tiered]
#                         [--sync-num N] [--sync-threads T[,T...]] [--txn-threads T[,T...]]
#                         [--tiered-threads T] [--tiered-secs S]
#                         [--requests-num N] [--requests-ops N] [--requests-threads T]
#                         [--ycsb-ops N] [--ycsb-workloads W[,W...]]
#                         [--out DIR] [-- EXTRA STRATA-BENCH FLAGS]
#
# Suites (docs/bench-peers.md says how each engine is configured):
#   onetier  db_bench fillrandom, readrandom, overwrite, readwhilewriting on one database;
#            16-byte keys, 100-byte values, everything on the local disk. With a thread list
#            (--threads 1,2,4,8) each thread count is a run of its own and a row of its own.
#   sync     fillrandom with every write fsynced (--sync; RocksDB's sync=true), --sync-num
#            (20000) records at each of --sync-threads (1,4,16): group commit at work.
#   txn      optimistic transactions: fillrandom of --num (1,000,000) records of 16+100 B, then
#            updaterandom (get, put) and randomtransaction (get_for_update, put, commit: one key
#            per transaction) with --num/2 operations each, uniform keys, at each of
#            --txn-threads (1,2,4), a fresh database per run. RocksDB runs as an
#            OptimisticTransactionDB for the whole run (its default parallel validation);
#            conflicts are in each phase's `txn_conflicts`.
#   tiered   YCSB-C (100% reads) with zipfian and with uniform keys for --tiered-secs (60) with
#            --tiered-threads (16) threads (reads wait on the capacity tier); the capacity tier
#            on file:// emulated at 5 ms per request; a fast-tier cache of 10% of the data;
#            8 MiB block cache and 8 MiB memtable for every engine; SlateDB's disk cache also
#            gets the bytes of Strata's fast-tier tables (equal local disk; strata runs first).
#            RocksDB is skipped here: its
#            second db_path cannot be slowed down.
#   requests YCSB-A, B and C with zipfian keys, each after its own load of --requests-num
#            (200000) records, --requests-ops (200000) operations with --requests-threads (4)
#            threads, on a real S3-compatible store (STRATA_S3_URL; SeaweedFS on loopback, started
#            by scripts/s3-server.sh when unset): the object-store requests by kind of every
#            phase, per 1,000 operations, and their monthly cost. 8 MiB block cache, a local
#            disk cache of a tenth of the data (Strata's LAP; SlateDB's also gets the bytes of
#            Strata's fast-tier tables), and the tiered sizes and placement of `--tiered` ycsb
#            (`tiered_sizes`: Strata's fast tier is L0 and the last fast level). Strata's
#            YCSB-A is run again with --capacity-request-budget at half its measured request
#            rate. RocksDB is skipped (it has no object store). bench/requests_summary.py
#            writes DIR/requests.md.
#   scale-100  at scale, where compaction decides: --num (default 50,000,000) records of 16+100 B
#            (~6 GB) loaded by fillrandom, then overwrite (--num writes); readrandom after the
#            page cache is dropped (when /proc/sys/vm/drop_caches is writable) with a block cache
#            of 1/16 of the data (so reads miss it); seekrandom with 10 and with 100 nexts (rows
#            seekrandom-10, seekrandom-100); readwhilewriting; deleterandom of --num/10 keys, then
#            readrandom (row readrandom-deleted) and a full scan (readseq, row readseq-deleted):
#            what the tombstones cost. Space amplification after the overwrite and at the end.
#            Each step is one strata-bench run on the database the previous step left.
#   scale-1k   the same with --num (default 10,000,000) records of 16 B + 1 KiB values that
#            compress to half (~10 GB).
#   ycsb     YCSB A, B, C, F, D, E (in that order, as YCSB runs them; zipfian keys, D's reads
#            of the latest inserts) on one load of --num (default 10,000,000) records of 16+100 B, --ycsb-ops (--num/10, at most
#            2,000,000; --ycsb-ops N to choose) operations each, at every --threads count (default 2,8 for this suite).
#            --ycsb-workloads c,a runs only those (in the order given; D and E after a load too).
#            With --tiered: a tiered database (capacity tier on file:// at 5 ms per request, a
#            fast tier of ~10% of the data: memtable and level sizes scaled to --num, HotRAP on), beside Strata with HotRAP off (variant
#            nohotrap) and SlateDB on the same emulated store; RocksDB is skipped.
#   In these three suites every engine gets the same options, printed in each result's
#   `settings`: 64 MiB memtables, the block cache above, 10 bloom bits a key, LZ4 from L2 down,
#   256 MiB base level, 64 MiB tables, 2 compaction threads, statistics on (RocksDB counts
#   its write amplification and stalls only with them). Rows also carry p50/p99/p99.9,
#   write amplification, space amplification (last step of a file), storage bytes read and
#   written per operation, CPU µs per operation, peak memory and stall time.
#
# --repeat N runs every (suite, threads) N times per engine, interleaved: strata, peer, strata,
# peer, ... Ratios pair run k of Strata with run k of the peer; the table shows their median
# and [min–max], and the median p99 of each engine (write p99 for write benchmarks, read p99
# for readwhilewriting).
#
# Output: DIR/<suite>-<engine>[-<variant>][-t<T>]-r<k>.{json,log}, DIR/compare.md (also
# printed) and DIR/compare.json: a list of rows {"suite", "benchmark", "threads", "peer",
# "ratio_median", "ratio_min", "ratio_max", "strata_p99_us", "peer_p99_us", "runs"}.
# Defaults: --num 1000000 (scale-100, scale-1k, ycsb: see above) --threads 2 (ycsb: 2,8)
#           --repeat 1 --engines strata,rocksdb --suites onetier
#           --out bench/results/<date>-<commit>.
set -euo pipefail
cd "$(dirname "$0")/.."

NUM=""
THREADS=""
TIERED=0
YCSB_OPS=""
YCSB_WORKLOADS="a,b,c,f,d,e"
ENGINES=strata,rocksdb
SUITES=onetier
REPEAT=1
SYNC_NUM=20000
SYNC_THREADS=1,4,16
TXN_THREADS=1,2,4
TIERED_THREADS=16
TIERED_SECS=60
REQ_NUM=200000
REQ_OPS=200000
REQ_THREADS=4
OUT=""
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --num) NUM="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --tiered) TIERED=1; shift ;;
    --ycsb-ops) YCSB_OPS="$2"; shift 2 ;;
    --ycsb-workloads) YCSB_WORKLOADS="$2"; shift 2 ;;
    --repeat) REPEAT="$2"; shift 2 ;;
    --sync-num) SYNC_NUM="$2"; shift 2 ;;
    --sync-threads) SYNC_THREADS="$2"; shift 2 ;;
    --txn-threads) TXN_THREADS="$2"; shift 2 ;;
    --engines) ENGINES="$2"; shift 2 ;;
    --suites) SUITES="$2"; shift 2 ;;
    --tiered-threads) TIERED_THREADS="$2"; shift 2 ;;
    --tiered-secs) TIERED_SECS="$2"; shift 2 ;;
    --requests-num) REQ_NUM="$2"; shift 2 ;;
    --requests-ops) REQ_OPS="$2"; shift 2 ;;
    --requests-threads) REQ_THREADS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,80p' "$0"; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

COMMIT="$(git describe --always --dirty --abbrev=10 2>/dev/null || echo unknown)"
OUT="${OUT:-bench/results/$(date +%Y%m%d-%H%M%S)-$COMMIT}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
DATA="$OUT/data"

FEATURES=()
IFS=, read -r -a ENGINE_LIST <<<"$ENGINES"
for e in "${ENGINE_LIST[@]}"; do
  case "$e" in
    strata) ;;
    rocksdb|slatedb) FEATURES+=("$e") ;;
    *) echo "unknown engine $e" >&2; exit 2 ;;
  esac
done
FEATURE_ARGS=()
if [ ${#FEATURES[@]} -gt 0 ]; then
  FEATURE_ARGS=(--features "$(IFS=,; echo "${FEATURES[*]}")")
fi
# librocksdb-sys generates its bindings with bindgen, which needs libclang (and a C++ compiler
# for RocksDB itself): check before a 15-minute build, install when we can, else say how.
# (libclang.so or libclang-N.so, which bindgen loads; not libclang-cpp.so, which LLVM's other
# packages bring and bindgen cannot use.)
have_libclang() {
  local dirs=("${LIBCLANG_PATH:-/nonexistent}" /usr/lib/llvm-*/lib /usr/lib/* /lib/*)
  local d
  for d in "${dirs[@]}"; do
    compgen -G "$d/libclang.so*" >/dev/null && return 0
    compgen -G "$d/libclang-[0-9]*.so*" >/dev/null && return 0
  done
  return 1
}
if [[ " ${FEATURES[*]:-} " == *" rocksdb "* ]]; then
  if ! have_libclang || ! command -v c++ >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else SUDO="none"; fi
    if [ "$SUDO" = none ] || ! command -v apt-get >/dev/null 2>&1; then
      echo "the RocksDB peer needs libclang and a C++ compiler: install them first, e.g." >&2
      echo "  apt-get install -y libclang-dev clang g++" >&2
      echo "(or set LIBCLANG_PATH to the directory holding libclang.so)" >&2
      exit 1
    fi
    echo "== installing libclang-dev, clang and g++ for the RocksDB build (apt-get)" >&2
    $SUDO apt-get update >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y libclang-dev clang g++ >&2
    if ! have_libclang; then
      echo "libclang is still missing after apt-get install -y libclang-dev; set LIBCLANG_PATH" >&2
      exit 1
    fi
  fi
fi
echo "building strata-bench ${FEATURE_ARGS[*]:-} (the RocksDB build takes ~15 minutes cold)" >&2
cargo build --release -p strata-bench "${FEATURE_ARGS[@]}" >&2
BIN="${CARGO_TARGET_DIR:-$PWD/target}/release/strata-bench"

run() { # run NAME ENGINE ARGS... (a fresh database unless KEEP=1)
  local name="$1" engine="$2"; shift 2
  echo "== $name ($engine)" >&2
  [ "${KEEP:-0}" = 1 ] || rm -rf "$DATA"
  STRATA_BENCH_COMMIT="$COMMIT" "$BIN" --engine "$engine" --db "$DATA/db" --no-progress \
    --json "$OUT/$name.json" "$@" "${EXTRA[@]}" | tee "$OUT/$name.log" >&2
}

IFS=, read -r -a SUITE_LIST <<<"$SUITES"
# A suite's own defaults, unless --num / --threads say otherwise.
suite_num() { # suite_num SUITE
  if [ -n "$NUM" ]; then echo "$NUM"; return; fi
  case "$1" in scale-100) echo 50000000 ;; scale-1k|ycsb) echo 10000000 ;; *) echo 1000000 ;; esac
}
suite_threads() { # suite_threads SUITE
  if [ -n "$THREADS" ]; then echo "$THREADS"; return; fi
  case "$1" in ycsb) echo 2,8 ;; *) echo 2 ;; esac
}
IFS=, read -r -a THREAD_LIST <<<"$(suite_threads onetier)"
IFS=, read -r -a SYNC_THREAD_LIST <<<"$SYNC_THREADS"
IFS=, read -r -a TXN_THREAD_LIST <<<"$TXN_THREADS"
for suite in "${SUITE_LIST[@]}"; do
  case "$suite" in onetier|sync|txn|tiered|requests|scale-100|scale-1k|ycsb) ;; *) echo "unknown suite $suite" >&2; exit 2 ;; esac
  if [ "$suite" = requests ] && [ -z "${STRATA_S3_URL:-}" ]; then
    trap 'bash scripts/s3-server.sh stop' EXIT
    s3_env=$(bash scripts/s3-server.sh start --server seaweedfs)
    eval "$s3_env"
  fi
done

# Drops the page cache when we may (root), so the next step reads from the disk.
drop_caches() {
  sync
  if [ -w /proc/sys/vm/drop_caches ]; then
    echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || echo "== could not drop the page cache" >&2
  else
    echo "== /proc/sys/vm/drop_caches is not writable: reads may hit the page cache" >&2
  fi
}

# The options every engine gets in the scale suites (CACHE: the block cache).
# The most bytes Strata's fast-tier tables held in any phase of the result files given: the
# local disk SlateDB's cache gets on top of the engines' common cache ("equal local disk").
fast_table_bytes() { # fast_table_bytes JSON...
  python3 -c 'import json,sys; print(max(p["tier"]["delta"]["fast_table_bytes"] for f in sys.argv[1:] for p in json.load(open(f))["phases"] if p.get("tier")))' "$@"
}

# The tiered set-up's memtable, base level and table sizes for N records of 16+100 B: the
# memtable 1/64 of the data, the base level 1/16, tables a quarter of it (at least 4, 8 and
# 2 MiB). With relative placement (the default `capacity_levels` 1) L0 compacts into the last
# fast level, whose target is a tenth of the last level's (at least the base), and the last
# level is on the capacity tier.
tiered_sizes() { # tiered_sizes N → "MEMTABLE BASE TABLE" (bytes)
  local mem=$(( $1 * 116 / 64 )) base=$(( $1 * 116 / 16 ))
  [ "$mem" -lt 4194304 ] && mem=4194304
  [ "$base" -lt 8388608 ] && base=8388608
  echo "$mem $base $(( base / 4 ))"
}

scale_opts() { # scale_opts CACHE [MEMTABLE BASE_LEVEL TABLE] (bytes; default 64, 256, 64 MiB)
  echo --cache-size "$1" --write-buffer-size "${2:-64MiB}" --bloom-bits 10 --compression-type lz4 \
    --min-level-to-compress 2 --max-bytes-for-level-base "${3:-256MiB}" \
    --target-file-size-base "${4:-64MiB}" --max-background-compactions 2 --statistics
}

# One repeat of scale-100 or scale-1k for one engine: steps on one database.
run_scale() { # run_scale SUITE ENGINE REPEAT
  local suite="$1" e="$2" r="$3" n value t tag reads
  n=$(suite_num "$suite")
  case "$suite" in scale-100) value=100 ;; *) value=1024 ;; esac
  reads=$(( n / 10 )); [ "$reads" -lt 10000 ] && reads=10000; [ "$reads" -gt 2000000 ] && reads=2000000
  # A block cache of 1/16 of the data (at least 8 MiB): reads miss it.
  local cache=$(( n * (16 + value) / 16 )); [ "$cache" -lt 8388608 ] && cache=8388608
  local common=(--num "$n" --key-size 16 --value-size "$value" --compression-ratio 0.5 $(scale_opts "$cache"))
  IFS=, read -r -a tl <<<"$(suite_threads "$suite")"
  for t in "${tl[@]}"; do
    tag=""; [ ${#tl[@]} -gt 1 ] && tag="-t$t"
    local c=("${common[@]}" --threads "$t")
    run "$suite-$e-load$tag-r$r" "$e" --benchmarks fillrandom,overwrite "${c[@]}" --space-amp
    drop_caches
    KEEP=1 run "$suite-$e-read$tag-r$r" "$e" --use-existing-db --benchmarks readrandom --reads "$reads" "${c[@]}"
    KEEP=1 run "$suite-$e-seek10$tag-r$r" "$e" --use-existing-db --benchmarks seekrandom --seek-nexts 10 \
      --reads $(( reads / 4 )) "${c[@]}"
    KEEP=1 run "$suite-$e-seek100$tag-r$r" "$e" --use-existing-db --benchmarks seekrandom --seek-nexts 100 \
      --reads $(( reads / 20 )) "${c[@]}"
    KEEP=1 run "$suite-$e-rww$tag-r$r" "$e" --use-existing-db --benchmarks readwhilewriting --reads "$reads" "${c[@]}"
    KEEP=1 run "$suite-$e-deleted$tag-r$r" "$e" --use-existing-db --benchmarks deleterandom,readrandom \
      --ops $(( n / 10 )) --reads "$reads" "${c[@]}"
    drop_caches
    # One pass over what is left (~90.5% of the keys after --num/10 random deletes).
    KEEP=1 run "$suite-$e-scan$tag-r$r" "$e" --use-existing-db --benchmarks readseq --reads $(( n * 9 / 10 )) \
      "${c[@]}" --space-amp
  done
}

# One repeat of the ycsb suite for one engine (VARIANT: nohotrap for Strata without HotRAP).
run_ycsb() { # run_ycsb ENGINE REPEAT [VARIANT]
  local e="$1" r="$2" variant="${3:-}" n ops t tag wl
  n=$(suite_num ycsb)
  ops="$YCSB_OPS"
  if [ -z "$ops" ]; then ops=$(( n / 10 )); [ "$ops" -gt 2000000 ] && ops=2000000; fi
  local cache=$(( n * 116 / 16 )); [ "$cache" -lt 8388608 ] && cache=8388608
  local extra=() sizes=()
  if [ "$TIERED" = 1 ]; then
    # The tiered suite's set-up: a fast tier (tables or disk cache) of ~10% of the data. The
    # memtable (1/64 of the data) and the levels (base 1/16, tables a quarter of it; at least
    # 4, 8 and 2 MiB) scale with it. Placement is relative (the default `capacity_levels` 1):
    # L0 compacts into the last fast level, whose target is a tenth of the last level's (at
    # least the base), and the last level is on the capacity tier — ~10% fast at any --num.
    # (`--fast-levels 1` would make L1 the last fast level, but with dynamic level sizing L0
    # compacts into the shallowest level in use, a capacity level on a tree this small: the
    # fast tier held L0 alone, 1.7%, and
    # HotRAP had no fast level to retain hot records in.)
    local fast=$(( n * 116 / 10 ))
    read -r -a sizes <<<"$(tiered_sizes "$n")"
    cache=8388608
    if [ "$e" = slatedb ] && ls "$OUT"/ycsb-strata-?-*r"$r".json >/dev/null 2>&1; then
      # Equal local disk: SlateDB keeps all its tables in the object store, so its disk cache
      # also gets the most bytes Strata's fast-tier tables took in this repeat (HotRAP on).
      fast=$(( fast + $(fast_table_bytes "$OUT"/ycsb-strata-?-*r"$r".json) ))
    fi
    extra=(--capacity "file://$DATA/capacity" --capacity-latency-ms 5 --persistent-cache-size "$fast")
    [ "$variant" = nohotrap ] && extra+=(--hotrap false)
  fi
  IFS=, read -r -a tl <<<"$(suite_threads ycsb)"
  for t in "${tl[@]}"; do
    tag=""; [ ${#tl[@]} -gt 1 ] && tag="-t$t"
    local keep=0
    local wls; IFS=, read -r -a wls <<<"$YCSB_WORKLOADS"
    for wl in "${wls[@]}"; do
      local more=()
      [ "$keep" = 1 ] && more=(--use-existing-db)
      # Each workload's own key distribution (YCSB's: zipfian, latest for D).
      KEEP=$keep run "ycsb-$e${variant:+-$variant}-$wl$tag-r$r" "$e" --workload "$wl" --num "$n" \
        --ops "$ops" --threads "$t" --key-size 16 --value-size 100 $(scale_opts "$cache" "${sizes[@]}") \
        "${extra[@]}" "${more[@]}"
      keep=1
    done
  done
}

# One repeat of one suite for one engine.
run_suite() { # run_suite SUITE ENGINE REPEAT
  local suite="$1" e="$2" r="$3"
  case "$suite" in
    scale-100|scale-1k)
      if [ "$e" = slatedb ]; then
        echo "== $suite: skipping slatedb (one-tier suites compare with RocksDB)" >&2
        return
      fi
      run_scale "$suite" "$e" "$r"
      ;;
    ycsb)
      if [ "$TIERED" = 1 ] && [ "$e" = rocksdb ]; then
        echo "== ycsb --tiered: skipping rocksdb (its second db_path cannot be emulated)" >&2
        return
      fi
      if [ "$TIERED" = 0 ] && [ "$e" = slatedb ]; then
        echo "== ycsb: skipping slatedb without --tiered (it keeps its data in an object store)" >&2
        return
      fi
      run_ycsb "$e" "$r"
      if [ "$TIERED" = 1 ] && [ "$e" = strata ]; then
        run_ycsb strata "$r" nohotrap
      fi
      ;;
    onetier)
      for t in "${THREAD_LIST[@]}"; do
        local tag=""
        [ ${#THREAD_LIST[@]} -gt 1 ] && tag="-t$t"
        run "onetier-$e$tag-r$r" "$e" --benchmarks fillrandom,readrandom,overwrite,readwhilewriting \
          --num "$(suite_num onetier)" --threads "$t" --key-size 16 --value-size 100
      done
      ;;
    sync)
      for t in "${SYNC_THREAD_LIST[@]}"; do
        run "sync-$e-t$t-r$r" "$e" --benchmarks fillrandom --sync \
          --num "$SYNC_NUM" --threads "$t" --key-size 16 --value-size 100
      done
      ;;
    txn)
      if [ "$e" = slatedb ]; then
        echo "== txn: skipping slatedb (its transactions are not wired into strata-bench)" >&2
        return
      fi
      local n; n=$(suite_num txn)
      for t in "${TXN_THREAD_LIST[@]}"; do
        run "txn-$e-t$t-r$r" "$e" --benchmarks fillrandom,updaterandom,randomtransaction \
          --num "$n" --ops $(( n / 2 )) --threads "$t" --key-size 16 --value-size 100
      done
      ;;
    tiered)
      if [ "$e" = rocksdb ]; then
        echo "== tiered: skipping rocksdb (its second db_path cannot be emulated)" >&2
        return
      fi
      # 10% of the data (16 + 100 bytes a record) as the fast-tier cache.
      local NUM; NUM=$(suite_num tiered)
      local cache=$(( NUM * 116 / 10 )) dist local_cache fast
      for dist in zipfian uniform; do
        local_cache=$cache
        if [ "$e" = slatedb ] && [ -f "$OUT/tiered-strata-$dist-r$r.json" ]; then
          # Equal local disk: SlateDB keeps everything in the object store, so its disk
          # cache also gets the bytes Strata's fast-tier tables took in the same repeat.
          fast=$(fast_table_bytes "$OUT/tiered-strata-$dist-r$r.json")
          local_cache=$(( cache + fast ))
        fi
        run "tiered-$e-$dist-r$r" "$e" --workload c --distribution "$dist" \
          --num "$NUM" --threads "$TIERED_THREADS" --duration "$TIERED_SECS" \
          --key-size 16 --value-size 100 --cache-size 8MiB --write-buffer-size 8MiB \
          --capacity "file://$DATA/capacity" --capacity-latency-ms 5 \
          --persistent-cache-size "$local_cache" --fast-levels 1
      done
      ;;
    requests)
      if [ "$e" = rocksdb ]; then
        echo "== requests: skipping rocksdb (no object store)" >&2
        return
      fi
      local cache=$(( REQ_NUM * 116 / 10 )) wl local_cache fast rate mem base table
      local s3="${STRATA_S3_URL%/}/compare-$(date +%s)"
      # The tiered suites' sizes and relative placement: the fast tier is L0 plus the last fast
      # level (`--fast-levels 1` left it L0 alone: with dynamic level sizing L0 compacts into
      # the shallowest level in use, a capacity level on a tree this small).
      read -r mem base table <<<"$(tiered_sizes "$REQ_NUM")"
      local sized=(--key-size 16 --value-size 100 --cache-size 8MiB --write-buffer-size "$mem"
        --max-bytes-for-level-base "$base" --target-file-size-base "$table")
      for wl in a b c; do
        local_cache=$cache
        if [ "$e" = slatedb ] && [ -f "$OUT/requests-strata-$wl-r$r.json" ]; then
          fast=$(fast_table_bytes "$OUT/requests-strata-$wl-r$r.json")
          local_cache=$(( cache + fast ))
        fi
        run "requests-$e-$wl-r$r" "$e" --workload "$wl" --distribution zipfian \
          --num "$REQ_NUM" --ops "$REQ_OPS" --threads "$REQ_THREADS" "${sized[@]}" \
          --capacity "$s3/$e-$wl-r$r" --persistent-cache-size "$local_cache"
        if [ "$e" = strata ] && [ "$wl" = a ]; then
          # Half the request rate the unbudgeted run measured (load and run phases together).
          rate=$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
n = sum(sum(p["tier"]["capacity_requests"].values()) for p in r["phases"])
t = sum(p["elapsed_secs"] for p in r["phases"])
print(f"{max(n / t / 2, 1):.1f}")' "$OUT/requests-strata-a-r$r.json")
          run "requests-strata-budget-a-r$r" strata --workload a --distribution zipfian \
            --num "$REQ_NUM" --ops "$REQ_OPS" --threads "$REQ_THREADS" "${sized[@]}" \
            --capacity "$s3/strata-budget-a-r$r" --persistent-cache-size "$local_cache" \
            --capacity-request-budget "$rate/s"
        fi
      done
      ;;
  esac
}

# Interleaved: every engine runs repeat r of a suite before any engine runs repeat r+1.
for suite in "${SUITE_LIST[@]}"; do
  for r in $(seq 1 "$REPEAT"); do
    for e in "${ENGINE_LIST[@]}"; do
      run_suite "$suite" "$e" "$r"
    done
  done
done

rm -rf "$DATA"

if ls "$OUT"/*.json 2>/dev/null | grep -qv '/requests-'; then
  python3 bench/compare_summary.py "$OUT" "$COMMIT" | tee "$OUT/compare.md"
fi
if ls "$OUT"/requests-*.json >/dev/null 2>&1; then
  python3 bench/requests_summary.py "$OUT" "$COMMIT" | tee "$OUT/requests.md"
fi
echo "results in $OUT" >&2
