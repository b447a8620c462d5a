#!/usr/bin/env bash
# MULTI/EXEC throughput of `strata serve` beside redis-server, measured by one client program
# (crates/strata-server/examples/multi_exec_load.rs: 50 connections, each sending MULTI, 10
# SETs of random keys out of 1M and EXEC in one write, then reading the whole reply),
# interleaved: strata, redis, strata, redis, ... REPEAT times; each round also runs the same
# SETs on strata as a plain pipeline (no MULTI/EXEC), so what atomicity costs shows. Prints one
# line per round and the median ratios with their ranges.
#
#   bash bench/multi-compare.sh                  # 3 pairs of 10 s
#   REPEAT=5 SECONDS_PER_RUN=20 bash bench/multi-compare.sh
#
# Persistence as in bench/redis-compare.sh: strata --sync everysec; redis-server with an
# AOF fsynced every second and no RDB snapshots.
set -euo pipefail
cd "$(dirname "$0")/.."
REPEAT="${REPEAT:-3}"
SECS="${SECONDS_PER_RUN:-10}"
CONNS="${CONNS:-50}"
SETS="${SETS:-10}"
STRATA_PORT="${STRATA_PORT:-16390}"
REDIS_PORT="${REDIS_PORT:-16391}"
for t in redis-server redis-cli; do
  command -v "$t" >/dev/null || { echo "$t is required" >&2; exit 1; }
done
# shellcheck source=bench/redis-pair.sh
source bench/redis-pair.sh
cargo build --release -q -p strata-server --example multi_exec_load >&2
LOAD="${CARGO_TARGET_DIR:-target}/release/examples/multi_exec_load"

mkdir -p "$WORK/strata" "$WORK/redis"
port_free "$STRATA_PORT" "strata serve"
port_free "$REDIS_PORT" "redis-server"
"$STRATA_BIN" serve --bind 127.0.0.1 --port "$STRATA_PORT" --dir "$WORK/strata" \
  --sync everysec --log-level warn ${STRATA_ARGS:-} 2>"$WORK/strata.log" &
STRATA_PID=$!
redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$WORK/redis" \
  --appendonly yes --appendfsync everysec --save "" --daemonize no \
  --logfile "$WORK/redis.log" &
REDIS_PID=$!
wait_ping "$STRATA_PORT" "strata serve"
wait_ping "$REDIS_PORT" "redis-server"

echo "multi_exec_load --conns $CONNS --sets $SETS --seconds $SECS; $(nproc) cores; $(redis-server --version | awk '{print $3}'); strata $(git rev-parse --short HEAD)"
echo "cpu pressure at start: $(head -1 /proc/pressure/cpu 2>/dev/null || echo n/a)"
echo "| run | strata tx/s | strata p50 / p99 (ms) | redis tx/s | redis p50 / p99 (ms) | strata / redis | strata pipelines/s (no MULTI) | MULTI / pipeline |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
ratios=()
costs=()
for r in $(seq 1 "$REPEAT"); do
  read -r s_tx _ s_p50 s_p99 < <("$LOAD" --port "$STRATA_PORT" --conns "$CONNS" --sets "$SETS" --seconds "$SECS")
  read -r r_tx _ r_p50 r_p99 < <("$LOAD" --port "$REDIS_PORT" --conns "$CONNS" --sets "$SETS" --seconds "$SECS")
  read -r p_tx _ _ _ < <("$LOAD" --port "$STRATA_PORT" --conns "$CONNS" --sets "$SETS" --seconds "$SECS" --plain 1)
  ratio=$(awk -v s="$s_tx" -v r="$r_tx" 'BEGIN { printf "%.2f", s / r }')
  cost=$(awk -v s="$s_tx" -v p="$p_tx" 'BEGIN { printf "%.2f", s / p }')
  ratios+=("$ratio")
  costs+=("$cost")
  echo "| $r | $s_tx | $s_p50 / $s_p99 | $r_tx | $r_p50 / $r_p99 | ${ratio}× | $p_tx | ${cost}× |"
done
median() { sort -n | awk '{ a[NR] = $1 } END { printf "%.2f× [%.2f–%.2f] over %d rounds", a[int((NR + 1) / 2)], a[1], a[NR], NR }'; }
echo
echo "median strata / redis: $(printf '%s\n' "${ratios[@]}" | median)"
echo "median strata MULTI/EXEC / the same SETs pipelined: $(printf '%s\n' "${costs[@]}" | median)"
