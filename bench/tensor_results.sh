#!/usr/bin/env bash
# Tensor splits against sample splits on built-in A100 clusters (8 GPUs a node, NVLink
# inside, 200 Gb/s between nodes; TF32 peak 156 TFLOP/s): for each case, `burst plan --json`
# with --strategy dp, burst (sample splits per layer) and tensor (Megatron-style splits,
# docs/tensor-parallel.md). Prints one row per case: each strategy's predicted iteration
# time and model FLOPs utilisation, the tensor plan's shape (parts x sample groups), and the
# tensor plan's speedup over the better of the other two. Memory is checked with SGD.
#
# usage: bench/tensor_results.sh [BURST]   (default build/release/apps/burst/burst)
set -euo pipefail
burst=${1:-build/release/apps/burst/burst}
cases=()
for model in gpt2 "gpt2:layers=24,width=1024,heads=16"; do
  for batch in 8 32; do
    for devices in 8 32 64 256; do cases+=("$model|$devices|$batch"); done
  done
done
for devices in 64 128 256; do cases+=("vit_b_16|$devices|32"); done
printf '| model | devices | batch | dp ms (MFU) | burst ms (MFU) | tensor ms (MFU) | tensor plan | tensor vs best other |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for entry in "${cases[@]}"; do
  IFS='|' read -r model devices batch <<< "$entry"
  for strategy in dp burst tensor; do
    "$burst" plan --model "$model" --device a100 --devices "$devices" --global-batch "$batch" \
      --strategy "$strategy" --json
  done | python3 -c '
import json, sys
model, devices, batch = sys.argv[1:4]
text = sys.stdin.read()
decoder, reports, at = json.JSONDecoder(), [], 0
while at < len(text):
    while at < len(text) and text[at].isspace():
        at += 1
    if at == len(text):
        break
    report, at = decoder.raw_decode(text, at)
    reports.append(report)
dp, burst, tensor = reports
def cell(r):
    return "%.3f (%.1f%%)" % (r["iteration_time_ms"], 100 * r["mfu"])
shape = "-"
parts = [l["split"]["parts"] for l in tensor["layers"] if l["split"] and l["split"]["kind"] != "replicate"]
if tensor["strategy"] == "tensor" and parts:
    k = max(parts)
    groups = max(l["devices"] for l in tensor["layers"] if l["split"]) // k
    shape = "%d parts x %d groups" % (k, groups)
else:
    shape = "none splits (data parallel)"
best_other = min(dp["iteration_time_ms"], burst["iteration_time_ms"])
print("| %s | %s | %s | %s | %s | %s | %s | %.2fx |" % (model, devices, batch, cell(dp), cell(burst), cell(tensor),
      shape, best_other / tensor["iteration_time_ms"]))
' "$model" "$devices" "$batch"
done
