#!/usr/bin/env bash
# Queue and messaging workloads of `strata serve` beside redis-server, measured by one client
# program (crates/strata-server/examples/queue_load.rs), interleaved per measurement: strata,
# redis, strata, redis, ... REPEAT times. Measurements: PUBLISH delivered to 1 and to 100
# subscribers (messages/s), BLPOP/RPUSH ping-pong (p50 and p99 µs), XADD at -P 1 and -P 16
# (entries/s, 50 connections), XREADGROUP + XACK at COUNT 1 and COUNT 16 (entries/s, 50
# consumers). Prints one table row per measurement and round, then the median ratios with
# their ranges (for latencies, redis / strata, so that above 1 means strata is faster).
#
#   bash bench/queue-compare.sh
#   REPEAT=5 SECONDS_PER_RUN=10 STRATA_BIN=target/release/strata bash bench/queue-compare.sh
#
# Persistence as in bench/redis-compare.sh: strata --sync everysec; redis-server with an AOF
# fsynced every second and no RDB snapshots.
set -euo pipefail
cd "$(dirname "$0")/.."
REPEAT="${REPEAT:-3}"
SECS="${SECONDS_PER_RUN:-5}"
STRATA_PORT="${STRATA_PORT:-16392}"
REDIS_PORT="${REDIS_PORT:-16393}"
ONLY="${ONLY:-}" # a subset of measurement names, space separated
for t in redis-server redis-cli; do
  command -v "$t" >/dev/null || { echo "$t is required" >&2; exit 1; }
done
# shellcheck source=bench/redis-pair.sh
source bench/redis-pair.sh
cargo build --release -q -p strata-server --example queue_load >&2
LOAD="${CARGO_TARGET_DIR:-target}/release/examples/queue_load"

mkdir -p "$WORK/strata" "$WORK/redis"
port_free "$STRATA_PORT" "strata serve"
port_free "$REDIS_PORT" "redis-server"
"$STRATA_BIN" serve --bind 127.0.0.1 --port "$STRATA_PORT" --dir "$WORK/strata" \
  --sync everysec --log-level warn ${STRATA_ARGS:-} 2>"$WORK/strata.log" &
STRATA_PID=$!
redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$WORK/redis" \
  --appendonly yes --appendfsync everysec --save "" --daemonize no --maxclients 20000 \
  --logfile "$WORK/redis.log" &
REDIS_PID=$!
wait_ping "$STRATA_PORT" "strata serve"
wait_ping "$REDIS_PORT" "redis-server"

declare -A ARGS=(
  [publish-1]="--mode publish --subscribers 1 --depth 16 --seconds $SECS"
  [publish-100]="--mode publish --subscribers 100 --depth 16 --seconds $SECS"
  [pingpong]="--mode pingpong --rounds 20000"
  [xadd-P1]="--mode xadd --conns 50 --depth 1 --seconds $SECS"
  [xadd-P16]="--mode xadd --conns 50 --depth 16 --seconds $SECS"
  [xreadgroup-1]="--mode xreadgroup --conns 50 --depth 1 --entries 100000"
  [xreadgroup-16]="--mode xreadgroup --conns 50 --depth 16 --entries 400000"
)
ORDER="publish-1 publish-100 pingpong xadd-P1 xadd-P16 xreadgroup-1 xreadgroup-16"
[ -n "$ONLY" ] && ORDER="$ONLY"

echo "queue_load; $(nproc) cores; $(redis-server --version | awk '{print $3}'); strata $(git rev-parse --short HEAD); $SECS s per run"
echo "cpu pressure at start: $(head -1 /proc/pressure/cpu 2>/dev/null || echo n/a)"
echo "| measurement | round | strata | redis | ratio |"
echo "|---|---:|---:|---:|---:|"
declare -A RATIOS
for m in $ORDER; do
  for r in $(seq 1 "$REPEAT"); do
    # shellcheck disable=SC2086
    s=$("$LOAD" --port "$STRATA_PORT" ${ARGS[$m]})
    # shellcheck disable=SC2086
    x=$("$LOAD" --port "$REDIS_PORT" ${ARGS[$m]})
    if [ "$m" = pingpong ]; then
      # p50 and p99 in µs: the ratio of p50s, redis / strata.
      ratio=$(awk -v s="${s%% *}" -v r="${x%% *}" 'BEGIN { printf "%.2f", r / s }')
    else
      ratio=$(awk -v s="$s" -v r="$x" 'BEGIN { printf "%.2f", s / r }')
    fi
    RATIOS[$m]="${RATIOS[$m]:-} $ratio"
    echo "| $m | $r | $s | $x | ${ratio}× |"
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{ a[NR] = $1 } END { printf "%.2f× [%.2f–%.2f] over %d rounds", a[int((NR + 1) / 2)], a[1], a[NR], NR }'; }
echo
for m in $ORDER; do
  echo "median $m: $(echo "${RATIOS[$m]}" | median)"
done
