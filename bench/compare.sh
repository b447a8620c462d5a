#!/usr/bin/env bash
# The standard comparison of Strata with its peers, in one go: builds strata-bench with the
# peers' cargo features, runs each suite for each engine on the same machine, one engine at a
# time, and writes a Markdown table of absolute figures and ratios (Strata / peer) with the
# machine and the commit.
#
#   bash bench/compare.sh [--num N] [--threads T] [--engines strata,rocksdb,slatedb]
#                         [--suites onetier,tiered] [--tiered-threads T] [--tiered-secs S]
#                         [--out DIR] [-- EXTRA STRATA-BENCH FLAGS]
#
# Suites (docs/bench-peers.md says how each engine is configured):
#   onetier  db_bench fillrandom, readrandom, overwrite, readwhilewriting on one database;
#            16-byte keys, 100-byte values, everything on the local disk.
#   tiered   YCSB-C (100% reads) with zipfian and with uniform keys for --tiered-secs (60) with
#            --tiered-threads (16) threads (reads wait on the capacity tier); the capacity tier
#            on file:// emulated at 5 ms per request; a fast-tier cache of 10% of the data;
#            8 MiB block cache and 8 MiB memtable for every engine; SlateDB's disk cache also
#            gets the bytes of Strata's fast-tier tables (equal local disk; strata runs first).
#            RocksDB is skipped here: its
#            second db_path cannot be slowed down.
#
# Output: DIR/<suite>-<engine>[-<distribution>].{json,log} and DIR/compare.md (also printed).
# Defaults: --num 1000000 --threads 2 --engines strata,rocksdb --suites onetier
#           --out bench/results/<date>-<commit>.
set -euo pipefail
cd "$(dirname "$0")/.."

NUM=1000000
THREADS=2
ENGINES=strata,rocksdb
SUITES=onetier
TIERED_THREADS=16
TIERED_SECS=60
OUT=""
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --num) NUM="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --engines) ENGINES="$2"; shift 2 ;;
    --suites) SUITES="$2"; shift 2 ;;
    --tiered-threads) TIERED_THREADS="$2"; shift 2 ;;
    --tiered-secs) TIERED_SECS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
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
echo "building strata-bench ${FEATURE_ARGS[*]:-} (the RocksDB build takes ~15 minutes cold)" >&2
cargo build --release -p strata-bench "${FEATURE_ARGS[@]}" >&2
BIN="${CARGO_TARGET_DIR:-$PWD/target}/release/strata-bench"

run() { # run NAME ENGINE ARGS...
  local name="$1" engine="$2"; shift 2
  echo "== $name ($engine)" >&2
  rm -rf "$DATA"
  STRATA_BENCH_COMMIT="$COMMIT" "$BIN" --engine "$engine" --db "$DATA/db" --no-progress \
    --json "$OUT/$name.json" "$@" "${EXTRA[@]}" | tee "$OUT/$name.log" >&2
}

IFS=, read -r -a SUITE_LIST <<<"$SUITES"
for suite in "${SUITE_LIST[@]}"; do
  for e in "${ENGINE_LIST[@]}"; do
    case "$suite" in
      onetier)
        run "onetier-$e" "$e" --benchmarks fillrandom,readrandom,overwrite,readwhilewriting \
          --num "$NUM" --threads "$THREADS" --key-size 16 --value-size 100
        ;;
      tiered)
        if [ "$e" = rocksdb ]; then
          echo "== tiered: skipping rocksdb (its second db_path cannot be emulated)" >&2
          continue
        fi
        # 10% of the data (16 + 100 bytes a record) as the fast-tier cache.
        cache=$(( NUM * 116 / 10 ))
        for dist in zipfian uniform; do
          local_cache=$cache
          if [ "$e" = slatedb ] && [ -f "$OUT/tiered-strata-$dist.json" ]; then
            # Equal local disk: SlateDB keeps everything in the object store, so its disk
            # cache also gets the bytes Strata's fast-tier tables took in the same suite.
            fast=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(max(p["tier"]["delta"]["fast_table_bytes"] for p in r["phases"] if p.get("tier")))' "$OUT/tiered-strata-$dist.json")
            local_cache=$(( cache + fast ))
          fi
          run "tiered-$e-$dist" "$e" --workload c --distribution "$dist" \
            --num "$NUM" --threads "$TIERED_THREADS" --duration "$TIERED_SECS" \
            --key-size 16 --value-size 100 --cache-size 8MiB --write-buffer-size 8MiB \
            --capacity "file://$DATA/capacity" --capacity-latency-ms 5 \
            --persistent-cache-size "$local_cache" --fast-levels 1
        done
        ;;
      *) echo "unknown suite $suite" >&2; exit 2 ;;
    esac
  done
done

rm -rf "$DATA"

python3 - "$OUT" "$COMMIT" <<'EOF' | tee "$OUT/compare.md"
import json, os, sys, glob
out, commit = sys.argv[1], sys.argv[2]
reports = {}
for p in sorted(glob.glob(os.path.join(out, "*.json"))):
    name = os.path.basename(p)[:-5]
    with open(p) as f:
        r = json.load(f)
    if r.get("schema") != "strata-bench/1":
        sys.exit(f"{p}: unknown schema {r.get('schema')!r}")
    suite, engine = name.split("-")[0], r["engine"]
    variant = name.split("-", 2)[2] if name.count("-") >= 2 else ""
    for ph in r["phases"]:
        if ph["role"] == "load":
            continue
        row = f"{suite}: {ph['name']}" + (f" ({variant})" if variant else "")
        p99 = max((l["p99_us"] for l in ph["latency"] if ph["name"] != "readwhilewriting" or l["op"] == "read"), default=0)
        reports.setdefault(row, {})[engine] = (ph["ops_per_sec"], p99)
    machine = r["machine"]
    args = r["args"]
engines = []
for row in reports.values():
    for e in row:
        if e not in engines:
            engines.append(e)
engines.sort(key=lambda e: (e != "strata", e))
peers = [e for e in engines if e != "strata"]
print(f"### strata-bench comparison, commit `{commit}`\n")
print(f"Machine: {machine['cpus']} cpus {machine.get('cpu_model') or ''}, "
      f"{(machine.get('memory_bytes') or 0) / 2**30:.1f} GiB, {machine['os']}; "
      f"{args['num']} records of {args['key_size']}+{args['value_size']['min']} B, {args['threads']} threads.\n")
head = ["benchmark"] + [f"{e} ops/s" for e in engines] + [f"strata / {p}" for p in peers] + [f"{e} p99 µs" for e in engines]
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for row, by in reports.items():
    cells = [row]
    cells += [f"{by[e][0]:,.0f}" if e in by else "" for e in engines]
    for p in peers:
        if "strata" in by and p in by and by[p][0] > 0:
            cells.append(f"**{by['strata'][0] / by[p][0]:.2f}×**")
        else:
            cells.append("")
    cells += [f"{by[e][1]:,.1f}" if e in by else "" for e in engines]
    print("| " + " | ".join(cells) + " |")
EOF
echo "results in $OUT" >&2
