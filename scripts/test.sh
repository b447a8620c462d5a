#!/usr/bin/env bash
# The project's test command (see README). Installs what the tests need, then runs them:
# - an S3-compatible server (moto) on loopback for the capacity-tier tests (scripts/s3-server.sh);
# - expensive consistency checks are on (`invariants` feature), as DESIGN.md asks of CI.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is required (https://rustup.rs)" >&2
  exit 1
fi

if [ -z "${STRATA_S3_URL:-}" ]; then
  eval "$(bash scripts/s3-server.sh start)"
  trap 'bash scripts/s3-server.sh stop' EXIT
fi
echo "capacity-tier tests use $STRATA_S3_URL at $AWS_ENDPOINT_URL"

cargo test --workspace --features strata/invariants "$@"
