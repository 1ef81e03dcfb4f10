#!/usr/bin/env bash
# Simulator fidelity on this machine: real `burst train` runs on 2 worker processes against
# `burst sim` of the same plans, with a profile and a cluster file measured here first.
#
# usage: bench/sim_fidelity.sh [BURST (build/release/apps/burst/burst)] [PYTHON_WITH_TORCH (.venv/bin/python)]
#
# Steps (all on this machine, which should otherwise be idle):
#  1. bench/measure_cpu_links.py measures Gloo all-reduces between 2 local processes and
#     writes a cluster file (latency and bandwidth fitted);
#  2. `burst profile` measures every layer of each model at per-device batches 1..B, alone
#     and with --co-located 2 (each layer timed while another thread runs the same work: the
#     two workers of a data-parallel layer compute it at once and share the memory system);
#  3. calibration, without communication: the model is trained on one worker (the whole
#     batch) twice at the same time, one per core, so each runs as busy a machine as a
#     2-worker job does; the runtime's cost per layer call beyond what the profile times
#     (autograd and buffer bookkeeping, and the two cores' contention for memory) is
#     (measured - simulated) / (2 x layers), one forward and one backward call per layer,
#     with the mean of the two runs as measured;
#  4. the plans on 2 workers: data parallel, the burst planner's with the measured profile
#     and cluster, and the burst planner's for V100s (a different layout, run here all the
#     same); a plan identical to one already run is skipped;
#  5. each plan is trained for real (`burst train --nproc 2`, synthetic data, 30 steps; the
#     median ms/iteration of steps 11-30) and simulated (`burst sim --plan`, the measured
#     profile and cluster, and --co-located-profile for layers on both workers), without and
#     with the per-call cost of step 3 (--shard-overhead-ms);
#  6. the table, error = (simulated - measured) / measured, and the median and worst |error|
#     of the 2-worker configurations, uncalibrated and calibrated.
set -euo pipefail
burst=${1:-build/release/apps/burst/burst}
python=${2:-$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
steps=30

echo "measuring the links between 2 worker processes" >&2
"$python" "$here/measure_cpu_links.py" "$work/cluster.json" 2 | sed 's/^/  /' >&2

# model, global batch, profile batch sizes
models=(
  "fmnist_cnn 64 1 2 4 8 16 32 64"
  "$root/tests/runtime/vgg_like.json 16 1 2 4 8 16"
  "$root/tests/runtime/resnet_like.json 16 1 2 4 8 16"
  "$root/tests/runtime/inception_like.json 16 1 2 4 8 16"
)

# Median ms/iteration of steps 11.. of a `burst train` log.
measured_ms() {
  awk '$1 == "step" && $2 > 10 { for (i = 1; i < NF; ++i) if ($(i + 1) == "ms/iter") print $i }' "$1" | sort -g |
    awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
simulated_ms() {  # MODEL PROFILE PLAN OVERHEAD_MS [CLUSTER ARGS...]
  local model=$1 profile=$2 plan=$3 overhead=$4
  shift 4
  "$burst" sim --model "$model" --profile "$profile" "$@" --plan "$plan" --shard-overhead-ms "$overhead" --json |
    "$python" -c 'import json,sys; print(json.load(sys.stdin)["iteration_time_ms"])'
}
error() { awk -v a="$1" -v s="$2" 'BEGIN { printf "%+.1f%%", 100 * (s - a) / a }'; }

printf '%-15s %-6s %9s %9s %8s %12s %8s\n' model plan measured simulated error "calibrated" error > "$work/table"
for entry in "${models[@]}"; do
  read -r model batch sizes <<< "$entry"
  name=$(basename "$model" .json)
  echo "profiling $name" >&2
  # shellcheck disable=SC2086
  "$burst" profile --model "$model" --batch-sizes $sizes -o "$work/$name.profile.json" > /dev/null 2>&1
  profile="$work/$name.profile.json"
  # shellcheck disable=SC2086
  "$burst" profile --model "$model" --batch-sizes $sizes --co-located 2 -o "$work/$name.co.json" > /dev/null 2>&1
  co=(--co-located-profile "$work/$name.co.json")

  echo "  calibrating on two one-process runs side by side" >&2
  "$burst" plan --model "$model" --profile "$profile" --devices 1 --global-batch "$batch" --strategy dp \
    -o "$work/$name.one.json" > /dev/null
  for copy in a b; do
    "$burst" train --model "$model" --plan "$work/$name.one.json" --nproc 1 --steps "$steps" --log-every 1 --seed 1 \
      > "$work/$name.one.$copy.log" 2>&1 &
  done
  wait
  one_measured=$(awk -v a="$(measured_ms "$work/$name.one.a.log")" -v b="$(measured_ms "$work/$name.one.b.log")" \
    'BEGIN { printf "%.3f", (a + b) / 2 }')
  one_simulated=$(simulated_ms "$model" "$profile" "$work/$name.one.json" 0)
  layers=$("$python" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["layers"]))' "$work/$name.one.json")
  overhead=$(awk -v a="$one_measured" -v s="$one_simulated" -v n="$layers" 'BEGIN { v = (a - s) / (2 * n); printf "%.4f", (v > 0 ? v : 0) }')
  printf '%-15s %-6s %9.2f %9.2f %8s %12s %8s\n' "$name" one "$one_measured" "$one_simulated" \
    "$(error "$one_measured" "$one_simulated")" "${overhead}ms/call" "" >> "$work/table"

  "$burst" plan --model "$model" --profile "$profile" --cluster "$work/cluster.json" \
    --global-batch "$batch" --strategy dp -o "$work/$name.dp.json" > /dev/null
  "$burst" plan --model "$model" --profile "$profile" --cluster "$work/cluster.json" \
    --global-batch "$batch" -o "$work/$name.burst.json" > /dev/null
  "$burst" plan --model "$model" --device v100 --devices 2 --global-batch "$batch" -o "$work/$name.v100.json" > /dev/null
  seen=()
  for kind in dp burst v100; do
    plan="$work/$name.$kind.json"
    layout=$("$python" -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["layers"], sort_keys=True))' "$plan" | md5sum)
    if [[ " ${seen[*]-} " == *" $layout "* ]]; then
      echo "  $name: the $kind plan equals one already run; skipped" >&2
      continue
    fi
    seen+=("$layout")
    echo "  training $name with the $kind plan" >&2
    "$burst" train --model "$model" --plan "$plan" --nproc 2 --steps "$steps" --log-every 1 --seed 1 \
      > "$work/$name.$kind.log" 2>&1
    measured=$(measured_ms "$work/$name.$kind.log")
    plain=$(simulated_ms "$model" "$profile" "$plan" 0 --cluster "$work/cluster.json" "${co[@]}")
    calibrated=$(simulated_ms "$model" "$profile" "$plan" "$overhead" --cluster "$work/cluster.json" "${co[@]}")
    printf '%-15s %-6s %9.2f %9.2f %8s %12.2f %8s\n' "$name" "$kind" "$measured" "$plain" "$(error "$measured" "$plain")" \
      "$calibrated" "$(error "$measured" "$calibrated")" >> "$work/table"
  done
done
echo "Times in ms per iteration. 'one' rows: the calibration (two one-process runs side by side; the"
echo "last column: the per-call cost found). Other rows: 2 workers; 'calibrated' adds that cost to"
echo "every layer call."
echo
cat "$work/table"
summary() {  # COLUMN LABEL
  awk -v c="$1" 'NR > 1 && $2 != "one" { e = $c; sub("%", "", e); e = e + 0; print (e < 0 ? -e : e) }' "$work/table" | sort -g |
    awk -v label="$2" '{ v[NR] = $1 } END { printf "%d configurations on 2 workers, %s: median |error| %.1f%%, worst %.1f%%\n",
         NR, label, (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[NR] }'
}
echo
summary 5 "uncalibrated"
summary 7 "calibrated"
