#!/usr/bin/env bash
# The energy results table of docs/energy.md: for each row, the plan at full clocks, the
# same plan with per-group clocks for the least energy within 1% of its time
# (--objective energy --max-slowdown 0.01), the frontier's two ends (--pareto), and the
# planning time with and without the energy objective (whole `burst plan`, median of 3).
# Usage: bench/energy_results.sh [path/to/burst]
set -euo pipefail
burst=${1:-build/release/apps/burst/burst}

rows=(
  "gpt2-xl 1f1b pipeline|--model gpt2:layers=48,width=1600,heads=25 --global-batch 512 --devices 64 --device a100-80gb --strategy 3d --pipeline-stages 8 --tensor-parallel 1 --schedule 1f1b"
  "vgg16 burst|--model vgg16 --global-batch 32 --devices 32 --device a100 --strategy burst"
  "resnet50 data parallel|--model resnet50 --global-batch 256 --devices 64 --device a100 --strategy dp"
)

median_seconds() {  # median wall time of 3 runs of the command line
  local times=()
  for _ in 1 2 3; do
    local start end
    start=$(date +%s.%N)
    "$@" > /dev/null 2>&1
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc)")
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n 2p
}

printf '| row | full clocks: ms, J | energy objective (<= 1%% slower): ms, J, saved | frontier ends: fastest / least energy (ms, J) | plan s: time / energy objective |\n'
printf '|---|---|---|---|---|\n'
for row in "${rows[@]}"; do
  name=${row%%|*}
  args=${row#*|}
  # shellcheck disable=SC2086
  json=$("$burst" plan $args --objective energy --max-slowdown 0.01 --pareto --json 2>/dev/null)
  summary=$(python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
o, f = d["objective"], d["frontier"]
saved = 100 * (1 - o["energy_j"] / o["full_clock_energy_j"])
print("%.3f, %.1f | %.3f, %.1f, %.1f%% | %.3f, %.1f / %.3f, %.1f (%.1f%% less, %.1f%% slower)" % (
  o["full_clock_time_s"] * 1e3, o["full_clock_energy_j"], o["time_s"] * 1e3, o["energy_j"], saved,
  f[0]["time_s"] * 1e3, f[0]["energy_j"], f[-1]["time_s"] * 1e3, f[-1]["energy_j"],
  100 * (1 - f[-1]["energy_j"] / f[0]["energy_j"]), 100 * (f[-1]["time_s"] / f[0]["time_s"] - 1)))
' <<< "$json")
  # shellcheck disable=SC2086
  plain=$(median_seconds "$burst" plan $args)
  # shellcheck disable=SC2086
  energy=$(median_seconds "$burst" plan $args --objective energy)
  printf '| %s | %s | %.2f / %.2f |\n' "$name" "$summary" "$plain" "$energy"
done
