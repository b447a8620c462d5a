#!/usr/bin/env bash
# Compares `strata serve` with redis-server under redis-benchmark, in the same run, and prints
# a Markdown table of both and the ratio (strata / redis).
#
#   bash bench/redis-compare.sh            # N=1000000 requests per test
#   N=200000 bash bench/redis-compare.sh   # a shorter run
#   Repeated runs saved as DIR/<label>-P<depth>-r<k>.md: python3 bench/redis_compare_summary.py DIR
#
# Workload (the issue's): redis-benchmark -t set,get,incr,mset -n N -r 1000000 -P 16 -c 50
# Both servers listen on loopback only and start from empty data directories.
#
# Persistence, chosen to be comparable:
#   strata serve:  --sync everysec  every write goes to the engine's write-ahead log before it
#                  is acknowledged; the log is fsynced once a second (Options::wal_sync_interval).
#   redis-server:  --appendonly yes --appendfsync everysec --save ""  every write goes to the
#                  AOF before it is acknowledged; the AOF is fsynced once a second; no RDB
#                  snapshots.
# Both lose at most about a second of acknowledged writes on an OS crash and none on a process
# crash. The tests run interleaved (SET on strata, SET on redis, GET on strata, ...) so slow
# drifts of the machine's load affect both alike.
#
# Needs: cargo, redis-server, redis-benchmark, redis-cli (`bash scripts/test.sh` installs the
# latter three). Ports: STRATA_PORT (default 16390), REDIS_PORT (default 16391).
set -euo pipefail
cd "$(dirname "$0")/.."

N="${N:-1000000}"
# Tests and pipeline depth: TESTS="set get hset lpush zadd" P=1 bash bench/redis-compare.sh
# More `strata serve` flags: STRATA_ARGS="--io-threads 2" bash bench/redis-compare.sh
P="${P:-16}"
STRATA_PORT="${STRATA_PORT:-16390}"
REDIS_PORT="${REDIS_PORT:-16391}"
read -r -a TESTS <<<"${TESTS:-set get incr mset}"

for t in redis-server redis-benchmark redis-cli; do
  command -v "$t" >/dev/null || { echo "$t is required (apt-get install redis-tools redis-server)" >&2; exit 1; }
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

run() { # port test -> "rps p50 p99"
  redis-benchmark -h 127.0.0.1 -p "$1" -t "$2" -n "$N" -r 1000000 -P "$P" -c 50 --csv 2>/dev/null |
    awk -F'","' 'NR > 1 { gsub(/"/, "", $0); split($0, f, ","); print f[2], f[5], f[7]; exit }'
}

declare -A S_RPS S_P50 S_P99 R_RPS R_P50 R_P99
for t in "${TESTS[@]}"; do
  echo "running $t (n=$N)..." >&2
  read -r S_RPS[$t] S_P50[$t] S_P99[$t] < <(run "$STRATA_PORT" "$t")
  read -r R_RPS[$t] R_P50[$t] R_P99[$t] < <(run "$REDIS_PORT" "$t")
done

echo
echo "redis-benchmark -t $(IFS=,; echo "${TESTS[*]}") -n $N -r 1000000 -P $P -c 50 (loopback)"
echo "$(nproc) cores; $(redis-server --version | awk '{print $1, $2, $3}'); strata $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo
echo "| test | strata serve (req/s) | strata p50 / p99 (ms) | redis-server (req/s) | redis p50 / p99 (ms) | strata / redis |"
echo "|---|---:|---:|---:|---:|---:|"
for t in "${TESTS[@]}"; do
  name="$(echo "$t" | tr a-z A-Z)"
  [ "$t" = mset ] && name="MSET (10 keys)"
  awk -v n="$name" -v s="${S_RPS[$t]}" -v sp="${S_P50[$t]}" -v sq="${S_P99[$t]}" \
    -v r="${R_RPS[$t]}" -v rp="${R_P50[$t]}" -v rq="${R_P99[$t]}" \
    'BEGIN { printf "| %s | %.0f | %.3f / %.3f | %.0f | %.3f / %.3f | %.2f× |\n", n, s, sp, sq, r, rp, rq, (r > 0 ? s / r : 0) }'
done
