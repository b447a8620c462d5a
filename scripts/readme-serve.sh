#!/usr/bin/env bash
# Runs the README's `strata serve` example (the ```sh block under "## The server") line by line as
# a user would, with the given `strata` binary in place of target/release/strata and a free port
# in place of 6380, in a scratch directory; fails if a command fails, GET does not answer the
# value SET stored, or the server does not exit after SHUTDOWN. Usage: readme-serve.sh STRATA_BIN
set -euo pipefail
BIN="$(realpath "$1")"
cd "$(dirname "$0")/.."
BLOCK="$(awk '/^## The server/{f=1} f && /^```sh/{g=1; next} g && /^```/{exit} g' README.md)"
[ -n "$BLOCK" ] || { echo "readme-serve: no sh block under '## The server' in README.md" >&2; exit 1; }
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
WORK="$(mktemp -d)"
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
cd "$WORK"
OUT=""
while IFS= read -r line; do
  cmd="${line%%#*}"                                   # drop the comment
  cmd="$(echo "$cmd" | sed -e "s#target/release/strata#$BIN#g" -e "s/6380/$PORT/g" -e 's/[[:space:]]*$//')"
  [ -z "$cmd" ] && continue
  case "$cmd" in cargo\ build*) continue ;; esac     # the test command built the binary already
  echo "readme-serve: \$ $cmd"
  if [[ "$cmd" == *"&" ]]; then
    eval "${cmd%&} >server.log 2>&1 &"
    SERVER=$!
    for _ in $(seq 1 300); do
      redis-cli -p "$PORT" PING >/dev/null 2>&1 && break
      kill -0 "$SERVER" 2>/dev/null || { cat server.log >&2; echo "readme-serve: the server exited" >&2; exit 1; }
      sleep 0.1
    done
  else
    r="$(eval "$cmd" 2>&1)" || true
    echo "$r"
    OUT+="$r"$'\n'
  fi
done <<< "$BLOCK"
grep -qx 'hello' <<< "$OUT" || { echo "readme-serve: GET did not answer hello" >&2; exit 1; }
for _ in $(seq 1 300); do
  kill -0 "$SERVER" 2>/dev/null || { SERVER=""; break; }
  sleep 0.1
done
[ -z "$SERVER" ] || { echo "readme-serve: the server still runs after SHUTDOWN" >&2; exit 1; }
echo "readme-serve: the README's server example works"
