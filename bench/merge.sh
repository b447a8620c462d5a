#!/usr/bin/env bash
# Counters by merge against counters by read-modify-write (issue 49): `mergerandom` (merge the
# 8-byte increment 1 into a random key with the strata.u64add operator) against `updaterandom`
# (get the key, then put an 8-byte value: the read-modify-write a counter needs without merge;
# from several threads it loses increments) and `randomtransaction` (the same in an optimistic
# transaction: the read-modify-write that loses none), each on a database of its own loaded once
# with 8-byte values, interleaved A B C A B C ... at each thread count. Reports the median ratio
# of ops/s over the repeats [min-max] and the write p99.
#
#   bash bench/merge.sh [--num N] [--ops N] [--threads 1,2,4] [--repeats R] [--cache BYTES]
#                       [--tiered LATENCY_MS] [--out DIR]
#
# --tiered puts every level below L1 on a file:// capacity tier LATENCY_MS away (HotRAP and the
# LAP cache at strata bench's defaults): a read-modify-write of a cold counter pays a capacity
# read, a merge never reads.
set -euo pipefail
cd "$(dirname "$0")/.."
NUM=1000000 OPS=1000000 THREADS=1,2 REPEATS=3 CACHE=64MB TIERED=
OUT=bench/results/merge-$(date +%Y%m%d-%H%M)
while [ $# -gt 0 ]; do
  case "$1" in
    --num) NUM="$2"; shift 2 ;;
    --ops) OPS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --cache) CACHE="$2"; shift 2 ;;
    --tiered) TIERED="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
TARGET=${CARGO_TARGET_DIR:-target}
cargo build --release -p strata-cli >&2
S="$TARGET/release/strata"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
COMMON=(--num "$NUM" --value-size 8 --cache-size "$CACHE" --merge-operator strata.u64add)
TIER="one tier"
if [ -n "$TIERED" ]; then
  TIER="tiered: levels below L1 on a file:// capacity tier ${TIERED} ms away (4 MB memtable and L1, 2 MB tables), HotRAP and LAP at strata bench defaults"
fi
tier_args() { # the database directory
  [ -n "$TIERED" ] && echo "--capacity file://$1-cap --fast-levels 1 --capacity-latency-ms $TIERED --write-buffer-size 4MB --max-bytes-for-level-base 4MB --target-file-size-base 2MB"
  true
}
{
  echo "# counters: merge vs read-modify-write"
  echo "commit $(git rev-parse --short HEAD)$(git diff --quiet || echo -dirty), $(date -u +%FT%TZ), $(nproc) cores"
  echo "num $NUM keys of 16 B with 8-byte values, ops $OPS per run, threads $THREADS, repeats $REPEATS, block cache $CACHE, $TIER, other options default"
} > "$OUT/setup.txt"
BENCHES="updaterandom randomtransaction mergerandom"
for b in $BENCHES; do
  mkdir -p "$TMP/$b-cap"
  # shellcheck disable=SC2046
  "$S" bench --benchmarks fillrandom "${COMMON[@]}" $(tier_args "$TMP/$b") --db "$TMP/$b" --json "$OUT/load-$b.json" > "$OUT/load-$b.txt"
done
for t in ${THREADS//,/ }; do
  for r in $(seq 1 "$REPEATS"); do
    for b in $BENCHES; do
      echo "t$t r$r $b cpu $(head -1 /proc/pressure/cpu)" >> "$OUT/setup.txt"
      # shellcheck disable=SC2046
      # A seed per repeat (the same for each benchmark): a repeat does not re-read the keys an
      # earlier one just wrote.
      "$S" bench --use-existing-db --benchmarks "$b" "${COMMON[@]}" $(tier_args "$TMP/$b") --ops "$OPS" --threads "$t" \
        --seed "$((1000 * r + t))" \
        --db "$TMP/$b" --json "$OUT/$b-t$t-r$r.json" > "$OUT/$b-t$t-r$r.txt"
    done
  done
done
python3 - "$OUT" "$THREADS" "$REPEATS" <<'PY'
import json, os, statistics, sys
out, threads, repeats = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
def phase(n):
    return json.load(open(os.path.join(out, n)))["phases"][-1]
lines = ["| threads | updaterandom ops/s | randomtransaction ops/s | mergerandom ops/s | merge / update | merge / transaction | write p99 µs (update / txn / merge) |",
         "|---|---|---|---|---|---|---|"]
p99 = lambda ph: next(l["p99_us"] for l in ph["latency"] if l["op"] == "write")
med = lambda xs: statistics.median(xs)
def ratio(m, x):
    rs = [y["ops_per_sec"] / z["ops_per_sec"] for y, z in zip(m, x)]
    return f"**{med(rs):.2f}×** ({min(rs):.2f}–{max(rs):.2f})"
for t in threads:
    runs = {b: [phase(f"{b}-t{t}-r{r}.json") for r in range(1, repeats + 1)]
            for b in ("updaterandom", "randomtransaction", "mergerandom")}
    u, x, m = runs["updaterandom"], runs["randomtransaction"], runs["mergerandom"]
    lines.append(f"| {t} | {med(p['ops_per_sec'] for p in u):,.0f} | {med(p['ops_per_sec'] for p in x):,.0f} | "
                 f"{med(p['ops_per_sec'] for p in m):,.0f} | {ratio(m, u)} | {ratio(m, x)} | "
                 f"{med(p99(p) for p in u):.1f} / {med(p99(p) for p in x):.1f} / {med(p99(p) for p in m):.1f} |")
text = "\n".join(lines) + "\n"
open(os.path.join(out, "summary.md"), "w").write(open(os.path.join(out, "setup.txt")).read() + "\n" + text)
print(text)
PY
