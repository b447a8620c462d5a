#!/usr/bin/env bash
# The project's test command (see README). Installs what the tests need, then runs them.
# Expensive consistency checks are on (`invariants` feature), as DESIGN.md asks of CI.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is required (https://rustup.rs)" >&2
  exit 1
fi

cargo test --workspace --features strata/invariants "$@"
