#!/usr/bin/env bash
# burst's predictions against torchtitan's published H100 runs of Llama 3.1 (pytorch/
# torchtitan, benchmarks/llama3_h100_202412_torchtitan.md, Tables 1 to 6 but for the
# torch.compile-only and AsyncTP rows, which burst does not model). Their machines: 8 H100s a node with
# 96 GB HBM2e at 500 W, NVLink, 400 Gb/s RDMA a GPU. Each row runs twice: with its published
# configuration pinned (`--strategy 3d`, FSDP as ZeRO 3 sharded over all the data-parallel
# ranks: --fsdp-shard of their count, each sharding over its context-parallel ranks too as
# torchtitan's FSDP does, tensor parallelism with sequence parallelism, context parallelism
# at the published sequence length,
# AdamW's state as Adam's), and as burst's own choice (`--strategy auto`, nothing pinned but
# the precision). Prints tokens/s per GPU measured and predicted, their ratio, and peak memory
# measured (GiB) and predicted. The pinned runs are planned without a memory limit
# (--device-memory 10000), so that a row burst thinks does not fit still gets its time; the
# predicted memory says whether it fits the 96 GB.
#
# usage: [ROWS=REGEX] bench/torchtitan_runs.sh [BURST (build/release/apps/burst/burst)]
set -euo pipefail
burst=${1:-build/release/apps/burst/burst}
configs=$(cd "$(dirname "$0")/../data/hf-configs" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cluster() {  # GPUS: torchtitan's hosts as a cluster file
  local file="$work/h100-96gb-$1.json"
  cat > "$file" <<JSON
{"format": "burst.cluster", "version": 2, "name": "grand-teton-h100-x$1",
 "groups": [{"device": "h100-sxm", "nodes": $(( ($1 + 7) / 8 )), "devices_per_node": 8, "devices": $1,
             "memory_gib": 96, "power_cap_w": 500,
             "intra_node": {"bandwidth_gbyte_s": 450, "latency_us": 5},
             "inter_node": {"bandwidth_gbit_s": 400, "latency_us": 10}}]}
JSON
  echo "$file"
}

rows=(
  # table row | config | GPUs | global batch | TP | PP | micro-batch | precision | recompute | measured tok/s | GiB
  #   | CP | sequence length (Tables 2 and 6: local batch 1 and 8 a data-parallel rank)
  "T1 FSDP|llama-3.1-8b|8|16|1|1|2|bf16|selective|5762|82.4|1|8192"
  "T1 FSDP + compile + Float8|llama-3.1-8b|8|16|1|1|2|fp8|selective|8532|76.8|1|8192"
  "T2 FSDP 8, CP 1, 32K|llama-3.1-8b|8|8|1|1|1|fp8|full|3890|83.9|1|32768"
  "T2 FSDP 4, CP 2, 64K|llama-3.1-8b|8|4|1|1|1|fp8|full|2540|84.2|2|65536"
  "T2 FSDP 2, CP 4, 128K|llama-3.1-8b|8|2|1|1|1|fp8|full|1071|84.0|4|131072"
  "T2 FSDP 1, CP 8, 256K|llama-3.1-8b|8|1|1|1|1|fp8|full|548|84.5|8|262144"
  "T3 FSDP|llama-3.1-8b|128|256|1|1|2|bf16|selective|5605|67.0|1|8192"
  "T3 FSDP + compile + Float8|llama-3.1-8b|128|256|1|1|2|fp8|selective|8380|61.8|1|8192"
  "T4 FSDP 32, TP 8, Float8|llama-3.1-70b|256|512|8|1|16|fp8|full|829|71.9|1|8192"
  "T5 FSDP 8, TP 8, PP 8, 1F1B, Float8|llama-3.1-405b|512|256|8|8|1|fp8|full|100|82.5|1|8192"
  "T6 FSDP 8, TP 8, PP 8, CP 1, 32K|llama-3.1-405b|512|64|8|8|1|fp8|full|76|75.3|1|32768"
  "T6 FSDP 4, TP 8, PP 8, CP 2, 64K|llama-3.1-405b|512|32|8|8|1|fp8|full|47|75.9|2|65536"
  "T6 FSDP 2, TP 8, PP 8, CP 4, 128K|llama-3.1-405b|512|16|8|8|1|fp8|full|31|77.1|4|131072"
  "T6 FSDP 1, TP 8, PP 8, CP 8, 256K|llama-3.1-405b|512|8|8|8|1|fp8|full|16|84.9|8|262144"
)

summary() {  # JSON MEASURED_TPS MEASURED_GIB
  python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
tps, gib = float(sys.argv[2]), float(sys.argv[3])
p = d["tokens_per_s_per_device"]
mem = d["memory"]["peak_bytes"] / 2**30
pipe = d.get("pipeline") or {}
print("%s | %.0f | %.2f | %.1f | %.2f" % (d["strategy"], p, p / tps, mem, mem / gib))
PY
}

printf '| row | measured tok/s | plan | predicted tok/s | ratio | predicted GiB (measured) | memory ratio |\n|---|---|---|---|---|---|---|\n'
names=()
for row in "${rows[@]}"; do
  IFS='|' read -r name config gpus batch tp pp mbs precision recompute tps gib cp seq <<< "$row"
  [ -n "${ROWS:-}" ] && ! grep -qE "$ROWS" <<< "$name" && continue
  file=$(cluster "$gpus")
  common=(plan --model "hf:$configs/$config.json" --seq "$seq" --cluster "$file" --global-batch "$batch"
          --precision "$precision" --optimizer adam --json)
  # torchtitan's tensor parallelism is sequence parallel (its norms take SequenceParallel).
  sequence=--no-sequence-parallel
  [ "$tp" -gt 1 ] && sequence=--sequence-parallel
  pinned=(--strategy 3d --tensor-parallel "$tp" "$sequence" --context-parallel "$cp" --pipeline-stages "$pp"
          --micro-batch-size "$mbs" --zero 3 --fsdp-shard "$((gpus / tp / pp / cp))" --recompute "$recompute"
          --schedule 1f1b --device-memory 10000)
  for kind in pinned own; do
    args=("${pinned[@]}")
    [ "$kind" = own ] && args=(--strategy auto)
    if "$burst" "${common[@]}" "${args[@]}" > "$work/out.json" 2> "$work/err.txt"; then
      cp "$work/out.json" "$work/$(printf '%02d' "${#names[@]}")-$kind.json"
      IFS='|' read -r strategy predicted ratio mem mem_ratio < <(summary "$work/out.json" "$tps" "$gib")
      printf '| %s (%s) | %s | %s | %s | %s | %s (%s) | %s |\n' "$name" "$kind" "$tps" "$strategy" "$predicted" "$ratio" \
        "$mem" "$gib" "$mem_ratio"
    else
      printf '| %s (%s) | %s | refused: %s | - | - | - | - |\n' "$name" "$kind" "$tps" "$(head -c 200 "$work/err.txt" | tr '\n' ' ')"
    fi
  done
  names+=("$name")
done

# burst's own plan against the published configuration, row by row: the gain it claims
# (pinned time / own time), its shape, and each term of the difference (pinned - own, ms of
# the step; planner::StepTerms: compute, recompute, bubble, exposed communication), with
# the dimensions of the own plan no checked published run covers.
printf '\n| row | own plan | claimed gain | compute | recompute | bubble | communication | unchecked |\n|---|---|---|---|---|---|---|---|\n'
for i in "${!names[@]}"; do
  python3 "$(dirname "$0")/own_plan_gain.py" "${names[$i]}" "$work/$(printf '%02d' "$i")-pinned.json" "$work/$(printf '%02d' "$i")-own.json"
done
