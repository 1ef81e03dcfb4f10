#!/usr/bin/env bash
# Speed of `burst cluster-sim` (docs/cluster-sim.md, "Speed"): wall time and peak memory of
# a 160-job Pollux workload (Tiresias; measured tables, then burst's own job model, whose
# time is mostly planning the job shapes) and of the whole Philly trace (82,247 jobs) on 2048
# GPUs under Tiresias and under burst (both job models). The first run three times.
# Usage: bench/cluster_speed.sh [path/to/burst]
set -euo pipefail
burst=${1:-build/release/apps/burst/burst}
data=data/pollux-traces

measure() {  # LABEL ARGS...: prints "LABEL: S s, M MB" (wall time, peak resident memory)
  local label=$1
  shift
  local log
  log=$(mktemp)
  /usr/bin/time -f "%e %M" -o "$log" "$burst" "$@" > /dev/null 2>&1
  read -r seconds kilobytes < "$log"
  rm -f "$log"
  echo "$label: $seconds s, $((kilobytes / 1024)) MB"
}

for _ in 1 2 3; do
  measure "workload-1, tiresias, measured tables" cluster-sim --trace "$data/workloads/workload-1.csv" \
    --applications "$data/applications" --policy tiresias
done
measure "workload-1, tiresias, burst's job model" cluster-sim --trace "$data/workloads/workload-1.csv" --policy tiresias
for model in measured burst; do
  label="measured tables"
  [ "$model" = burst ] && label="burst's job model"
  for policy in tiresias burst; do
    measure "philly (82247 jobs) on 2048 GPUs, $policy, $label" cluster-sim --trace "$data/philly.csv" \
      --devices 2048 --gpus-per-node 8 --policy "$policy" --job-model "$model"
  done
done
