#!/usr/bin/env bash
# The planners side by side on built-in A100 clusters (8 GPUs a node, 200 Gb/s between
# nodes): `burst plan --strategy auto --json` for each case, which plans data parallelism,
# the burst plan, the pipeline plan and the hybrid (burst placements inside pipeline
# stages), evaluates each that fits memory, and keeps the fastest. Prints one row per case: each strategy's predicted iteration time (or why it
# has none), the speedup of auto's choice over data parallelism (- where that does not fit),
# the pipeline plan's shape (stages, micro-batches of so many samples, schedule),
# and what auto chose.
#
# usage: bench/pipeline_results.sh [BURST]   (default build/release/apps/burst/burst)
set -euo pipefail
burst=${1:-build/release/apps/burst/burst}
cases=(
  # model | device | devices | global batch | optimizer
  "gpt2:layers=48,width=1600,heads=25|a100-80gb|64|512|adam"
  "gpt2:layers=48,width=1600,heads=25|a100-80gb|256|512|adam"
)
for model in vgg16 wide_resnet101_2; do
  for batch in 32 256; do
    for devices in 8 64 256; do cases+=("$model|a100|$devices|$batch|sgd"); done
  done
done
printf '| model | devices | batch | optimizer | dp ms | burst ms | pipeline ms | pipeline plan | hybrid ms | auto picks | auto vs dp |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
for entry in "${cases[@]}"; do
  IFS='|' read -r model device devices batch optimizer <<< "$entry"
  "$burst" plan --model "$model" --device "$device" --devices "$devices" --global-batch "$batch" \
    --optimizer "$optimizer" --strategy auto --json |
    python3 -c '
import json, sys
d = json.load(sys.stdin)
model, devices, batch, optimizer = sys.argv[1:5]
times = {t["strategy"]: t for t in d["strategies_tried"]}
def cell(name):
    t = times[name]
    return "%.3f" % t["iteration_time_ms"] if t["iteration_time_ms"] is not None else "does not fit"
shape = times["pipeline"]["pipeline"] or "-"
shape = shape.split(" (from")[0] + shape[shape.find("),") + 1:] if " (from" in shape else shape
versus_dp = "-" if times["dp"]["iteration_time_ms"] is None else "%.2fx" % (d["data_parallel_ms"] / d["iteration_time_ms"])
print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
    model.split(":")[0] + ("-xl" if "1600" in model else ""), devices, batch, optimizer, cell("dp"), cell("burst"),
    cell("pipeline"), shape, cell("hybrid"), d["strategy"], versus_dp))
' "$model" "$devices" "$batch" "$optimizer"
done
