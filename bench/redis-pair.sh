# Sourced by bench/redis-compare.sh and bench/serve-conns.sh: builds strata (unless STRATA_BIN
# is set), makes the work directory $WORK, kills both servers and removes $WORK on exit, and
# provides wait_ping PORT NAME. The caller starts the servers and sets STRATA_PID / REDIS_PID.

if [ -z "${STRATA_BIN:-}" ]; then # STRATA_BIN=path skips the build
  echo "building strata (release)..." >&2
  cargo build --release -p strata-cli >&2
  STRATA_BIN="$PWD/target/release/strata"
fi

WORK="$(mktemp -d)"
STRATA_PID=""
REDIS_PID=""
cleanup() {
  [ -n "$STRATA_PID" ] && kill "$STRATA_PID" 2>/dev/null && wait "$STRATA_PID" 2>/dev/null || true
  [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

port_free() { # port name: fails if something already answers there (a server left running
  # would otherwise be measured in place of the one this script starts)
  if redis-cli -h 127.0.0.1 -p "$1" PING >/dev/null 2>&1; then
    echo "port $1 ($2) is already in use: stop whatever listens there first" >&2
    exit 1
  fi
}

wait_ping() { # port name
  for _ in $(seq 1 300); do
    if [ "$(redis-cli -h 127.0.0.1 -p "$1" PING 2>/dev/null)" = "PONG" ]; then return 0; fi
    sleep 0.2
  done
  echo "$2 did not start on port $1" >&2
  exit 1
}
