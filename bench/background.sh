#!/usr/bin/env bash
# Background jobs in the real runtime, on this machine: how much a background job slows
# the foreground, and how much of the idle time it turns into work.
#
# usage: bench/background.sh [BURST (build/release/apps/burst/burst)] [PYTHON_WITH_TORCH (.venv/bin/python)]
#
# Foreground: tests/runtime's resnet_like at global batch 16 on 2 workers (strong scaling),
# with the burst plan made from a profile and a link measured here first
# (bench/measure_cpu_links.py), 40 steps; each run's figures are medians over steps 11-40,
# and each configuration runs 3 times, interleaved with the others (the median is shown:
# this machine's step times drift by tens of percent between minutes).
# Backgrounds: the same model at 8 per device, and fmnist_cnn at 16.
#  - slowdown: foreground ms/iteration with the job / without;
#  - background samples/s: all workers' jobs together (burst train's "bg" figure);
#  - alone: `burst background` on an otherwise idle machine, one process (one core);
#  - idle: what the foreground alone leaves, sum over ranks of (1 - compute / step), in
#    cores; "possible" = alone x idle; efficiency = background / possible;
#  - the simulator's prediction for the same plan, profile and link (`burst sim
#    --background`, both policies).
set -euo pipefail
burst=${1:-build/release/apps/burst/burst}
python=${2:-$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model="$root/tests/runtime/resnet_like.json"
common=(--model "$model" --global-batch 16 --seed 7 --steps 40 --nproc 2 --log-every 1)

echo "measuring the links and the model" >&2
"$python" "$root/bench/measure_cpu_links.py" "$work/cluster.json" 2 > "$work/links.out"
head -n 1 "$work/links.out" | sed 's/^/  /' >&2
"$burst" profile --model "$model" --batch-sizes 1 2 4 8 16 -o "$work/profile.json" > /dev/null 2>&1
"$burst" plan --model "$model" --profile "$work/profile.json" --cluster "$work/cluster.json" --global-batch 16 \
  -o "$work/plan.json" > /dev/null

# Median figures of steps 11-40 of a train log: ms/iteration, background samples/s, idle cores.
figures() {
  "$python" - "$1" <<'PY'
import re, statistics, sys
ms, bg, idle = [], [], []
for line in open(sys.argv[1]):
    words = line.split()
    if not words or words[0] != "step" or int(words[1]) <= 10:
        continue
    ms.append(float(words[words.index("ms/iter") - 1]))
    m = re.search(r"bg ([0-9.]+) samples/s", line)
    bg.append(float(m.group(1)) if m else 0.0)
    ranks = re.findall(r"r\d+ ([0-9.]+)/([0-9.]+)/([0-9.]+)", line)
    idle.append(sum(1 - float(c) / ms[-1] for c, _, _ in ranks))
print(f"{statistics.median(ms):.2f} {statistics.median(bg):.1f} {statistics.median(idle):.3f}")
PY
}

backgrounds=("resnet_like:8" "fmnist_cnn:16")
spec_of() { [ "${1%%:*}" = resnet_like ] && echo "$model" || echo "${1%%:*}"; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
declare -A ms_runs bg_runs
idle_runs=""
for repetition in 1 2 3; do
  echo "repetition $repetition" >&2
  "$burst" train "${common[@]}" --plan "$work/plan.json" > "$work/alone.log" 2>&1
  read -r ms _ idle <<< "$(figures "$work/alone.log")"
  ms_runs[none]+="$ms "
  idle_runs+="$idle "
  for background in "${backgrounds[@]}"; do
    "$burst" train "${common[@]}" --plan "$work/plan.json" \
      --background "$(spec_of "$background"):${background##*:}" > "$work/bg.log" 2>&1
    read -r ms bg _ <<< "$(figures "$work/bg.log")"
    ms_runs[$background]+="$ms "
    bg_runs[$background]+="$bg "
  done
done
alone_ms=$(echo "${ms_runs[none]}" | median)
idle=$(echo "$idle_runs" | median)
echo "foreground alone, ms per step in the 3 runs: ${ms_runs[none]}" >&2
printf '%-22s %9s %9s %9s %11s %10s %7s %9s %11s %11s\n' background fg_ms slowdown bg_s/s alone_s/s possible effic \
  sim_slow "sim_fit s/s" "sim_greedy"
printf '%-22s %9.2f %9s %9s %11s %10s\n' "(none)" "$alone_ms" "" "" "" "idle $idle"
for background in "${backgrounds[@]}"; do
  spec=$(spec_of "$background")
  batch=${background##*:}
  with_ms=$(echo "${ms_runs[$background]}" | median)
  bg=$(echo "${bg_runs[$background]}" | median)
  echo "$background: foreground ms ${ms_runs[$background]}; background samples/s ${bg_runs[$background]}" >&2
  alone_rate=$("$burst" background --model "$spec" --batch "$batch" --steps 100 | grep -oE "[0-9.]+ samples/s" | cut -d' ' -f1)
  sim() {
    "$burst" sim --model "$model" --profile "$work/profile.json" --cluster "$work/cluster.json" --plan "$work/plan.json" \
      --background "$spec:$batch" --background-policy "$1" --json |
      "$python" -c 'import json,sys; d=json.load(sys.stdin); print(d["foreground_slowdown"], d["background_samples_per_s"])'
  }
  read -r sim_slow sim_fit <<< "$(sim fit)"
  read -r _ sim_greedy <<< "$(sim greedy)"
  awk -v n="$background" -v a="$alone_ms" -v w="$with_ms" -v b="$bg" -v r="$alone_rate" -v i="$idle" \
      -v ss="$sim_slow" -v sf="$sim_fit" -v sg="$sim_greedy" 'BEGIN {
    printf "%-22s %9.2f %9.3f %9.1f %11.1f %10.1f %6.0f%% %9.3f %11.1f %11.1f\n", n, w, w / a, b, r, r * i,
           100 * b / (r * i), ss, sf, sg }'
done
echo
echo "fg_ms: foreground ms/iteration; bg_s/s: both workers' background samples/s; alone_s/s: the job"
echo "alone on one core; possible: alone x the idle cores the foreground leaves; effic: bg / possible;"
echo "sim_*: burst sim's slowdown and background samples/s for the same plan, profile and link."
