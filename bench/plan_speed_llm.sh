#!/usr/bin/env bash
# Planner speed on Megatron-LM's GPT sizes (SC'21 Table 1: 1.7B on 32 A100-80GB to 1T on
# 3,072), each at its published GPU count and global batch, on a cluster file of 8 GPUs a
# node (NVLink 300 GB/s, 200 Gb/s a GPU between nodes), mixed precision (fp16), Adam: `burst
# plan --strategy S` as a user runs it, one core (taskset -c 0), a cold process each time.
# Then today's decoders from their configs (below). Prints per size and strategy the median and range of REPEATS runs' wall-clock seconds,
# the strategy chosen, its predicted iteration time, and whether it ended in "no plan fits".
#
# usage: bench/plan_speed_llm.sh [BURST (build/release/apps/burst/burst)] [REPEATS (3)] [STRATEGIES ("auto 3d")]
set -euo pipefail
burst=${1:-build/release/apps/burst/burst}
repeats=${2:-3}
strategies=${3:-auto 3d}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cluster() {  # GPUS: the cluster file's path
  local file="$work/a100-80gb-$1.json"
  cat > "$file" <<JSON
{"format": "burst.cluster", "version": 1, "name": "a100-80gb-x$1", "device": "a100-80gb", "nodes": $(( $1 / 8 )),
 "devices_per_node": 8, "devices": $1, "intra_node": {"bandwidth_gbyte_s": 300, "latency_us": 5},
 "inter_node": {"bandwidth_gbit_s": 200, "latency_us": 10}}
JSON
  echo "$file"
}

rows=(  # name | layers,width,heads | GPUs | global batch
  "1.7B|24,2304,24|32|512" "3.6B|30,3072,32|64|512" "7.5B|36,4096,32|128|512" "18.4B|40,6144,48|256|1024"
  "39.1B|48,8192,64|512|1536" "76.1B|60,10240,80|1024|1792" "145.6B|80,12288,96|1536|2304"
  "310.1B|96,16384,128|1920|2160" "529.6B|105,20480,128|2520|2520" "1T|128,25600,160|3072|3072"
)
# One size: `burst plan` REPEATS times with MODEL and CLUSTER_ARGS (a word list), one table row
# per strategy.
time_row() {  # NAME GPUS BATCH PRECISION MODEL CLUSTER_ARGS...
  local name=$1 gpus=$2 batch=$3 precision=$4 model=$5
  shift 5
  for strategy in $strategies; do
    times=()
    for _ in $(seq "$repeats"); do
      start=$(date +%s.%N)
      status=0
      taskset -c 0 "$burst" plan --model "$model" "$@" --global-batch "$batch" --strategy "$strategy" \
        --precision "$precision" --optimizer adam --json > "$work/out.json" 2> "$work/err.txt" || status=$?
      times+=("$(python3 -c 'import sys; print(float(sys.argv[2]) - float(sys.argv[1]))' "$start" "$(date +%s.%N)")")
    done
    summary=$(python3 -c 'import statistics, sys; t = sorted(map(float, sys.argv[1:])); print("%.1f (%.1f-%.1f)" % (statistics.median(t), t[0], t[-1]))' "${times[@]}")
    if [ "$status" -eq 0 ]; then
      read -r chosen predicted < <(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["strategy"], "%.2f" % (d["iteration_time_ms"] / 1e3))' "$work/out.json")
    else
      chosen="refused: $(head -c 160 "$work/err.txt" | tr '\n' ' ')"
      predicted="-"
    fi
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$gpus" "$batch" "$strategy" "$summary" "$chosen" "$predicted"
  done
}

printf '| model | GPUs | batch | strategy | planner s, median (range) | chosen | predicted s |\n|---|---|---|---|---|---|---|\n'
for row in "${rows[@]}"; do
  IFS='|' read -r name shape gpus batch <<< "$row"
  IFS=',' read -r layers width heads <<< "$shape"
  time_row "GPT $name" "$gpus" "$batch" fp16 "gpt2:layers=$layers,width=$width,heads=$heads,seq=2048,vocab=51200,positions=2048" \
    --cluster "$(cluster "$gpus")"
done

# Today's models from their Hugging Face configs (data/hf-configs) on the built-in H100
# cluster, bf16, 8,192 tokens: the sizes docs/llm.md names, 8 GPUs to 16,384.
configs=$(dirname "$0")/../data/hf-configs
llm_rows=(  # name | config | GPUs | global batch
  "Llama 3.1 8B|llama-3.1-8b|8|16" "Llama 3.1 70B|llama-3.1-70b|256|512" "Llama 3.1 405B|llama-3.1-405b|512|256"
  "Llama 3.1 405B|llama-3.1-405b|16384|2048" "Mixtral 8x7B|mixtral-8x7b|64|256" "DeepSeek-V3|deepseek-v3|2048|4096"
)
for row in "${llm_rows[@]}"; do
  IFS='|' read -r name config gpus batch <<< "$row"
  time_row "$name" "$gpus" "$batch" bf16 "hf:$configs/$config.json" --device h100-sxm --devices "$gpus"
done
