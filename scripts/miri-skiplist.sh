#!/usr/bin/env bash
# Runs the memtable skiplist's tests (crates/strata/src/memtable/skiplist.rs, skiplist_cursor.rs and
# skiplist_tests.rs, all of the memtable's unsafe code, and arena.rs, point_index.rs and prefetch.rs, which it uses) under Miri: Stacked Borrows, then Tree Borrows, with Miri's data-race
# detector on the concurrent-insert test. The engine's dependencies (C libraries among them)
# cannot run under Miri, so a scratch crate includes the skiplist and `types` by path, with a
# two-line stand-in for the error type `types` names. Needs the nightly toolchain; installs
# Miri into it if missing (network). Not part of scripts/test.sh: it takes a few minutes.
#
#   bash scripts/miri-skiplist.sh
#   bash scripts/miri-skiplist.sh skiplist::   # only the tests whose names match (cargo test's filter)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^miri' ||
  rustup component add miri rust-src --toolchain nightly
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
cat >"$work/Cargo.toml" <<TOML
[package]
name = "strata-miri-skiplist"
version = "0.0.0"
edition = "2021"
[dependencies]
parking_lot = "0.12"
xxhash-rust = { version = "0.8", features = ["xxh3"] }
[dev-dependencies]
strata-test-support = { path = "$repo/crates/strata-test-support" }
[workspace]
TOML
cat >"$work/src/lib.rs" <<RS
#![allow(dead_code)]
mod error {
    #[derive(Debug)]
    pub struct Error(String);
    impl Error {
        pub fn corruption(m: impl Into<String>) -> Self {
            Error(m.into())
        }
    }
    pub type Result<T> = std::result::Result<T, Error>;
}
#[path = "$repo/crates/strata/src/types.rs"]
pub mod types;
#[path = "$repo/crates/strata/src/memtable/prefetch.rs"]
pub mod prefetch;
#[path = "$repo/crates/strata/src/memtable/point_index.rs"]
pub mod point_index;
#[path = "$repo/crates/strata/src/memtable/arena.rs"]
pub mod arena;
#[path = "$repo/crates/strata/src/memtable/skiplist.rs"]
pub mod skiplist;
RS
cd "$work"
export STRATA_SEED="${STRATA_SEED:-$RANDOM}"
echo "miri: STRATA_SEED=$STRATA_SEED"
MIRIFLAGS="-Zmiri-disable-isolation" cargo +nightly miri test -- "$@"
MIRIFLAGS="-Zmiri-disable-isolation -Zmiri-tree-borrows" cargo +nightly miri test -- "$@"
