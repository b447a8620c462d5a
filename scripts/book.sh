#!/usr/bin/env bash
# Builds and checks the user's guide (docs/, an mdBook) — part of the test command:
# - installs mdBook into target/tools when it is missing (a pinned release, from crates.io);
# - `mdbook build docs` (output in target/book);
# - scripts/check-book.py: every page listed, every relative link and anchor resolves, every page
#   with Rust code included as doctests (those run in `cargo test`);
# - the generated pages are up to date: the configuration reference (scripts/options-reference.py)
#   and the index of bench/results (scripts/bench-index.py).
set -euo pipefail
cd "$(dirname "$0")/.."
MDBOOK_VERSION=0.5.4
TOOLS="${CARGO_TARGET_DIR:-$PWD/target}/tools"
MDBOOK="$TOOLS/bin/mdbook"
if ! [ -x "$MDBOOK" ] || ! "$MDBOOK" --version | grep -q "v$MDBOOK_VERSION"; then
  echo "== installing mdbook $MDBOOK_VERSION into $TOOLS"
  cargo install --quiet --locked --no-default-features --features search \
    --version "$MDBOOK_VERSION" --root "$TOOLS" mdbook
fi
echo "== mdbook build docs"
"$MDBOOK" build docs
python3 scripts/check-book.py
python3 scripts/options-reference.py --check
python3 scripts/bench-index.py --check
