#!/usr/bin/env bash
# Per-rank costs of a multi-rank job, for the sizing estimate of
# docs/scale-out.md: generated Kineto jobs of RANKS_LIST ranks (each rank
# EVENTS events, same seed), each imported as one folder with 1 and with
# 2 workers (import.parallel_inputs), then gpu-breakdown, gpu-summary and
# hotspots over the whole run. Prints one line per measurement: ranks,
# workers, input MB, import wall s, peak RSS MB, evidence MB, each query's
# wall s.
# Usage: rank_scaling.sh FLAMEOX_BIN FLAMEOX_GEN_BIN [EVENTS] [RANKS...]
set -euo pipefail
bin="$1"
gen="$2"
events="${3:-20000}"
shift 3 || shift $#
ranks_list=("${@:-16 64 256}")
# shellcheck disable=SC2206
ranks_list=(${ranks_list[*]})
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mb() { du -sm "$1" | cut -f1; }
timed() { # prints wall seconds of the command, its output discarded
  local start end
  start=$(date +%s.%N)
  "$@" > /dev/null
  end=$(date +%s.%N)
  python3 -c "print(f'{$end - $start:.2f}')"
}
printf 'ranks workers input_mb import_s rss_mb evidence_mb gpu_breakdown_s gpu_summary_s hotspots_s load\n'
for ranks in "${ranks_list[@]}"; do
  job="$work/job$ranks"
  "$gen" kineto-job --ranks "$ranks" --events "$events" --seed 7 --out "$job" 2> /dev/null
  for workers in 1 2; do
    project="$work/p$ranks-$workers"
    mkdir "$project"
    (cd "$project" && "$bin" init --json > /dev/null)
    sed -i "s/^parallel_inputs = .*/parallel_inputs = $workers/" "$project/.flameox/config.toml"
    sync
    sleep 1
    start=$(date +%s.%N)
    /usr/bin/time -f '%M' -o "$work/rss" "$bin" --workspace "$project/.flameox" import "$job" --json > "$work/import.json"
    end=$(date +%s.%N)
    run=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['run_id'])" "$work/import.json")
    breakdown=$(timed "$bin" --workspace "$project/.flameox" analyze gpu-breakdown "$run" --json)
    summary=$(timed "$bin" --workspace "$project/.flameox" analyze gpu-summary "$run" --json)
    hotspots=$(timed "$bin" --workspace "$project/.flameox" analyze hotspots "$run" --json)
    printf '%s %s %s %s %s %s %s %s %s %s\n' "$ranks" "$workers" "$(mb "$job")" \
      "$(python3 -c "print(f'{$end - $start:.2f}')")" "$(( $(cat "$work/rss") / 1024 ))" \
      "$(mb "$project/.flameox/evidence")" "$breakdown" "$summary" "$hotspots" \
      "$(cut -d' ' -f1 /proc/loadavg)"
    rm -rf "$project"
  done
  rm -rf "$job"
done
