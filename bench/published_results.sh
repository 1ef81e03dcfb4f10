#!/usr/bin/env bash
# burst's predictions against published measurements of large training runs
# (docs/published-runs.md has every row's configuration and source). Each row is planned
# with its published configuration pinned: `burst plan --strategy 3d` with the run's tensor-
# parallel size, pipeline stages, micro-batch size, precision, recomputation and ZeRO stage,
# on a cluster file of its shape (8 GPUs a node; the links per GPU are stated per row).
# Prints one row per run: measured and predicted seconds per iteration, their ratio, and how
# long the planner took. Rows whose schedule burst does not model (interleaved 1F1B) or whose
# evaluation does not finish within the timeout are printed as such, not left out.
#
# usage: bench/published_results.sh [BURST] [TIMEOUT_S]   (default build/release/apps/burst/burst, 600)
set -euo pipefail
burst=${1:-build/release/apps/burst/burst}
limit=${2:-600}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# cluster KIND GPUS INTER_GBIT: nodes of 8, NVLink 300 GB/s per direction, INTER_GBIT per GPU.
cluster() {
  local file="$work/$1-$2-$3.json"
  cat > "$file" <<JSON
{"format": "burst.cluster", "version": 1, "name": "$1-x$2", "device": "$1", "nodes": $(( ($2 + 7) / 8 )),
 "devices_per_node": 8, "devices": $2, "intra_node": {"bandwidth_gbyte_s": 300, "latency_us": 5},
 "inter_node": {"bandwidth_gbit_s": $3, "latency_us": 10}}
JSON
  echo "$file"
}

rows=(
  # name | layers,width,heads,vocab | kind | GPUs | inter Gb/s per GPU | batch | TP | PP | MBS | precision | recompute | ZeRO | measured s | source
  "Megatron 1.7B|24,2304,24,51200|a100-80gb|32|200|512|1|1|16|fp16|full|0|3.53|SC'21 Table 1 (137 TFLOP/s)"
  "Megatron 3.6B|30,3072,32,51200|a100-80gb|64|200|512|2|1|16|fp16|full|0|3.70|SC'21 Table 1 (138 TFLOP/s)"
  "Megatron 7.5B|36,4096,32,51200|a100-80gb|128|200|512|4|1|16|fp16|full|0|3.70|SC'21 Table 1 (142 TFLOP/s)"
  "Megatron 18.4B|40,6144,48,51200|a100-80gb|256|200|1024|8|1|8|fp16|full|0|9.40|SC'21 Table 1 (135 TFLOP/s)"
  "Megatron 39.1B|48,8192,64,51200|a100-80gb|512|200|1536|8|2|4|fp16|full|0|14.5|SC'21 Table 1 (138 TFLOP/s)"
  "Megatron 1T|128,25600,160,51200|a100-80gb|3072|200|3072|8|64|1|fp16|full|0|103|SC'21 Table 1 (163 TFLOP/s)"
  "Korthikanti 22B full|48,6144,64,51200|a100-80gb|8|200|4|8|1|4|fp16|full|0|1.42|Korthikanti et al. 2022, Table 5"
  "Korthikanti 1T full|128,25600,160,51200|a100-80gb|512|200|512|8|64|1|fp16|full|0|94.42|Korthikanti et al. 2022, Table 5"
  "GPT-NeoX-20B|44,6144,64,50432|a100|96|100|1536|2|4|4|fp16|full|1|43.8|Black et al. 2022 (117 TFLOP/s, gpt-neox 2022 formula)"
  "BLOOM-176B|70,14336,112,250880|a100-80gb|384|50|2048|4|12|2|bf16|full|1|104.70|BigScience tr11 log, iteration 85376"
)
printf '| run | GPUs | TP x PP x DP, MBS | measured s | burst s | burst / measured | planner s | source |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for row in "${rows[@]}"; do
  IFS='|' read -r name shape kind gpus inter batch tp pp mbs precision recompute zero measured source <<< "$row"
  IFS=',' read -r layers width heads vocab <<< "$shape"
  file=$(cluster "$kind" "$gpus" "$inter")
  dp=$(( gpus / tp / pp ))
  start=$(date +%s.%N)
  if timeout "$limit" "$burst" plan --model "gpt2:layers=$layers,width=$width,heads=$heads,seq=2048,vocab=$vocab,positions=2048" \
             --cluster "$file" --global-batch "$batch" --strategy 3d --tensor-parallel "$tp" --pipeline-stages "$pp" \
             --micro-batch-size "$mbs" --precision "$precision" --recompute "$recompute" --zero "$zero" \
             --optimizer adam --json > "$work/out.json" 2> "$work/err.txt"; then
    seconds=$(python3 -c 'import json,sys; print("%.2f" % (json.load(open(sys.argv[1]))["iteration_time_ms"] / 1e3))' "$work/out.json")
    ratio=$(python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$seconds" "$measured")
  else
    status=$?
    seconds=$([ "$status" -eq 124 ] && echo "not timed within ${limit} s" || echo "refused: $(sed 's/^burst: error: //' "$work/err.txt")")
    ratio="-"
  fi
  took=$(python3 -c 'import sys; print("%.1f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$start" "$(date +%s.%N)")
  printf '| %s | %s | %s x %s x %s, %s | %s | %s | %s | %s | %s |\n' "$name" "$gpus" "$tp" "$pp" "$dp" "$mbs" \
    "$measured" "$seconds" "$ratio" "$took" "$source"
done
