#!/usr/bin/env bash
# Object-store requests per minute of an idle writer and an idle read replica, and the time a
# failover takes (issue 48): `strata serve` with its WAL on an object-store log location
# (`--sync always`) and a capacity tier, a replica following it (`--replica-of`); both loaded
# with KEYS keys, left to settle SETTLE seconds, then left idle IDLE seconds while their
# Prometheus counters are read at the start and the end (`strata_object_store_requests{store,
# kind}` on the writer, `strata_replica_log_requests`, `strata_replica_log_lists` and
# `strata_replica_capacity_requests` on the replica). Then the writer is killed (SIGKILL) right
# after an acknowledged write, the replica is promoted (`REPLICAOF NO ONE`), and
# `failover_secs` is the time from the kill to the first write the promoted server accepts
# (the old writer's lease, `LEASE_TTL` seconds, is waited out first); the acknowledged write
# must be there. Prints one JSON object.
#
#   bash bench/replica-idle.sh                          # file:// stores under a temp dir
#   STRATA_S3_URL=s3://bucket bash bench/replica-idle.sh  # the S3 server scripts/s3-server.sh starts
#   IDLE=300 REFRESH_MS=1000 bash bench/replica-idle.sh
set -euo pipefail
cd "$(dirname "$0")/.."
STRATA_BIN="${STRATA_BIN:-target/release/strata}"
IDLE="${IDLE:-60}"
SETTLE="${SETTLE:-15}"
KEYS="${KEYS:-20000}"
REFRESH_MS="${REFRESH_MS:-1000}"
LEASE_TTL="${LEASE_TTL:-20}"
WPORT="${WPORT:-16400}"
RPORT="${RPORT:-16401}"
WMETRICS="${WMETRICS:-16402}"
RMETRICS="${RMETRICS:-16403}"
for t in redis-benchmark redis-cli curl python3; do
  command -v "$t" >/dev/null || { echo "$t is required" >&2; exit 1; }
done
[ -x "$STRATA_BIN" ] || { echo "build it first: cargo build --release -p strata-cli" >&2; exit 1; }
WORK=$(mktemp -d /tmp/strata-replica-idle.XXXXXX)
if [ -n "${STRATA_S3_URL:-}" ]; then
  ROOT="${STRATA_S3_URL%/}/replica-idle-$$"
else
  ROOT="file://$WORK/store"
  mkdir -p "$WORK/store/log" "$WORK/store/cap"
fi
WAL="$ROOT/log"
CAP="$ROOT/cap"
printf '[engine]\nwal-lease-ttl-secs = %s\n' "$LEASE_TTL" >"$WORK/lease.toml"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT

wait_ping() { # port
  for _ in $(seq 1 300); do
    redis-cli -p "$1" ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "port $1 did not answer" >&2
  exit 1
}
scrape() { # metrics port -> "name{labels} value" lines of the counters this script reads
  curl -s "http://127.0.0.1:$1/metrics" |
    grep -E '^(strata_object_store_requests_total|strata_replica_(log_requests|log_lists|capacity_requests)_total)' || true
}

"$STRATA_BIN" serve --bind 127.0.0.1 --port "$WPORT" --dir "$WORK/writer" --wal-location "$WAL" \
  --extended-wal true --capacity "$CAP" --metrics-port "$WMETRICS" --log-level warn \
  --sync always --config "$WORK/lease.toml" 2>"$WORK/writer.log" &
WRITER=$!
PIDS+=($WRITER)
wait_ping "$WPORT"
redis-benchmark -p "$WPORT" -n "$KEYS" -r "$KEYS" -c 8 -P 16 -q -t set >/dev/null
"$STRATA_BIN" serve --bind 127.0.0.1 --port "$RPORT" --dir "$WORK/replica" --replica-of "$WAL" \
  --capacity "$CAP" --replica-refresh-ms "$REFRESH_MS" --metrics-port "$RMETRICS" \
  --log-level warn --config "$WORK/lease.toml" 2>"$WORK/replica.log" &
PIDS+=($!)
wait_ping "$RPORT"
sleep "$SETTLE"
scrape "$WMETRICS" >"$WORK/w0"
scrape "$RMETRICS" >"$WORK/r0"
sleep "$IDLE"
scrape "$WMETRICS" >"$WORK/w1"
scrape "$RMETRICS" >"$WORK/r1"

# Failover.
ACKED="acked-$(date +%s%N)"
[ "$(redis-cli -p "$WPORT" SET last-acked "$ACKED")" = OK ] || { echo "the writer refused" >&2; exit 1; }
T0=$(date +%s.%N)
{ kill -9 "$WRITER"; wait "$WRITER"; } 2>/dev/null || true
redis-cli -p "$RPORT" REPLICAOF NO ONE >/dev/null
until [ "$(redis-cli -p "$RPORT" SET failover-probe 1 2>/dev/null)" = OK ]; do sleep 0.05; done
T1=$(date +%s.%N)
GOT=$(redis-cli -p "$RPORT" GET last-acked)
[ "$GOT" = "$ACKED" ] || { echo "the acknowledged write is missing after failover: $GOT" >&2; exit 1; }
echo "$T0 $T1" >"$WORK/failover"

python3 - "$WORK" "$IDLE" "$REFRESH_MS" "$ROOT" "$KEYS" "$LEASE_TTL" <<'EOF'
import json, re, sys
work, idle, refresh_ms, root, keys = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
lease_ttl = float(sys.argv[6])
t0, t1 = map(float, open(f"{work}/failover").read().split())
def read(name):
    out = {}
    for line in open(f"{work}/{name}"):
        m = re.match(r'^(\S+?)(\{[^}]*\})? (\S+)$', line.strip())
        if m:
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out
def per_minute(a, b):
    return {k: round((b.get(k, 0) - a.get(k, 0)) * 60 / idle, 2) for k in sorted(set(a) | set(b)) if b.get(k, 0) != a.get(k, 0)}
w = per_minute(read("w0"), read("w1"))
r = per_minute(read("r0"), read("r1"))
print(json.dumps({
    "store": root.split("://")[0],
    "idle_secs": idle,
    "keys_loaded": keys,
    "replica_refresh_ms": refresh_ms,
    "writer_requests_per_min": w,
    "writer_requests_per_min_total": round(sum(w.values()), 2),
    "replica_requests_per_min": r,
    "replica_requests_per_min_total": round(sum(r.values()), 2),
    "replica_requests_per_refresh": round(sum(r.values()) / (60000 / refresh_ms), 3),
    "lease_ttl_secs": lease_ttl,
    "failover_secs": round(t1 - t0, 2),
    "acknowledged_write_present": True,
}, indent=2))
EOF
