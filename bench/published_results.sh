#!/usr/bin/env bash
# burst's predictions against published measurements of large training runs
# (docs/published-runs.md has every row's configuration and source). Each row is planned
# with its published configuration pinned: `burst plan --strategy 3d` with the run's tensor-
# parallel size, pipeline stages, micro-batch size, precision, recomputation and ZeRO stage,
# on a cluster file of its shape (8 GPUs a node; the links per GPU are stated per row).
# Prints one row per run: measured and predicted seconds per iteration, their ratio, and how
# long the planner took. Interleaved rows pin --virtual-stages V, the others 1F1B; the "sel+SP"
# rows pin selective recomputation with sequence parallelism, the others none. Rows whose
# evaluation does not finish within the timeout are printed as such, not left out. Rows are
# planned without a memory limit (--device-memory 10000) so that each gets its time; the
# predicted peak per GPU (GB) says whether burst thinks it fits the 80 GB. Then each row
# again as burst's own plan (`--strategy 3d`, only the precision and the optimizer given, in
# the GPUs' 80 GB): the gain it claims over the published configuration and each term of the
# difference (planner::StepTerms), with what of it no checked run covers. OWN=0 skips them.
#
# usage: bench/published_results.sh [BURST] [TIMEOUT_S] [ROWS]   (default build/release/apps/burst/burst, 600, all)
set -euo pipefail
burst=${1:-build/release/apps/burst/burst}
limit=${2:-600}
only=${3:-}
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
  # name | layers,width,heads,vocab | kind | GPUs | inter Gb/s per GPU | batch | TP | PP | V | MBS | precision | recompute | SP | ZeRO | measured s | source
  "Megatron 1.7B|24,2304,24,51200|a100-80gb|32|200|512|1|1|1|16|fp16|full|no|0|3.53|SC'21 Table 1 (137 TFLOP/s)"
  "Megatron 3.6B|30,3072,32,51200|a100-80gb|64|200|512|2|1|1|16|fp16|full|no|0|3.70|SC'21 Table 1 (138 TFLOP/s)"
  "Megatron 7.5B|36,4096,32,51200|a100-80gb|128|200|512|4|1|1|16|fp16|full|no|0|3.70|SC'21 Table 1 (142 TFLOP/s)"
  "Megatron 18.4B|40,6144,48,51200|a100-80gb|256|200|1024|8|1|1|8|fp16|full|no|0|9.40|SC'21 Table 1 (135 TFLOP/s)"
  "Megatron 39.1B|48,8192,64,51200|a100-80gb|512|200|1536|8|2|1|4|fp16|full|no|0|14.5|SC'21 Table 1 (138 TFLOP/s)"
  "Megatron 76.1B|60,10240,80,51200|a100-80gb|1024|200|1792|8|4|3|2|fp16|full|no|0|16.1|SC'21 Table 1 (140 TFLOP/s), interleaved"
  "Megatron 145.6B|80,12288,96,51200|a100-80gb|1536|200|2304|8|8|2|2|fp16|full|no|0|24.8|SC'21 Table 1 (148 TFLOP/s), interleaved"
  "Megatron 310.1B|96,16384,128,51200|a100-80gb|1920|200|2160|8|16|2|1|fp16|full|no|0|37.6|SC'21 Table 1 (155 TFLOP/s), interleaved"
  "Megatron 529.6B|105,20480,128,51200|a100-80gb|2520|200|2520|8|35|3|1|fp16|full|no|0|54.1|SC'21 Table 1 (163 TFLOP/s), interleaved"
  "Megatron 1T|128,25600,160,51200|a100-80gb|3072|200|3072|8|64|1|1|fp16|full|no|0|103|SC'21 Table 1 (163 TFLOP/s)"
  "Korthikanti 22B full|48,6144,64,51200|a100-80gb|8|200|4|8|1|1|4|fp16|full|no|0|1.42|Korthikanti et al. 2022, Table 5"
  "Korthikanti 22B sel+SP|48,6144,64,51200|a100-80gb|8|200|4|8|1|1|4|fp16|selective|yes|0|1.10|Korthikanti et al. 2022, Table 5"
  "Korthikanti 175B full|96,12288,96,51200|a100-80gb|64|200|64|8|8|3|1|fp16|full|no|0|18.13|Korthikanti et al. 2022, Table 5, interleaved"
  "Korthikanti 175B sel+SP|96,12288,96,51200|a100-80gb|64|200|64|8|8|3|1|fp16|selective|yes|0|13.75|Korthikanti et al. 2022, Table 5, interleaved"
  "Korthikanti 530B full|105,20480,128,51200|a100-80gb|280|200|280|8|35|3|1|fp16|full|no|0|49.05|Korthikanti et al. 2022, Table 5, interleaved"
  "Korthikanti 530B sel+SP|105,20480,128,51200|a100-80gb|280|200|280|8|35|3|1|fp16|selective|yes|0|37.83|Korthikanti et al. 2022, Table 5, interleaved"
  "Korthikanti 1T full|128,25600,160,51200|a100-80gb|512|200|512|8|64|1|1|fp16|full|no|0|94.42|Korthikanti et al. 2022, Table 5"
  "Korthikanti 1T sel+SP|128,25600,160,51200|a100-80gb|512|200|512|8|64|1|1|fp16|selective|yes|0|71.49|Korthikanti et al. 2022, Table 5"
  "GPT-NeoX-20B|44,6144,64,50432|a100|96|100|1536|2|4|1|4|fp16|full|no|1|43.8|Black et al. 2022 (117 TFLOP/s, gpt-neox 2022 formula)"
  "BLOOM-176B|70,14336,112,250880|a100-80gb|384|50|2048|4|12|1|2|fp16|full|no|1|104.70|BigScience tr11 log, iteration 85376"
)
# ROWS (optional): only the rows whose name contains it.
names=()
printf '| run | GPUs | TP x PP (V) x DP, MBS | measured s | burst s | burst / measured | burst peak GB | planner s | source |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for row in "${rows[@]}"; do
  IFS='|' read -r name shape kind gpus inter batch tp pp v mbs precision recompute sp zero measured source <<< "$row"
  [[ "$name" == *"$only"* ]] || continue
  IFS=',' read -r layers width heads vocab <<< "$shape"
  schedule=(--schedule 1f1b)
  [ "$v" -gt 1 ] && schedule=(--schedule interleaved --virtual-stages "$v")
  sequence=--no-sequence-parallel
  [ "$sp" = yes ] && sequence=--sequence-parallel
  file=$(cluster "$kind" "$gpus" "$inter")
  dp=$(( gpus / tp / pp ))
  start=$(date +%s.%N)
  if timeout "$limit" "$burst" plan --model "gpt2:layers=$layers,width=$width,heads=$heads,seq=2048,vocab=$vocab,positions=2048" \
             --cluster "$file" --global-batch "$batch" --strategy 3d --tensor-parallel "$tp" --pipeline-stages "$pp" \
             --micro-batch-size "$mbs" --precision "$precision" --recompute "$recompute" --zero "$zero" \
             "${schedule[@]}" "$sequence" --device-memory 10000 \
             --optimizer adam --json > "$work/out.json" 2> "$work/err.txt"; then
    cp "$work/out.json" "$work/pinned-${#names[@]}.json"
    seconds=$(python3 -c 'import json,sys; print("%.2f" % (json.load(open(sys.argv[1]))["iteration_time_ms"] / 1e3))' "$work/out.json")
    memory=$(python3 -c 'import json,sys; print("%.1f" % (json.load(open(sys.argv[1]))["memory"]["peak_bytes"] / 1e9))' "$work/out.json")
    ratio=$(python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$seconds" "$measured")
  else
    status=$?
    seconds=$([ "$status" -eq 124 ] && echo "not timed within ${limit} s" || echo "refused: $(sed 's/^burst: error: //' "$work/err.txt")")
    ratio="-"
    memory="-"
  fi
  took=$(python3 -c 'import sys; print("%.1f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$start" "$(date +%s.%N)")
  printf '| %s | %s | %s x %s (%s) x %s, %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$gpus" "$tp" "$pp" "$v" "$dp" \
    "$mbs" "$measured" "$seconds" "$ratio" "$memory" "$took" "$source"
  if [ "${OWN:-1}" != 0 ]; then
    timeout "$limit" "$burst" plan --model "gpt2:layers=$layers,width=$width,heads=$heads,seq=2048,vocab=$vocab,positions=2048" \
      --cluster "$file" --global-batch "$batch" --strategy 3d --precision "$precision" --optimizer adam --json \
      > "$work/own-${#names[@]}.json" 2> "$work/err.txt" || rm -f "$work/own-${#names[@]}.json"
  fi
  names+=("$name")
done

[ "${OWN:-1}" = 0 ] && exit 0
printf '\n| run | own plan | claimed gain | compute | recompute | bubble | communication | unchecked |\n|---|---|---|---|---|---|---|---|\n'
for i in "${!names[@]}"; do
  python3 "$(dirname "$0")/own_plan_gain.py" "${names[$i]}" "$work/pinned-$i.json" "$work/own-$i.json"
done
