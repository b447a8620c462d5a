#!/usr/bin/env bash
# Node-loss recovery time (RocksMash §3.4, Fig. 23): loads a database with the extended WAL in
# a separate log location, "loses" the fast directory, and rebuilds it with
# `strata recover --recovery parallel` and `--recovery replay`, interleaved (P R P R ...),
# each from a pristine copy of the log location (and capacity tier).
#
#   bench/recovery.sh [--num N] [--value-size B] [--repeats R] [--capacity true|false]
#                     [--object-log-ms MS] [--out DIR]
#
# --object-log-ms MS puts the log location on an object store (object_store's local file
# system, `file://`) with MS ms of emulated latency per request, instead of a directory.
#
# Prints one JSON report per run into $OUT and a summary (median and range per mode).
set -euo pipefail
cd "$(dirname "$0")/.."
NUM=8000000 VALUE=128 REPEATS=3 CAPACITY=false OBJMS=
OUT=bench/results/recovery-$(date +%Y%m%d-%H%M)
while [ $# -gt 0 ]; do
  case "$1" in
    --num) NUM="$2"; shift 2 ;;
    --value-size) VALUE="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --capacity) CAPACITY="$2"; shift 2 ;;
    --object-log-ms) OBJMS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
TARGET=${CARGO_TARGET_DIR:-target}
cargo build --release -p strata-cli >&2
BIN="$TARGET/release/strata"
W=${RECOVERY_WORK:-/tmp/strata-recovery}
rm -rf "$W"
mkdir -p "$W"
cap=()
rcap=()
if [ -n "$OBJMS" ]; then
  wal=(--wal-location "file://$W/wal" --wal-latency-ms "$OBJMS")
else
  wal=(--wal-location "$W/wal")
fi
if [ "$CAPACITY" = true ]; then
  cap=(--capacity "file://$W/cap")
  rcap=(--capacity "file://$W/cap")
fi
echo "== load: fillrandom $NUM x $VALUE B ($(head -1 /proc/pressure/cpu))" >&2
"$BIN" bench --benchmarks fillrandom --num "$NUM" --value-size "$VALUE" --db "$W/db" \
  "${wal[@]}" --extended-wal true --hotrap false "${cap[@]}" \
  >"$OUT/load.txt" 2>&1
sync
du -sb "$W/db" "$W/wal" | tee "$OUT/sizes.txt" >&2
rm -rf "$W/db"
mv "$W/wal" "$W/wal.orig"
[ "$CAPACITY" = true ] && mv "$W/cap" "$W/cap.orig"
for r in $(seq 1 "$REPEATS"); do
  for mode in parallel replay; do
    rm -rf "$W/wal" "$W/cap" "$W/new"
    cp -a "$W/wal.orig" "$W/wal"
    [ "$CAPACITY" = true ] && cp -a "$W/cap.orig" "$W/cap"
    # Every run starts with no dirty pages: the previous run's tables and this copy would
    # otherwise be written back during the run (the mode run right after the other's
    # heavier output paid for it).
    sync
    echo "== $mode repeat $r ($(head -1 /proc/pressure/cpu))" >&2
    "$BIN" recover "${wal[@]}" "${rcap[@]}" --db "$W/new" --recovery "$mode" \
      --json >"$OUT/$mode-$r.json"
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[2], 'total %.2fs read %.2fs index %.2fs build %.2fs lost %d written %d' % (r['total_secs'], r['read_secs'], r['index_secs'], r['build_secs'], r['lost_tables'], r['tables_written']))" "$OUT/$mode-$r.json" "$mode" >&2
  done
done
python3 - "$OUT" "$REPEATS" <<'PY' | tee "$OUT/summary.txt"
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
t = {m: [json.load(open(f"{out}/{m}-{r}.json"))["total_secs"] for r in range(1, n + 1)] for m in ("parallel", "replay")}
for m, v in t.items():
    print(f"{m}: median {statistics.median(v):.2f}s range {min(v):.2f}-{max(v):.2f}s")
ratios = [b / a for a, b in zip(t["parallel"], t["replay"])]
print(f"replay/parallel: median {statistics.median(ratios):.2f}x range {min(ratios):.2f}-{max(ratios):.2f}x")
PY
rm -rf "$W"
