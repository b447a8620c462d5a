#!/usr/bin/env bash
# Backup and restore throughput of a two-tier database with >= 2 GiB of tables, locally and over
# an emulated link, and the bytes an incremental backup uploads after 1% and 10% overwrites
# (issue 47). Loads NUM unique keys of VALUE-byte incompressible values with `strata bench`
# (tables on a fast directory and a file:// capacity tier), then runs `strata backup create`
# and `strata backup restore` REPEATS times, local and emulated interleaved (L E L E ...), each
# into a fresh backup URL and restore target; then a full backup, `overwrite` of 1% of the keys,
# a second backup, 10% more, a third.
#
#   bash bench/backup.sh [--num N] [--value-size B] [--mbps MB/s] [--latency-ms MS]
#                        [--repeats R] [--work DIR] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
NUM=2200000 VALUE=1000 MBPS=100 LATENCY=5 REPEATS=3 WORK=/tmp/strata-bench-backup
OUT=bench/results/backup-$(date +%Y%m%d-%H%M)
while [ $# -gt 0 ]; do
  case "$1" in
    --num) NUM="$2"; shift 2 ;;
    --value-size) VALUE="$2"; shift 2 ;;
    --mbps) MBPS="$2"; shift 2 ;;
    --latency-ms) LATENCY="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
TARGET=${CARGO_TARGET_DIR:-target}
cargo build --release -p strata-cli >&2
S="$TARGET/release/strata"
rm -rf "$WORK"; mkdir -p "$WORK"
DB="$WORK/db" CAP="file://$WORK/cap"
{
  echo "# backup and restore throughput, incremental backup bytes"
  echo "commit $(git rev-parse --short HEAD)$(git diff --quiet || echo -dirty), $(date -u +%FT%TZ), $(nproc) cores"
  echo "num $NUM, value-size $VALUE (compression-ratio 1.0), repeats $REPEATS"
  echo "emulated link: $MBPS MB/s and $LATENCY ms per request, on each store (backup URL and capacity tier)"
  echo "cpu pressure before: $(head -1 /proc/pressure/cpu)"
} > "$OUT/setup.txt"

"$S" bench --benchmarks filluniquerandom --num "$NUM" --value-size "$VALUE" \
  --compression-ratio 1.0 --db "$DB" --capacity "$CAP" --json "$OUT/load.json" > "$OUT/load.txt"
du -sb "$DB" "$WORK/cap" | tee -a "$OUT/setup.txt"

run() { # run NAME EMULATION_FLAGS...
  local name="$1"; shift
  rm -rf "$WORK/b" "$WORK/r" "$WORK/rcap"; mkdir -p "$WORK/b"
  "$S" backup create --db "$DB" --capacity "$CAP" --to "file://$WORK/b" --json "$@" > "$OUT/$name-create.json"
  "$S" backup restore --from "file://$WORK/b" --db "$WORK/r" --capacity "file://$WORK/rcap" --json "$@" > "$OUT/$name-restore.json"
}
for i in $(seq 1 "$REPEATS"); do
  run "local-$i"
  run "link-$i" --capacity-mbps "$MBPS" --capacity-latency-ms "$LATENCY"
done
rm -rf "$WORK/b" "$WORK/r" "$WORK/rcap"

mkdir -p "$WORK/inc"
"$S" backup create --db "$DB" --capacity "$CAP" --to "file://$WORK/inc" --json > "$OUT/inc-0.json"
for pct in 1 10; do
  n=$((NUM * pct / 100))
  "$S" bench --benchmarks overwrite --num "$n" --value-size "$VALUE" --compression-ratio 1.0 \
    --use-existing-db --db "$DB" --capacity "$CAP" > "$OUT/overwrite-$pct.txt"
  "$S" backup create --db "$DB" --capacity "$CAP" --to "file://$WORK/inc" --json > "$OUT/inc-$pct.json"
done
echo "cpu pressure after: $(head -1 /proc/pressure/cpu)" >> "$OUT/setup.txt"

python3 - "$OUT" <<'PY'
import json, os, statistics, sys
out = sys.argv[1]
def load(n):
    return json.load(open(os.path.join(out, n)))
rows = []
for kind in ["local", "link"]:
    for op in ["create", "restore"]:
        runs = sorted(f for f in os.listdir(out) if f.startswith(kind + "-") and f.endswith(op + ".json"))
        mbs = [load(f)["bytes"] / load(f)["seconds"] / 1e6 for f in runs]
        secs = [load(f)["seconds"] for f in runs]
        size = load(runs[0])["bytes"]
        rows.append(f"| {kind} | {op} | {size / 2**30:.2f} GiB | {statistics.median(secs):.1f} s | "
                    f"**{statistics.median(mbs):.0f} MB/s** ({min(mbs):.0f}–{max(mbs):.0f}, {len(mbs)} runs) |")
inc = []
for pct in [0, 1, 10]:
    j = load(f"inc-{pct}.json")
    inc.append(f"| {pct}% | {j['bytes'] / 2**30:.2f} GiB | {j['new_bytes'] / 2**20:.1f} MiB "
               f"({100 * j['new_bytes'] / j['bytes']:.1f}%) | {j['new_files']} of {j['files']} | {j['seconds']:.1f} s |")
with open(os.path.join(out, "summary.md"), "w") as f:
    f.write("# backup and restore throughput; incremental backup bytes\n\n")
    f.write(open(os.path.join(out, "setup.txt")).read() + "\n")
    f.write("| link | operation | backup size | median time | throughput (median, range) |\n|---|---|---|---|---|\n")
    f.write("\n".join(rows) + "\n\n")
    f.write("| overwritten since the last backup | backup size | uploaded | files uploaded | time |\n|---|---|---|---|---|\n")
    f.write("\n".join(inc) + "\n")
print(open(os.path.join(out, "summary.md")).read())
PY
rm -rf "$WORK"
