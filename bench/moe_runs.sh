#!/usr/bin/env bash
# burst's predictions against published mixture-of-experts runs: Megatron-Core's Mixtral
# 8x7B (megatron/core/transformer/moe/README.md of Megatron-LM, MCore v0.8: "438 TFLOPS",
# bf16, dropless, all-to-all dispatcher; its "Reference Best Parallel Mapping": 64 H100 80GB
# HBM3, 8 a node with NVLink 4 and 8 x 400 Gb/s InfiniBand, sequence 4096, TP 1, EP 8, PP 4,
# VP 8, micro-batch 1, global batch 256, the distributed optimizer). Each row is planned with
# its configuration pinned (ZeRO 1 for the distributed optimizer, no recomputation) and as
# burst's own plan (`--strategy auto`, in the GPUs' 80 GB). Prints model TFLOP/s per GPU
# measured and predicted (burst counts 6 x active parameters + attention a token; the
# source's formula is Megatron's, which is close for this model) and their ratio.
#
# usage: bench/moe_runs.sh [BURST (build/release/apps/burst/burst)]
set -euo pipefail
burst=${1:-build/release/apps/burst/burst}
configs=$(cd "$(dirname "$0")/../data/hf-configs" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cluster() {  # GPUS
  local file="$work/h100-$1.json"
  cat > "$file" <<JSON
{"format": "burst.cluster", "version": 1, "name": "h100-x$1", "device": "h100-sxm", "nodes": $(( ($1 + 7) / 8 )),
 "devices_per_node": 8, "devices": $1, "intra_node": {"bandwidth_gbyte_s": 450, "latency_us": 5},
 "inter_node": {"bandwidth_gbit_s": 400, "latency_us": 10}}
JSON
  echo "$file"
}

rows=(  # name | config | GPUs | seq | global batch | TP | EP | PP | VP | MBS | measured model TFLOP/s per GPU
  "Megatron-Core Mixtral 8x7B|mixtral-8x7b|64|4096|256|1|8|4|8|1|438"
)
printf '| run | plan | predicted TFLOP/s | measured | ratio | predicted GB | parallelism |\n|---|---|---|---|---|---|---|\n'
for row in "${rows[@]}"; do
  IFS='|' read -r name config gpus seq batch tp ep pp vp mbs measured <<< "$row"
  common=(plan --model "hf:$configs/$config.json" --seq "$seq" --cluster "$(cluster "$gpus")" --global-batch "$batch"
          --precision bf16 --optimizer adam --json)
  pinned=(--strategy 3d --tensor-parallel "$tp" --expert-parallel "$ep" --pipeline-stages "$pp" --virtual-stages "$vp"
          --micro-batch-size "$mbs" --recompute none --zero 1 --device-memory 10000)
  for kind in pinned own; do
    args=("${pinned[@]}")
    [ "$kind" = own ] && args=(--strategy auto)
    if "$burst" "${common[@]}" "${args[@]}" > "$work/out.json" 2> "$work/err.txt"; then
      python3 - "$name ($kind)" "$measured" "$work/out.json" <<'PY'
import json, sys
name, measured, path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
d = json.load(open(path))
p = d["parallelism"]
shape = "TP %d x PP %d%s x DP %d (EP %d), mbs %d, %s, %s, ZeRO %d" % (
    p["tensor"], p["pipeline"], " (V %d)" % p["virtual_stages"] if p["virtual_stages"] > 1 else "", p["data"],
    p["experts"], p["micro_batch"], p["schedule"], p["recompute"], p["zero"])
tflops = d["model_tflop_s_per_device"]
print("| %s | %s | %.0f | %.0f | %.2f | %.1f | %s |" % (name, d["strategy"], tflops, measured, tflops / measured,
                                                       d["memory"]["peak_bytes"] / 1e9, shape))
PY
    else
      printf '| %s (%s) | refused: %s | - | - | - | - | - |\n' "$name" "$kind" "$(head -c 200 "$work/err.txt" | tr '\n' ' ')"
    fi
  done
done
