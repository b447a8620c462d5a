#!/usr/bin/env bash
# EVALSHA of an INCR script (`return redis.call('INCR', KEYS[1])`) on `strata serve` beside
# redis-server under redis-benchmark: `redis-benchmark -n N -r 100000 -P P -c 50 evalsha SHA 1
# key:__rand_int__` at -P 1 and -P 16, servers interleaved, REPEAT rounds; prints one row per
# run and the median ratio with its range. Persistence as in bench/redis-compare.sh.
#
#   bash bench/eval-compare.sh              # N=200000, 3 rounds
#   N=100000 REPEAT=5 bash bench/eval-compare.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N="${N:-200000}"
REPEAT="${REPEAT:-3}"
STRATA_PORT="${STRATA_PORT:-16390}"
REDIS_PORT="${REDIS_PORT:-16391}"
for t in redis-server redis-benchmark redis-cli; do
  command -v "$t" >/dev/null || { echo "$t is required" >&2; exit 1; }
done
# shellcheck source=bench/redis-pair.sh
source bench/redis-pair.sh
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
SCRIPT="return redis.call('INCR', KEYS[1])"
SHA=$(redis-cli -p "$STRATA_PORT" SCRIPT LOAD "$SCRIPT")
[ "$(redis-cli -p "$REDIS_PORT" SCRIPT LOAD "$SCRIPT")" = "$SHA" ] || { echo "SHA1 differs" >&2; exit 1; }

rps() { # port depth
  redis-benchmark -h 127.0.0.1 -p "$1" -n "$N" -r 100000 -P "$2" -c 50 --csv evalsha "$SHA" 1 key:__rand_int__ 2>/dev/null |
    awk -F'","' 'NR > 1 { gsub(/"/, "", $0); split($0, f, ","); print f[2]; exit }'
}

echo "redis-benchmark -n $N -r 100000 -c 50 evalsha <INCR script> 1 key:__rand_int__; $(nproc) cores; $(redis-server --version | awk '{print $3}'); strata $(git rev-parse --short HEAD)"
echo "cpu pressure at start: $(head -1 /proc/pressure/cpu 2>/dev/null || echo n/a)"
echo "| depth | round | strata req/s | redis req/s | strata / redis |"
echo "|---|---:|---:|---:|---:|"
for P in 1 16; do
  ratios=()
  for r in $(seq 1 "$REPEAT"); do
    s=$(rps "$STRATA_PORT" "$P")
    q=$(rps "$REDIS_PORT" "$P")
    ratio=$(awk -v s="$s" -v q="$q" 'BEGIN { printf "%.2f", s / q }')
    ratios+=("$ratio")
    echo "| -P $P | $r | $s | $q | ${ratio}× |"
  done
  printf '%s\n' "${ratios[@]}" | sort -n | awk -v p="$P" '{ a[NR] = $1 } END { printf "| -P %s | median | | | **%.2f×** [%.2f–%.2f] |\n", p, a[int((NR + 1) / 2)], a[1], a[NR] }'
done
