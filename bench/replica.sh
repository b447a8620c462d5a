#!/usr/bin/env bash
# A read replica beside its writer (issue 48): staleness under a paced write load, read
# throughput, object-store requests per minute idle, and the time a failover takes.
# `strata serve` with its WAL on an object-store log location (`--sync SYNC`, default
# everysec) and a capacity tier, a replica following it (`--replica-of`, refreshing every
# REFRESH_MS). Loaded with KEYS keys; then
# - lag: for each of RATES (MB/s of 4 KiB values), LAG_SECS seconds of paced SETs to the writer
#   while bench/replica_lag.py reads a clock key from the replica every 20 ms: staleness
#   p50/p90/p99 (the time since the newest stamp the replica served was written);
# - reads: `redis-benchmark -t get -r KEYS -c 50 -P 16` on the writer and on the replica,
#   interleaved REPEAT times;
# - idle: left to settle SETTLE seconds, then idle IDLE seconds while their
# Prometheus counters are read at the start and the end (`strata_object_store_requests{store,
# kind}` on the writer, `strata_replica_log_requests`, `strata_replica_log_lists` and
# `strata_replica_capacity_requests` on the replica). Then the writer is killed (SIGKILL) right
# after an acknowledged write, the replica is promoted (`REPLICAOF NO ONE`), and
# `failover_secs` is the time from the kill to the first write the promoted server accepts
# (the old writer's lease, `LEASE_TTL` seconds, is waited out first); the acknowledged write
# must be there. Prints one JSON object.
#
#   bash bench/replica.sh                               # file:// stores under a temp dir
#   STRATA_S3_URL=s3://bucket bash bench/replica.sh       # the S3 server scripts/s3-server.sh starts
#   PHASES="idle failover" IDLE=300 bash bench/replica.sh
#   RENEW_WHILE_IDLE=false PHASES=idle bash bench/replica.sh  # the writer's lease sleeps when idle
set -euo pipefail
cd "$(dirname "$0")/.."
STRATA_BIN="${STRATA_BIN:-target/release/strata}"
IDLE="${IDLE:-60}"
SETTLE="${SETTLE:-15}"
KEYS="${KEYS:-20000}"
REFRESH_MS="${REFRESH_MS:-1000}"
LEASE_TTL="${LEASE_TTL:-20}"
RENEW_WHILE_IDLE="${RENEW_WHILE_IDLE:-true}"
SYNC="${SYNC:-everysec}"
PHASES="${PHASES:-lag reads idle failover}"
RATES="${RATES:-1 10 100}"
LAG_SECS="${LAG_SECS:-20}"
READS="${READS:-500000}"
REPEAT="${REPEAT:-3}"
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
printf '[engine]\nwal-lease-ttl-secs = %s\nwal-lease-renew-while-idle = %s\n' "$LEASE_TTL" "$RENEW_WHILE_IDLE" >"$WORK/lease.toml"
PIDS=()
# The work directory holds gigabytes after a lag run: removed at exit unless KEEP_WORK=1.
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true
      [ "${KEEP_WORK:-0}" = 1 ] || rm -rf "$WORK"' EXIT

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
  --sync "$SYNC" --config "$WORK/lease.toml" 2>"$WORK/writer.log" &
WRITER=$!
PIDS+=($WRITER)
wait_ping "$WPORT"
redis-benchmark -p "$WPORT" -n "$KEYS" -r "$KEYS" -c 8 -P 16 -q -t set >/dev/null
"$STRATA_BIN" serve --bind 127.0.0.1 --port "$RPORT" --dir "$WORK/replica" --replica-of "$WAL" \
  --capacity "$CAP" --replica-refresh-ms "$REFRESH_MS" --metrics-port "$RMETRICS" \
  --log-level warn --config "$WORK/lease.toml" 2>"$WORK/replica.log" &
PIDS+=($!)
wait_ping "$RPORT"
has() { case " $PHASES " in *" $1 "*) return 0 ;; esac; return 1; }
: >"$WORK/lag" >"$WORK/reads"
if has lag; then
  for rate in $RATES; do
    python3 bench/replica_lag.py --writer "$WPORT" --replica "$RPORT" --rate-mb "$rate" \
      --secs "$LAG_SECS" >>"$WORK/lag"
  done
