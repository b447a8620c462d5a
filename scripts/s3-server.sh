#!/usr/bin/env bash
# Installs (once, into target/moto-venv) and starts moto, an S3-compatible server, on a free
# loopback port; creates the bucket `strata-test`; prints the environment the tests need.
# Usage: eval "$(bash scripts/s3-server.sh start)"   ...   bash scripts/s3-server.sh stop
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=target/moto-venv
PIDFILE=target/moto.pid

case "${1:-start}" in
start)
  mkdir -p target
  if [ ! -x "$VENV/bin/moto_server" ]; then
    python3 -m venv "$VENV" >&2
    "$VENV/bin/pip" install -q 'moto[server]' >&2
  fi
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$VENV/bin/moto_server" -H 127.0.0.1 -p "$PORT" >target/moto.log 2>&1 &
  echo $! >"$PIDFILE"
  python3 - "$PORT" <<'PY'
import sys, time, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}"
for _ in range(300):
    try:
        urllib.request.urlopen(url + "/", timeout=1)
        break
    except Exception:
        time.sleep(0.1)
req = urllib.request.Request(url + "/strata-test", method="PUT")
urllib.request.urlopen(req, timeout=10)
PY
  echo "export STRATA_S3_URL=s3://strata-test"
  echo "export AWS_ENDPOINT_URL=http://127.0.0.1:$PORT"
  echo "export AWS_ALLOW_HTTP=true"
  echo "export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1"
  ;;
stop)
  if [ -f "$PIDFILE" ]; then kill "$(cat "$PIDFILE")" 2>/dev/null || true; rm -f "$PIDFILE"; fi
  ;;
esac
