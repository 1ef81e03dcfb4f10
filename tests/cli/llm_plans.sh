#!/usr/bin/env bash
# Usage: llm_plans.sh BURST_BINARY CONFIG_DIR
#
# Today's decoders from their Hugging Face configs (CONFIG_DIR: data/hf-configs): each
# shipped config shows and plans, --seq sets the sequence length, --json carries the
# language-model throughput; and each bad input of docs/llm.md is one "burst: error: " line
# with exit code 2: an unknown model_type, a missing field, tensor parallelism that does not
# divide the kv heads, fp8 on an A100, HSDP without ZeRO 3 or with a shard that does not
# divide the group, sequence parallelism without a tensor group, over tokens it does not
# divide or on a strategy without tensor splits, virtual stages beyond what the layers can be
# cut into, under 1F1B, on the pipeline strategy or with micro-batches not in rounds of the
# stages, context parallelism over tokens it does not cut into two chunks a device or on a
# strategy without it, --seq on a model without a sequence.
set -u

# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
cli_setup "$0 BURST_BINARY CONFIG_DIR" 2 "$@"
configs=$2

for config in "$configs"/*.json; do
  name=$(basename "$config" .json)
  ok "show-$name" model show --model "hf:$config" || true
done
contains show-mixtral-8x7b "46,702,792,704 parameters"

ok plan8b plan --model "hf:$configs/llama-3.1-8b.json" --seq 4096 --device h100-sxm --devices 8 --global-batch 16 \
  --strategy 3d --zero 3 --precision bf16 --json || true
py_check "the 8B plan's JSON names tokens/s and model TFLOP/s per device" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["tokens_per_s_per_device"] > 0 and d["model_tflop_s_per_device"] > 0, d.keys()
assert d["layers"][0]["name"] == "input_ids"
' "$work/plan8b.out"
ok hsdp plan --model "hf:$configs/llama-3.1-8b.json" --device h100-sxm --devices 16 --global-batch 32 \
  --strategy 3d --tensor-parallel 1 --pipeline-stages 1 --fsdp-shard 8 --precision bf16 || true
contains hsdp "ZeRO 3"
ok fp8 plan --model "hf:$configs/qwen3-30b-a3b.json" --device h100-sxm --devices 8 --global-batch 16 \
  --strategy 3d --precision fp8 || true

printf '{"model_type": "mamba", "hidden_size": 8}\n' > "$work/mamba.json"
refused "unknown model_type" model show --model "hf:$work/mamba.json"
contains_error "unknown model_type 'mamba' (burst reads model_type llama, mistral"
printf '{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10}\n' \
  > "$work/no_ffn.json"
refused "missing field" model show --model "hf:$work/no_ffn.json"
contains_error "missing field 'intermediate_size'"
refused "no config" model show --model "hf:$work/absent.json"
refused "tp over kv heads" plan --model "hf:$configs/llama-3.1-8b.json" --device h100-sxm --devices 16 \
  --global-batch 16 --strategy 3d --tensor-parallel 16
contains_error "does not divide the 8 kv heads"
refused "fp8 on an a100" plan --model "hf:$configs/llama-3.1-8b.json" --device a100 --devices 8 --global-batch 16 \
  --precision fp8
contains_error "device 'a100' has no fp8 units"
refused "hsdp without zero 3" plan --model "hf:$configs/llama-3.1-8b.json" --device h100-sxm --devices 16 \
  --global-batch 16 --zero 2 --fsdp-shard 8
refused "hsdp shard not dividing" plan --model "hf:$configs/llama-3.1-8b.json" --device h100-sxm --devices 24 \
  --global-batch 24 --strategy 3d --tensor-parallel 1 --pipeline-stages 1 --fsdp-shard 16
ok sp plan --model "hf:$configs/llama-3.1-8b.json" --device h100-sxm --devices 16 --global-batch 16 \
  --strategy 3d --tensor-parallel 8 --sequence-parallel --pipeline-stages 1 --precision bf16 --json || true
py_check "the SP plan says so in its parallelism" '
import json, sys
d = json.load(open(sys.argv[1]))["parallelism"]
assert d["tensor"] == 8 and d["sequence_parallel"] and d["data"] == 2, d
' "$work/sp.out"
refused "sp without tp" plan --model "hf:$configs/llama-3.1-8b.json" --device h100-sxm --devices 8 \
  --global-batch 16 --strategy 3d --tensor-parallel 1 --sequence-parallel
contains_error "it needs --tensor-parallel 2 or more"
refused "sp not dividing the tokens" plan --model "hf:$configs/llama-3.1-8b.json" --seq 4097 --device h100-sxm \
  --devices 8 --global-batch 16 --strategy 3d --tensor-parallel 2 --sequence-parallel
contains_error "does not divide the 4097 tokens"
refused "sp on burst" plan --model "hf:$configs/llama-3.1-8b.json" --device h100-sxm --devices 8 \
  --global-batch 16 --strategy burst --sequence-parallel
ok interleaved plan --model "hf:$configs/llama-3.1-8b.json" --device h100-sxm --devices 32 --global-batch 32 \
  --strategy 3d --tensor-parallel 8 --pipeline-stages 4 --virtual-stages 2 --precision bf16 --json || true
py_check "the interleaved plan holds 2 chunks a rank on 4 stages" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["parallelism"]["pipeline"] == 4 and d["parallelism"]["virtual_stages"] == 2, d["parallelism"]
assert d["parallelism"]["schedule"] == "interleaved"
' "$work/interleaved.out"
refused "virtual stages beyond the layers" plan --model "hf:$configs/llama-3.1-8b.json" --device h100-sxm \
  --devices 32 --global-batch 32 --strategy 3d --tensor-parallel 8 --pipeline-stages 4 --virtual-stages 32
contains_error "the model can be cut into at most 69 stages, not 128"
refused "virtual stages under 1f1b" plan --model "hf:$configs/llama-3.1-8b.json" --device h100-sxm \
  --devices 32 --global-batch 32 --strategy 3d --pipeline-stages 4 --schedule 1f1b --virtual-stages 2
refused "interleaved on pipeline" plan --model "hf:$configs/llama-3.1-8b.json" --device h100-sxm \
  --devices 32 --global-batch 32 --strategy pipeline --schedule interleaved
refused "interleaved micro-batches" plan --model "hf:$configs/llama-3.1-8b.json" --device h100-sxm \
  --devices 32 --global-batch 30 --strategy 3d --tensor-parallel 8 --pipeline-stages 4 --micro-batch-size 1 \
  --virtual-stages 2
contains_error "runs micro-batches in rounds of the 4 stages"
ok cp plan --model "hf:$configs/llama-3.1-8b.json" --seq 131072 --device h100-sxm --devices 8 --global-batch 2 \
  --strategy 3d --tensor-parallel 1 --context-parallel 4 --pipeline-stages 1 --zero 3 --recompute full \
  --precision bf16 --json || true
py_check "the CP plan holds 4 context ranks a group, 2 groups sharding its state" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["parallelism"]["context"] == 4 and d["parallelism"]["data"] == 2, d["parallelism"]
' "$work/cp.out"
ok cp-auto plan --model "hf:$configs/llama-3.1-8b.json" --seq 131072 --device h100-sxm --devices 8 --global-batch 2 \
  --strategy auto --precision bf16 || true
contains cp-auto "x CP "
refused "cp not dividing the tokens" plan --model "hf:$configs/llama-3.1-8b.json" --seq 131076 --device h100-sxm \
  --devices 8 --global-batch 2 --strategy 3d --context-parallel 4
contains_error "--context-parallel 4 cuts each sample's 131076 tokens (--seq) into 8 chunks"
refused "cp on burst" plan --model "hf:$configs/llama-3.1-8b.json" --seq 32768 --device h100-sxm --devices 8 \
  --global-batch 8 --strategy burst --context-parallel 2
contains_error "--strategy burst does not split a sample's tokens"
ok zb plan --model "hf:$configs/llama-3.1-8b.json" --device h100-sxm --devices 32 --global-batch 32 \
  --strategy 3d --tensor-parallel 8 --pipeline-stages 4 --schedule zb-h1 --precision bf16 --json || true
py_check "the ZB-H1 plan names its schedule" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["parallelism"]["schedule"] == "zb-h1" and d["parallelism"]["pipeline"] == 4, d["parallelism"]
' "$work/zb.out"
refused "zb-h1 on pipeline" plan --model "hf:$configs/llama-3.1-8b.json" --device h100-sxm --devices 32 \
  --global-batch 32 --strategy pipeline --schedule zb-h1
contains_error "--strategy pipeline does not split its backwards"
ok ep plan --model "hf:$configs/mixtral-8x7b.json" --seq 4096 --device h100-sxm --devices 64 --global-batch 256 \
  --strategy 3d --tensor-parallel 1 --pipeline-stages 4 --expert-parallel 8 --moe-imbalance 1.2 --precision bf16 \
  --json || true
py_check "the EP plan spreads the experts over 8 sample groups" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["parallelism"]["experts"] == 8 and d["parallelism"]["data"] == 16, d["parallelism"]
' "$work/ep.out"
refused "ep not dividing the experts" plan --model "hf:$configs/mixtral-8x7b.json" --seq 4096 --device h100-sxm \
  --devices 48 --global-batch 48 --strategy 3d --tensor-parallel 1 --pipeline-stages 1 --expert-parallel 3
contains_error "--expert-parallel 3 does not divide the 8 experts of 'model.layers.0.block_sparse_moe'"
refused "ep with tp" plan --model "hf:$configs/mixtral-8x7b.json" --seq 4096 --device h100-sxm --devices 64 \
  --global-batch 64 --strategy 3d --tensor-parallel 2 --expert-parallel 8
refused "ep on a dense model" plan --model "hf:$configs/llama-3.1-8b.json" --device h100-sxm --devices 8 \
  --global-batch 8 --strategy 3d --expert-parallel 2
contains_error "has no moe layer"
refused "moe imbalance below 1" plan --model "hf:$configs/mixtral-8x7b.json" --device h100-sxm --devices 8 \
  --global-batch 8 --moe-imbalance 0.5
refused "seq on resnet" plan --model resnet50 --seq 128 --device a100 --devices 8 --global-batch 16
refused "bad seq in spec" model show --model "hf:$configs/llama-3.1-8b.json:seq=x"

finish "language-model plan checks passed"
