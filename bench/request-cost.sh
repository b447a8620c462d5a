#!/usr/bin/env bash
# Per-request cost of `strata serve` beside redis-server, counted by valgrind's callgrind with
# its cache simulation: instructions (Ir), instruction-cache misses (I1mr) and first-level data
# cache misses (D1mr, D1mw) of the server's own code per request, all threads, kernel excluded.
# Deterministic where timings on this shared machine are not (one 5-10% change is invisible in
# throughput runs that swing by a third), so it says whether a change made a request cheaper,
# and how the two servers' costs differ in kind.
#
#   bash bench/request-cost.sh                      # EVALSHA of an INCR script at -P 1
#   P=16 N=40000 bash bench/request-cost.sh
#   TEST="set" bash bench/request-cost.sh           # redis-benchmark -t set
#
# Each server starts under valgrind (empty data directory, persistence as in
# bench/eval-compare.sh), takes WARM requests, has its counters zeroed, takes N requests from
# `redis-benchmark -c 50 -P P -r 100000`, and dumps them. Needs valgrind, redis-server,
# redis-benchmark, redis-cli. The simulated caches are valgrind's defaults (the host's first
# level); the kernel's network path, which both servers share, is not counted.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${N:-20000}"
WARM="${WARM:-5000}"
P="${P:-1}"
TEST="${TEST:-evalsha}"
PORT="${PORT:-16396}"
for t in valgrind callgrind_control redis-server redis-benchmark redis-cli; do
  command -v "$t" >/dev/null || { echo "$t is required" >&2; exit 1; }
done
if [ -z "${STRATA_BIN:-}" ]; then
  cargo build --release -p strata-cli >&2
  STRATA_BIN="$PWD/target/release/strata"
fi
WORK="$(mktemp -d)"
VPID=""
trap '[ -n "$VPID" ] && kill "$VPID" 2>/dev/null; rm -rf "$WORK"' EXIT
SCRIPT="return redis.call('INCR', KEYS[1])"

load() { # the requests: N (or WARM) of them
  if [ "$TEST" = evalsha ]; then
    redis-benchmark -h 127.0.0.1 -p "$PORT" -n "$1" -r 100000 -P "$P" -c 50 -q \
      evalsha "$SHA" 1 key:__rand_int__ >/dev/null 2>&1
  else
    redis-benchmark -h 127.0.0.1 -p "$PORT" -n "$1" -r 100000 -P "$P" -c 50 -q -t "$TEST" >/dev/null 2>&1
  fi
}

measure() { # name, then the server's command line
  local name=$1
  shift
  mkdir -p "$WORK/$name"
  valgrind --tool=callgrind --cache-sim=yes --callgrind-out-file="$WORK/$name/cg.out" "$@" \
    >"$WORK/$name/log" 2>&1 &
  VPID=$!
  for _ in $(seq 1 240); do
    redis-cli -p "$PORT" PING 2>/dev/null | grep -q PONG && break
    sleep 0.5
  done
  SHA=$(redis-cli -p "$PORT" SCRIPT LOAD "$SCRIPT")
  load "$WARM"
  callgrind_control -z "$VPID" >/dev/null
  load "$N"
  callgrind_control -d "$VPID" >/dev/null
  sleep 1
  kill "$VPID"
  wait "$VPID" 2>/dev/null || true
  VPID=""
  # The dump holds the requests; the file written at exit only what followed it.
  awk -v n="$N" -v who="$name" '
    /^events:/ { for (i = 2; i <= NF; i++) ev[i] = $i }
    /^summary:/ { for (i = 2; i <= NF; i++) s[ev[i]] += $i }
    END { printf "| %s | %.0f | %.0f | %.0f | %.0f |\n", who, s["Ir"] / n, s["I1mr"] / n, s["D1mr"] / n, s["D1mw"] / n }
  ' "$WORK/$name"/cg.out.*
}

what="$TEST"
[ "$TEST" = evalsha ] && what="EVALSHA of \`$SCRIPT\`"
echo "$what, redis-benchmark -c 50 -P $P -r 100000, $N requests counted after $WARM; strata $(git rev-parse --short HEAD), $(redis-server --version | awk '{print $3}'); per request:"
echo
echo "| server | instructions | I1 misses | D1 read misses | D1 write misses |"
echo "|---|---:|---:|---:|---:|"
measure "${LABEL:-strata}" "$STRATA_BIN" serve --bind 127.0.0.1 --port "$PORT" --dir "$WORK/strata/data" \
  --sync everysec --log-level warn
measure redis redis-server --bind 127.0.0.1 --port "$PORT" --dir "$WORK/redis" --appendonly yes \
  --appendfsync everysec --save "" --daemonize no
