#!/usr/bin/env bash
# The import profile (docs/performance.md, "CPU per byte"): builds the
# release binaries, generates each input shape once into
# /var/tmp/flameox-import-profile (seeded: same bytes every time) and prints
# wall MB/s, events/s, peak RSS and CPU ns per input byte by phase.
#
#   bash benches/import_profile.sh [--quick] [--rounds N] [--only SHAPE]... [--json FILE]
#
# A cold release build takes ~25 min on 2 cores; the full-size inputs
# (~1.1 GB) take ~2 min to generate and ~1 min per round to import.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
echo "building release binaries (cargo build --release -p flameox -p flameox-benches --bins)" >&2
cargo build --release -p flameox -p flameox-benches --bins >&2
exec python3 benches/import_profile.py --flameox "$target/release/flameox" \
  --gen "$target/release/flameox-gen" "$@"
