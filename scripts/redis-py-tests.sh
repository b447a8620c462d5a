#!/usr/bin/env bash
# Runs redis-py's own tests/test_commands.py (string, keyspace, hash, list, set, sorted-set and
# bitmap families, among others), tests/test_pipeline.py (pipelines, MULTI/EXEC, WATCH),
# tests/test_scripting.py (EVAL, EVALSHA, SCRIPT), tests/test_function.py (FUNCTION, FCALL) and
# tests/test_lock.py (redis-py's Lock, on Lua scripts), tests/test_pubsub.py and
# tests/test_asyncio/test_pubsub.py (Pub/Sub, sync and asyncio clients) against `strata serve`, unpatched. Installs everything it needs:
# a Python venv with the redis sdist (its tests come from the sdist, fetched with pip download)
# and pytest, and Celery for scripts/job-queue-test.py, run last. Tests that need modules, ACL, cluster or commands outside the server's scope are
# deselected by name from scripts/redis-py-deselect.txt, each with its reason.
#
# Usage: scripts/redis-py-tests.sh [path/to/strata]   (default: builds target/debug/strata)
# Env: REDIS_PY_VERSION (default 8.1.0), PYTHON (default python3), WORK (default a temp dir).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
REDIS_PY_VERSION=${REDIS_PY_VERSION:-8.1.0}
PYTHON=${PYTHON:-python3}
WORK=${WORK:-$(mktemp -d /tmp/strata-redis-py.XXXXXX)}
STRATA=${1:-}
if [ -z "$STRATA" ]; then
  cargo build -q -p strata-cli
  STRATA="${CARGO_TARGET_DIR:-$ROOT/target}/debug/strata"
fi

echo "== redis-py $REDIS_PY_VERSION tests in $WORK"
if [ ! -x "$WORK/venv/bin/python" ]; then
  "$PYTHON" -m venv "$WORK/venv"
fi
VPY="$WORK/venv/bin/python"
if [ ! -d "$WORK/redis-$REDIS_PY_VERSION/tests" ]; then
  "$VPY" -m pip download -q --no-deps --no-binary :all: -d "$WORK" "redis==$REDIS_PY_VERSION"
  tar -xzf "$WORK/redis-$REDIS_PY_VERSION.tar.gz" -C "$WORK"
fi
"$VPY" -m pip install -q "$WORK/redis-$REDIS_PY_VERSION" pytest pytest-asyncio pytest-timeout packaging \
  "celery==${CELERY_VERSION:-5.7.0}"

PORT=${PORT:-$(( 20000 + RANDOM % 20000 ))}
DATA="$WORK/data"
rm -rf "$DATA"
"$STRATA" serve --port "$PORT" --dir "$DATA" --capacity none --log-level warn >"$WORK/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  if redis-cli -p "$PORT" ping >/dev/null 2>&1; then break; fi
  sleep 0.1
done

DESELECT=()
while IFS= read -r line; do
  name=${line%%#*}
  name=$(echo "$name" | tr -d '[:space:]')
  [ -z "$name" ] && continue
  case "$name" in
    *::*) DESELECT+=(--deselect "tests/$name") ;;
    *) DESELECT+=(--deselect "tests/test_commands.py::TestRedisCommands::$name") ;;
  esac
done <"$ROOT/scripts/redis-py-deselect.txt"

cd "$WORK/redis-$REDIS_PY_VERSION"
"$VPY" -m pytest tests/test_commands.py tests/test_pipeline.py tests/test_scripting.py \
  tests/test_lock.py tests/test_function.py tests/test_pubsub.py tests/test_asyncio/test_pubsub.py \
  --redis-url="redis://127.0.0.1:$PORT/0" \
  -p no:cacheprovider -q --timeout 60 -W ignore -rfE "${DESELECT[@]}"

# A real job-queue library end to end on the same server: Celery (Redis broker and result
# backend), a worker killed mid-task and its task redelivered (scripts/job-queue-test.py).
cd "$ROOT"
"$VPY" scripts/job-queue-test.py "$PORT"
