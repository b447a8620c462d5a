#!/usr/bin/env bash
# Optimistic transactions against plain writes (issue 49): `randomtransaction` (read-modify-write
# of a random key in a transaction: get_for_update, put, commit) against `updaterandom` (the same
# get and put without one), interleaved A B A B ... on one database loaded once, at each thread
# count. Reports the median ratio of ops/s over the pairs [min-max], and the conflicts.
#
#   bash bench/txn.sh [--num N] [--ops N] [--threads 1,2,4] [--repeats R] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
NUM=1000000 OPS=500000 THREADS=1,2,4 REPEATS=3
OUT=bench/results/txn-$(date +%Y%m%d-%H%M)
while [ $# -gt 0 ]; do
  case "$1" in
    --num) NUM="$2"; shift 2 ;;
    --ops) OPS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
TARGET=${CARGO_TARGET_DIR:-target}
cargo build --release -p strata-cli >&2
S="$TARGET/release/strata"
DB=$(mktemp -d)/db
{
  echo "# optimistic transactions vs plain read-modify-write"
  echo "commit $(git rev-parse --short HEAD)$(git diff --quiet || echo -dirty), $(date -u +%FT%TZ), $(nproc) cores"
  echo "num $NUM (100-byte values), ops $OPS per run, threads $THREADS, repeats $REPEATS, one tier, default options"
} > "$OUT/setup.txt"
"$S" bench --benchmarks fillrandom --num "$NUM" --db "$DB" --json "$OUT/load.json" > "$OUT/load.txt"
for t in ${THREADS//,/ }; do
  for r in $(seq 1 "$REPEATS"); do
    for b in updaterandom randomtransaction; do
      echo "t$t r$r $b cpu $(head -1 /proc/pressure/cpu)" >> "$OUT/setup.txt"
      "$S" bench --use-existing-db --benchmarks "$b" --num "$NUM" --ops "$OPS" --threads "$t" \
        --db "$DB" --json "$OUT/$b-t$t-r$r.json" > "$OUT/$b-t$t-r$r.txt"
    done
  done
done
rm -rf "$(dirname "$DB")"
python3 - "$OUT" "$THREADS" "$REPEATS" <<'PY'
import json, os, statistics, sys
out, threads, repeats = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
def phase(n):
    return json.load(open(os.path.join(out, n)))["phases"][-1]
lines = ["| threads | updaterandom ops/s | randomtransaction ops/s | plain / transaction | conflicts |", "|---|---|---|---|---|"]
for t in threads:
    a = [phase(f"updaterandom-t{t}-r{r}.json") for r in range(1, repeats + 1)]
    b = [phase(f"randomtransaction-t{t}-r{r}.json") for r in range(1, repeats + 1)]
    ratios = [x["ops_per_sec"] / y["ops_per_sec"] for x, y in zip(a, b)]
    conflicts = sum(y["txn_conflicts"] for y in b)
    ops = sum(y["ops"] for y in b)
    lines.append(f"| {t} | {statistics.median(x['ops_per_sec'] for x in a):,.0f} | "
                 f"{statistics.median(y['ops_per_sec'] for y in b):,.0f} | "
                 f"**{statistics.median(ratios):.2f}×** ({min(ratios):.2f}–{max(ratios):.2f}) | "
                 f"{conflicts} of {ops} ({100 * conflicts / ops:.3f}%) |")
text = "\n".join(lines) + "\n"
open(os.path.join(out, "summary.md"), "w").write(open(os.path.join(out, "setup.txt")).read() + "\n" + text)
print(text)
PY
