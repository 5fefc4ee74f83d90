#!/usr/bin/env bash
# The main job on bundled sample data: generate a seeded Kineto-shaped trace,
# import it into a fresh workspace, and ask where the time went.
set -euo pipefail
cd "$(dirname "$0")/.."
# Same unit graph as the test command, so CI builds the dependencies once.
cargo build -q --workspace --all-targets
TARGET="${CARGO_TARGET_DIR:-target}/debug"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$TARGET/flameox-gen" kineto --seed 7 --events 200000 --streams 4 --out "$WORK/sample.pt.trace.json"
cd "$WORK"
FLAMEOX="$TARGET/flameox"
case "$FLAMEOX" in /*) ;; *) FLAMEOX="$OLDPWD/$FLAMEOX" ;; esac
"$FLAMEOX" init
"$FLAMEOX" import sample.pt.trace.json --json > import.json
RUN=$(sed -n 's/.*"run_id": "\([^"]*\)".*/\1/p' import.json | head -n 1)
ART=$(sed -n 's/.*"artifact_id": "\([^"]*\)".*/\1/p' import.json | head -n 1)
echo "imported run $RUN (artifact $ART)"
"$FLAMEOX" analyze hotspots "$RUN" --limit 15 --folded stacks.folded
echo "folded stacks: $(wc -l < stacks.folded) lines"
"$FLAMEOX" stacks callers "$RUN" aten::addmm --limit 5
"$FLAMEOX" stacks callees "$RUN" aten::linear --limit 5
"$FLAMEOX" stacks examples "$RUN" cudaLaunchKernel --limit 2
"$FLAMEOX" trace window "$ART" --relative --start-ns 0 --end-ns 2000000 --limit 10
"$FLAMEOX" validate
