#!/usr/bin/env bash
# The main job on sample data the project makes itself: generate a seeded
# Kineto-shaped trace, import it into a workspace kept for you, and ask where
# the time went. Each step is headed; the end says what to try next.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
step() { printf '\n== %s\n' "$*"; }

if [ -n "${FLAMEOX_BIN_DIR:-}" ]; then
  # Binaries someone already built (.ci/run passes its test build's).
  TARGET="$FLAMEOX_BIN_DIR"
else
  step "build the flameox binary and the sample generator (the first build compiles Apache DataFusion: about 22 minutes on 2 cores, 2 GB of target/; later ones seconds)"
  # Only the two programs the demo runs: no tests, benchmarks or the
  # distributed-query (Ballista) support.
  cargo build -p flameox --bin flameox -p flameox-benches --bin flameox-gen
  TARGET="${CARGO_TARGET_DIR:-target}/debug"
fi
case "$TARGET" in /*) ;; *) TARGET="$repo/$TARGET" ;; esac
FLAMEOX="$TARGET/flameox"

# The workspace stays after the demo so the commands it suggests work.
WORK="${FLAMEOX_DEMO_DIR:-${TMPDIR:-/tmp}/flameox-demo}"
# Only a folder an earlier demo made (its marker, or its trace and
# workspace) is replaced.
made_by_demo() {
  [ -f "$1/.flameox-demo" ] || { [ -f "$1/sample.pt.trace.json" ] && [ -d "$1/.flameox" ]; }
}
if [ -e "$WORK" ] && ! made_by_demo "$WORK"; then
  echo "refusing to replace $WORK: it is not a folder this demo made (set FLAMEOX_DEMO_DIR)" >&2
  exit 2
fi
rm -rf "$WORK"
mkdir -p "$WORK"
touch "$WORK/.flameox-demo"
cd "$WORK"

step "generate a seeded 200,000-event Kineto-shaped trace"
"$TARGET/flameox-gen" kineto --seed 7 --events 200000 --streams 4 --out sample.pt.trace.json
ls -l sample.pt.trace.json

step "create a workspace and import the trace"
"$FLAMEOX" init
"$FLAMEOX" import sample.pt.trace.json --json > import.json
RUN=$(sed -n 's/.*"run_id": "\([^"]*\)".*/\1/p' import.json | head -n 1)
ART=$(sed -n 's/.*"artifact_id": "\([^"]*\)".*/\1/p' import.json | head -n 1)
echo "imported run $RUN (artifact $ART)"

step "where the time went: hotspots (and folded stacks for a flame graph tool)"
"$FLAMEOX" analyze hotspots "$RUN" --limit 15 --folded stacks.folded
echo "folded stacks: $(wc -l < stacks.folded) lines in $WORK/stacks.folded"

step "who calls aten::addmm"
"$FLAMEOX" stacks callers "$RUN" aten::addmm --limit 5

step "what aten::linear calls"
"$FLAMEOX" stacks callees "$RUN" aten::linear --limit 5

step "example stacks of cudaLaunchKernel"
"$FLAMEOX" stacks examples "$RUN" cudaLaunchKernel --limit 2

step "the first 2 ms of the trace"
"$FLAMEOX" trace window "$ART" --relative --start-ns 0 --end-ns 2000000 --limit 10

step "validate the workspace"
"$FLAMEOX" validate

step "try next (the workspace is kept in $WORK; the binary is $FLAMEOX)"
cat <<NEXT
  cd $WORK
  $FLAMEOX analyze summary $RUN
  $FLAMEOX analyze gpu-summary $RUN --report kernels
  $FLAMEOX analyze hotspots $RUN --flamegraph hot.svg
  $FLAMEOX investigations create --question "why is step time up?" --target $RUN
NEXT
