#!/usr/bin/env bash
# Runs every cargo-fuzz target for RUNS executions (default 10M), one at a time, niced, and
# prints one summary line per target (the figures in the README). Build first with
#   cargo +nightly fuzz build -O -a -s none
# Corpora start from the real encoders' seeds (`strata-fuzz seeds TARGET fuzz/corpus/TARGET`).
# Usage: [MAX_TIME=seconds] fuzz/run-all.sh [RUNS] [TARGET...]
set -u
cd "$(dirname "$0")"
RUNS=${1:-10000000}
shift || true
BIN=target/x86_64-unknown-linux-gnu/release
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=($(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v strata-fuzz-libfuzzer))
fi
mkdir -p logs artifacts
for t in "${TARGETS[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  nice -n 15 "$BIN/$t" "corpus/$t" -runs="$RUNS" ${MAX_TIME:+-max_total_time=$MAX_TIME} -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=256 -print_final_stats=1 -artifact_prefix="artifacts/$t/" \
    > "logs/$t.log" 2>&1
  rc=$?
  last=$(grep -E '^#[0-9]+' "logs/$t.log" | tail -1)
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "logs/$t.log")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "logs/$t.log")
  echo "$t rc=$rc execs=$execs exec/s=$eps | $last"
done
