#!/usr/bin/env bash
# Connections benchmark: `strata serve` beside redis-server, same client program, same run.
# Measures memory per idle connection (RSS at IDLE clients that each answered PING), the time
# to open SEQ connections one after another (and the slowest connect), BURST connections
# opened at once, and memory per client held waiting: BLOCKED clients in BLPOP, SUBS clients
# subscribed (each on a fresh pair of servers, so no phase reuses memory another freed).
# Repeats interleave the servers (strata, redis, strata, redis, ...); the table shows the
# median and the range of each figure.
#
#   bash bench/serve-conns.sh        # 10000 idle, 5000 seq, 1000 burst, 10000 blocked, 1000 subs
#   IDLE=2000 SEQ=1000 BURST=500 BLOCKED=2000 SUBS=500 REPEAT=1 bash bench/serve-conns.sh
#
# Both servers: loopback, empty data directory, no persistence of their own beyond strata's
# WAL (redis `--save ''`), maxclients 20000 (redis lowers it to what the fd limit allows).
# Needs: cargo, python3, redis-server, redis-cli (scripts/test.sh installs them) and an open
# file limit (ulimit -Hn) above IDLE + 64.
set -euo pipefail
cd "$(dirname "$0")/.."

IDLE="${IDLE:-10000}"
SEQ="${SEQ:-5000}"
BURST="${BURST:-1000}"
BLOCKED="${BLOCKED:-10000}"
SUBS="${SUBS:-1000}"
REPEAT="${REPEAT:-3}"
STRATA_PORT="${STRATA_PORT:-16392}"
REDIS_PORT="${REDIS_PORT:-16393}"

for t in redis-server redis-cli python3; do
  command -v "$t" >/dev/null || { echo "$t is required" >&2; exit 1; }
done
ulimit -n "$(ulimit -Hn)"

# shellcheck source=bench/redis-pair.sh
source bench/redis-pair.sh

port_free "$STRATA_PORT" "strata serve"
port_free "$REDIS_PORT" "redis-server"

start_servers() { # a fresh pair, empty data directories
  stop_servers
  rm -rf "$WORK/strata" "$WORK/redis"
  mkdir -p "$WORK/strata" "$WORK/redis"
  "$STRATA_BIN" serve --bind 127.0.0.1 --port "$STRATA_PORT" --dir "$WORK/strata" \
    --maxclients 20000 --log-level warn 2>>"$WORK/strata.log" &
  STRATA_PID=$!
  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$WORK/redis" --save "" \
    --appendonly no --maxclients 20000 --daemonize no --logfile "$WORK/redis.log" &
  REDIS_PID=$!
  wait_ping "$STRATA_PORT" "strata serve"
  wait_ping "$REDIS_PORT" "redis-server"
}
stop_servers() {
  for p in $STRATA_PID $REDIS_PID; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  STRATA_PID="" REDIS_PID=""
}

start_servers
echo "listen backlog (ss -ltn Send-Q): strata $(ss -ltnH "sport = :$STRATA_PORT" | awk '{print $3}'), redis $(ss -ltnH "sport = :$REDIS_PORT" | awk '{print $3}')" >&2

for i in $(seq 1 "$REPEAT"); do
  start_servers
  for who in strata redis; do
    if [ "$who" = strata ]; then port=$STRATA_PORT pid=$STRATA_PID; else port=$REDIS_PORT pid=$REDIS_PID; fi
    echo "repeat $i: $who" >&2
    python3 bench/serve_conns.py --port "$port" --pid "$pid" --idle "$IDLE" >"$WORK/$who.idle.$i.json"
    sleep 1 # closed sockets leave TIME_WAIT on the client side only; let the server settle
    python3 bench/serve_conns.py --port "$port" --sequential "$SEQ" >"$WORK/$who.sequential.$i.json"
    sleep 1
    python3 bench/serve_conns.py --port "$port" --burst "$BURST" >"$WORK/$who.burst.$i.json"
    sleep 1
  done
  for phase in blocked subscribers; do
    start_servers
    n=$([ "$phase" = blocked ] && echo "$BLOCKED" || echo "$SUBS")
    for who in strata redis; do
      if [ "$who" = strata ]; then port=$STRATA_PORT pid=$STRATA_PID; else port=$REDIS_PORT pid=$REDIS_PID; fi
      echo "repeat $i: $who, $n $phase" >&2
      python3 bench/serve_conns.py --port "$port" --pid "$pid" "--$phase" "$n" >"$WORK/$who.$phase.$i.json"
    done
  done
done

python3 - "$WORK" "$REPEAT" "$IDLE" "$SEQ" "$BURST" "$BLOCKED" "$SUBS" <<'EOF'
import json, statistics, sys
work, repeat, idle, seq, burst, blocked, subs = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
def load(who, kind, key):
    return [json.load(open(f"{work}/{who}.{kind}.{i}.json"))[kind][key] for i in range(1, repeat + 1)]
def cell(xs, fmt):
    m = statistics.median(xs)
    return fmt.format(m) if len(xs) == 1 else f"{fmt.format(m)} [{fmt.format(min(xs))}–{fmt.format(max(xs))}]"
rows = [
    (f"KiB per connection, {idle} idle clients", "idle", "kib_per_connection", "{:.1f}"),
    (f"RSS with {idle} idle clients (MiB)", "idle", "rss_connected_kib", "{:.0f}"),
    ("KiB per connection after all PING at once", "idle", "kib_per_connection_after_burst", "{:.1f}"),
    (f"{seq} sequential connections (s)", "sequential", "seconds", "{:.2f}"),
    ("slowest sequential connect (ms)", "sequential", "slowest_ms", "{:.1f}"),
    ("sequential connects over 100 ms", "sequential", "over_100ms", "{:.0f}"),
    (f"{burst} connections at once: answered", "burst", "answered", "{:.0f}"),
    (f"{burst} connections at once (s)", "burst", "seconds", "{:.2f}"),
    (f"KiB per client, {blocked} clients blocked in BLPOP", "blocked", "kib_per_client", "{:.1f}"),
    (f"KiB per client, {subs} subscribers (2 channels each)", "subscribers", "kib_per_client", "{:.1f}"),
]
for who in ("strata", "redis"):
    for kind, n in (("blocked", blocked), ("subscribers", subs)):
        for i in range(1, repeat + 1):
            r = json.load(open(f"{work}/{who}.{kind}.{i}.json"))[kind]
            want = r.get("sample", int(n))
            if r["answered_early"] or r["verified"] != want:
                sys.exit(f"{who} {kind} repeat {i}: {r['answered_early']} answered early, {r['verified']} of {want} verified")
print(f"\n{repeat} interleaved repeats; median [range]\n")
print("| measurement | strata serve | redis-server | strata / redis |")
print("|---|---:|---:|---:|")
for name, kind, key, fmt in rows:
    s, r = load("strata", kind, key), load("redis", kind, key)
    if key == "rss_connected_kib":
        s, r = [x / 1024 for x in s], [x / 1024 for x in r]
    ratio = f"{statistics.median(s) / statistics.median(r):.2f}×" if statistics.median(r) else "–"
    print(f"| {name} | {cell(s, fmt)} | {cell(r, fmt)} | {ratio} |")
EOF
