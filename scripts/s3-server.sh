#!/usr/bin/env bash
# Starts an S3-compatible server on free loopback ports, creates the bucket `strata-test`, and
# prints the environment the tests need (STRATA_S3_URL, AWS_ENDPOINT_URL, credentials; and
# STRATA_WEED, the SeaweedFS binary, for the tests that start a cluster of their own).
#
#   eval "$(bash scripts/s3-server.sh start [--server seaweedfs|moto])"   ...   bash scripts/s3-server.sh stop
# (In scripts under `set -e`, `env=$(bash scripts/s3-server.sh start); eval "$env"` stops on a
# failed start; `eval "$(…)"` alone does not.)
#
# - seaweedfs (the default): SeaweedFS, a distributed object store (master, volume server, filer,
#   S3 gateway in one `weed server` process). Built once from its Go module into target/tools/weed
#   (about 11 minutes on 2 cores with a cold Go module cache; Go must be installed).
# - moto: an in-memory S3 emulator (installed once into target/moto-venv); quick to start, for a
#   quick run.
# `bash scripts/s3-server.sh install-seaweedfs` only builds the binary (prints its path).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
STATE="$TARGET/s3-server"
# The SeaweedFS release the tests run on (weed 4.53; pinned: its go.mod's replace directives
# refuse `go install`, so the module is downloaded and built in place).
WEED_MODULE=github.com/seaweedfs/seaweedfs
WEED_VERSION=v0.0.0-20261109003541-7506e5f91cd6
WEED="$TARGET/tools/weed-$WEED_VERSION"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

install_seaweedfs() {
  if [ -x "$WEED" ]; then return; fi
  if ! command -v go >/dev/null 2>&1; then
    if [ -x /usr/local/go/bin/go ]; then
      export PATH="$PATH:/usr/local/go/bin"
    else
      echo "s3-server.sh: Go is needed to build SeaweedFS (https://go.dev/dl); or use --server moto" >&2
      exit 1
    fi
  fi
  echo "== building SeaweedFS $WEED_VERSION into $WEED (once; about 11 minutes on 2 cores with a cold Go module cache)" >&2
  local dir
  dir=$(go mod download -json "$WEED_MODULE@$WEED_VERSION" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  mkdir -p "$TARGET/tools"
  (cd "$dir" && GOFLAGS=-mod=mod go build -o "$WEED.tmp" ./weed) >&2
  mv "$WEED.tmp" "$WEED"
}

# Waits until `url` answers HTTP at all (any status), for up to 60 s.
wait_http() {
  python3 - "$1" <<'PY'
import sys, time, urllib.request, urllib.error
for _ in range(600):
    try:
        urllib.request.urlopen(sys.argv[1], timeout=1)
        sys.exit(0)
    except urllib.error.HTTPError:
        sys.exit(0)
    except Exception:
        time.sleep(0.1)
sys.exit(f"{sys.argv[1]} did not answer within 60 s")
PY
}

# Creates the bucket (an anonymous PUT, as both servers accept without credentials configured).
make_bucket() {
  python3 - "$1" <<'PY'
import sys, time, urllib.request, urllib.error
url = sys.argv[1] + "/strata-test"
for _ in range(300):
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="PUT"), timeout=30)
        sys.exit(0)
    except urllib.error.HTTPError as e:
        if e.code == 409:  # already there
            sys.exit(0)
        last = e
    except Exception as e:
        last = e
    time.sleep(0.2)
sys.exit(f"could not create the bucket at {url}: {last}")
PY
}

start_seaweedfs() {
  install_seaweedfs
  # Twice at most: a port chosen free may be taken before weed binds it.
  for attempt in 1 2; do
    if try_start_seaweedfs; then return; fi
    echo "s3-server.sh: SeaweedFS did not start (attempt $attempt)" >&2
  done
  exit 1
}

try_start_seaweedfs() {
  local dir="$STATE/seaweedfs" s3 master volume filer
  rm -rf "$dir" && mkdir -p "$dir/data"
  s3=$(free_port) master=$(free_port) volume=$(free_port) filer=$(free_port)
  # Every port explicit and free (gRPC ports default to port+10000, which may be taken).
  "$WEED" server -dir="$dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
    -master.port="$master" -master.port.grpc="$(free_port)" -master.volumeSizeLimitMB=64 \
    -volume.port="$volume" -volume.port.grpc="$(free_port)" -volume.max=0 \
    -filer -filer.port="$filer" -filer.port.grpc="$(free_port)" \
    -s3 -s3.port="$s3" -s3.port.grpc="$(free_port)" -s3.port.iceberg=0 -s3.port.lance=0 \
    >"$dir/weed.log" 2>&1 &
  echo $! >"$STATE/pid"
  if ! wait_http "http://127.0.0.1:$s3/" || ! make_bucket "http://127.0.0.1:$s3"; then
    tail -20 "$dir/weed.log" >&2
    stop_server
    return 1
  fi
  echo "$s3" >"$STATE/port"
}

start_moto() {
  local venv="$TARGET/moto-venv" port
  if [ ! -x "$venv/bin/moto_server" ]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q 'moto[server]' >&2
  fi
  port=$(free_port)
  mkdir -p "$STATE"
  "$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$STATE/moto.log" 2>&1 &
  echo $! >"$STATE/pid"
  if ! wait_http "http://127.0.0.1:$port/" || ! make_bucket "http://127.0.0.1:$port"; then
    tail -20 "$STATE/moto.log" >&2
    stop_server
    exit 1
  fi
  echo "$port" >"$STATE/port"
}

# Stops the server the pid file names, if any.
stop_server() {
  if [ -f "$STATE/pid" ]; then
    local pid
    pid=$(cat "$STATE/pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$STATE/pid"
  fi
}

cmd="${1:-start}"
shift || true
server=seaweedfs
while [ $# -gt 0 ]; do
  case "$1" in
  --server) server="$2"; shift 2 ;;
  --server=*) server="${1#--server=}"; shift ;;
  *) echo "s3-server.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

case "$cmd" in
start)
  mkdir -p "$STATE"
  if [ -f "$STATE/pid" ] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null; then
    echo "s3-server.sh: a server is already running (pid $(cat "$STATE/pid")); stop it first" >&2
    exit 1
  fi
  case "$server" in
  seaweedfs) start_seaweedfs ;;
  moto) start_moto ;;
  *) echo "s3-server.sh: --server must be seaweedfs or moto" >&2; exit 2 ;;
  esac
  port=$(cat "$STATE/port")
  echo "export STRATA_S3_SERVER=$server"
  # The binary, for the tests that start SeaweedFS clusters of their own.
  if [ "$server" = seaweedfs ]; then echo "export STRATA_WEED=$WEED"; fi
  echo "export STRATA_S3_URL=s3://strata-test"
  echo "export AWS_ENDPOINT_URL=http://127.0.0.1:$port"
  echo "export AWS_ALLOW_HTTP=true"
  echo "export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1"
  ;;
stop)
  stop_server
  ;;
install-seaweedfs)
  install_seaweedfs
  echo "$WEED"
  ;;
*)
  echo "usage: s3-server.sh start [--server seaweedfs|moto] | stop | install-seaweedfs" >&2
  exit 2
  ;;
esac
