#!/usr/bin/env bash
# How long ONNX import and planning take on torchvision models exported here
# (docs/model-import.md): `burst model import` (graph and weights decoded, the JSON model
# written), `burst model show` (graph only) and `burst plan` on 8 and 64 A100s at global
# batch 32, each the median of 5 runs with the range.
#
# usage: bench/onnx_import.sh [BURST (build/release/apps/burst/burst)] [PYTHON_WITH_TORCHVISION (.venv/bin/python)] [MODEL...]
set -euo pipefail
burst=${1:-build/release/apps/burst/burst}
python=${2:-$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python}
shift $(( $# > 2 ? 2 : $# ))
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet50 vgg11_bn efficientnet_b0 googlenet vit_b_16)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
repeats=5

# median and range of `repeats` runs of a command, in seconds
timed() {
  local times=()
  for _ in $(seq "$repeats"); do
    local start end
    start=$(date +%s.%N)
    "$@" > /dev/null 2>&1
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc)")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{t[NR]=$1} END {printf "%6.3f s (%.3f-%.3f)", t[int((NR+1)/2)], t[1], t[NR]}'
}

echo "onnx_import: $repeats runs each, median (min-max); $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-18s %8s %28s %28s %28s %28s\n' model "MB" "model import" "model show" "plan, 8 A100s" "plan, 64 A100s"
for model in "${models[@]}"; do
  "$python" "$here/../tests/onnx/export_torchvision.py" "$work" "$model" 2> /dev/null
  onnx=$work/$model.onnx
  printf '%-18s %8.1f %28s %28s %28s %28s\n' "$model" "$(echo "$(stat -c %s "$onnx") / 1048576" | bc -l)" \
    "$(timed "$burst" model import "$onnx" -o "$work/m.json")" \
    "$(timed "$burst" model show "$onnx")" \
    "$(timed "$burst" plan --model "$onnx" --devices 8 --global-batch 32 --device a100)" \
    "$(timed "$burst" plan --model "$onnx" --devices 64 --global-batch 32 --device a100)"
  rm -f "$onnx"
done