fi
if has reads; then
  sleep "$SETTLE"
  rps() { # port
    redis-benchmark -p "$1" -n "$READS" -r "$KEYS" -c 50 -P 16 --csv -t get 2>/dev/null |
      awk -F'","' 'NR > 1 { gsub(/"/, "", $0); split($0, f, ","); print f[2]; exit }'
  }
  for _ in $(seq 1 "$REPEAT"); do
    echo "$(rps "$WPORT") $(rps "$RPORT")" >>"$WORK/reads"
  done
fi
sleep "$SETTLE"
scrape "$WMETRICS" >"$WORK/w0"
scrape "$RMETRICS" >"$WORK/r0"
has idle && sleep "$IDLE"
scrape "$WMETRICS" >"$WORK/w1"
scrape "$RMETRICS" >"$WORK/r1"

echo "0 0" >"$WORK/failover"
if has failover; then
  ACKED="acked-$(date +%s%N)"
  [ "$(redis-cli -p "$WPORT" SET last-acked "$ACKED")" = OK ] || { echo "the writer refused" >&2; exit 1; }
  # Acknowledged under `--sync everysec` means in the WAL within a second: wait that out.
  [ "$SYNC" = always ] || sleep 1.5
  T0=$(date +%s.%N)
  { kill -9 "$WRITER"; wait "$WRITER"; } 2>/dev/null || true
  redis-cli -p "$RPORT" REPLICAOF NO ONE >/dev/null
  until [ "$(redis-cli -p "$RPORT" SET failover-probe 1 2>/dev/null)" = OK ]; do sleep 0.05; done
  T1=$(date +%s.%N)
  GOT=$(redis-cli -p "$RPORT" GET last-acked)
  [ "$GOT" = "$ACKED" ] || { echo "the acknowledged write is missing after failover: $GOT" >&2; exit 1; }
  echo "$T0 $T1" >"$WORK/failover"
fi

python3 - "$WORK" "$IDLE" "$REFRESH_MS" "$ROOT" "$KEYS" "$LEASE_TTL" "$SYNC" "$PHASES" "$RENEW_WHILE_IDLE" <<'EOF'
import json, re, sys
work, idle, refresh_ms, root, keys = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
lease_ttl, sync, phases = float(sys.argv[6]), sys.argv[7], sys.argv[8].split()
renew_while_idle = sys.argv[9] == "true"
t0, t1 = map(float, open(f"{work}/failover").read().split())
lag = [json.loads(l) for l in open(f"{work}/lag") if l.strip()]
reads = [tuple(map(float, l.split())) for l in open(f"{work}/reads") if l.strip()]
def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else None
def read(name):
    out = {}
    for line in open(f"{work}/{name}"):
        m = re.match(r'^(\S+?)(\{[^}]*\})? (\S+)$', line.strip())
        if m:
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out
def per_minute(a, b):
    return {k: round((b.get(k, 0) - a.get(k, 0)) * 60 / idle, 2) for k in sorted(set(a) | set(b)) if b.get(k, 0) != a.get(k, 0)}
w = per_minute(read("w0"), read("w1")) if "idle" in phases else {}
r = per_minute(read("r0"), read("r1")) if "idle" in phases else {}
print(json.dumps({
    "store": root.split("://")[0],
    "phases": phases,
    "writer_sync": sync,
    "lag": lag,
    "reads_get_rps": [{"writer": w_, "replica": r_} for w_, r_ in reads],
    "reads_replica_over_writer_median": round(median([r_ / w_ for w_, r_ in reads]), 2) if reads else None,
    "idle_secs": idle if "idle" in phases else 0,
    "keys_loaded": keys,
    "replica_refresh_ms": refresh_ms,
    "writer_requests_per_min": w,
    "writer_requests_per_min_total": round(sum(w.values()), 2),
    "replica_requests_per_min": r,
    "replica_requests_per_min_total": round(sum(r.values()), 2),
    "replica_requests_per_refresh": round(sum(r.values()) / (60000 / refresh_ms), 3),
    "lease_ttl_secs": lease_ttl,
    "lease_renew_while_idle": renew_while_idle,
    "failover_secs": round(t1 - t0, 2) if "failover" in phases else None,
    "acknowledged_write_present": True if "failover" in phases else None,
}, indent=2))
EOF
