#!/usr/bin/env bash
# The project's test command (see README). Installs what the tests need, then runs them:
# - an S3-compatible server on loopback for the capacity-tier tests (scripts/s3-server.sh:
#   SeaweedFS, built from its Go module; Go is installed on the CI machines);
# - expensive consistency checks are on (`invariants` feature), as DESIGN.md asks of CI.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is required (https://rustup.rs)" >&2
  exit 1
fi

# The server's tests drive it with Debian's redis-tools (redis-cli, redis-benchmark) and compare
# its replies with redis-server's (tests/differential.rs). Install them when missing. Works as root (CI
# containers, no sudo) and as a user with sudo.
if ! command -v redis-cli >/dev/null 2>&1 || ! command -v redis-benchmark >/dev/null 2>&1 ||
  ! command -v redis-server >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
  elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "redis-tools are missing and neither root nor sudo is available to install them" >&2
    exit 1
  fi
  echo "== installing redis-tools and redis-server (apt-get)"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y redis-tools redis-server
fi
# From here on, tests that need the tools fail instead of skipping.
export STRATA_REQUIRE_REDIS_TOOLS=1

# SeaweedFS by default (built once into target/tools: ~11 min on 2 cores the first time);
# STRATA_S3_SERVER=moto for a quick run on the emulator.
if [ -z "${STRATA_S3_URL:-}" ]; then
  trap 'bash scripts/s3-server.sh stop' EXIT
  s3_env=$(bash scripts/s3-server.sh start --server "${STRATA_S3_SERVER:-seaweedfs}")
  eval "$s3_env"
fi
echo "capacity-tier tests use $STRATA_S3_URL at $AWS_ENDPOINT_URL (${STRATA_S3_SERVER:-an external server})"

# On CI (a fresh clone, built once) incremental compilation only costs disk: ~4 GB of target/.
if [ "${CI:-}" = "true" ]; then export CARGO_INCREMENTAL=0; fi
cargo test --workspace --features strata/invariants "$@"
# The foyer peer cache (feature `foyer`, off by default) keeps building and working.
cargo test -p strata --features foyer --lib cache::persistent::foyer "$@"

# The Python binding (bindings/python, outside the cargo workspace): built and installed with
# pip into a virtualenv under the target directory, then its pytest suite.
PY="${PYTHON:-python3}"
VENV="${CARGO_TARGET_DIR:-$PWD/target}/python-venv"
if [ ! -x "$VENV/bin/python" ]; then
  if ! "$PY" -m venv "$VENV"; then
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
    echo "== installing python3-venv and python3-pip (apt-get)"
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y python3 python3-venv python3-pip
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
  fi
fi
echo "== python binding: pip install ./bindings/python, then pytest"
"$VENV/bin/python" -m pip install -q --upgrade pip "maturin>=1.5,<2" pytest
"$VENV/bin/python" -m pip install -q ./bindings/python
(cd bindings/python && "$VENV/bin/python" -m pytest -q tests)
EX_DIR="$(mktemp -d)"
"$VENV/bin/python" bindings/python/examples/tiered.py "$EX_DIR/python-tiered" 20000
rm -rf "$EX_DIR"

# The README's main job, smaller and in the test build: most data on the capacity tier,
# skewed reads, every value found (the example asserts both). Then one example per major
# feature, each on a small size; each asserts what it shows.
EX_DIR="$(mktemp -d)"
echo "== examples: quickstart (300k keys), split_forest, node_loss, remote_compaction"
cargo run -q -p strata --features strata/invariants --example quickstart -- "$EX_DIR/quickstart" 300000
cargo run -q -p strata --features strata/invariants --example split_forest -- "$EX_DIR/split_forest" 200000
cargo run -q -p strata --features strata/invariants --example node_loss -- "$EX_DIR/node_loss" 100000
cargo run -q -p strata-compaction --features strata/invariants --example remote_compaction -- "$EX_DIR/remote_compaction" 50000
rm -rf "$EX_DIR"

# The user's guide (docs/): built with mdBook, links and anchors checked, generated pages up to
# date. Its Rust code ran above as doctests of the strata crate.
bash scripts/book.sh
# The engine's API documentation: every public item documented (the crate also warns on
# missing docs, which clippy -D warnings turns into an error).
RUSTDOCFLAGS="-D missing-docs" cargo doc -q -p strata --no-deps

# redis-py's own test_commands.py, test_pipeline.py, test_scripting.py, test_function.py,
# test_lock.py and the Pub/Sub tests against `strata serve` (needs python3 with venv and pip).
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  echo "== installing python3-venv (apt-get)"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y python3 python3-venv python3-pip
fi
# The binary the workspace tests just built (same features, so no rebuild).
cargo build -q -p strata-cli --features strata/invariants
bash scripts/redis-py-tests.sh "${CARGO_TARGET_DIR:-target}/debug/strata"
# The README's `strata serve` example, run as written (with this binary and a free port).
bash scripts/readme-serve.sh "${CARGO_TARGET_DIR:-target}/debug/strata"
