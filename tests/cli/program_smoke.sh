#!/usr/bin/env bash
# Usage: program_smoke.sh BURST_BINARY MODEL_DIR
#
# `burst program` end to end. Good input: data parallelism as action lists (one segment,
# one bucket, the bucket's all-reduce after the first layer with parameters), a plan file
# with re-shards (messages with tags), one rank, and JSON that parses with every rank's
# ops. Bad input is refused with exit 2 and one "burst: error:" line.
set -u

# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
cli_setup "$0 BURST_BINARY MODEL_DIR" 2 "$@"
models=$2

dp=(program --model fmnist_cnn --devices 2 --global-batch 16)
if quiet dp "${dp[@]}"; then
  # Two buckets, as DDP forms them: fc2 + fc1 pass the 1 MiB first bucket, the rest follow.
  for text in "fmnist_cnn: 2 ranks, global batch 16, 1 segments, 2 buckets, 0 messages" "rank 0: 40 ops" \
              "rank 1: 40 ops" "0F0  conv1 [0, 8)" "0F0  conv1 [8, 16)" "0SYNC_BN_F0  bn1 ranks [0, 1]" \
              "ALLREDUCE b0  ranks [0, 1], 1611304 B: fc2 fc1" \
              "ALLREDUCE b1  ranks [0, 1], 76032 B: bn2 conv2 bn1 conv1" "UPDATE" "REDUCE_LOSS"; do
    contains dp "$text"
  done
fi
if quiet local "${dp[@]}" --batchnorm local --rank 1; then
  contains local "rank 1: 36 ops"  # no SYNC_BN ops: 40 - 2 x 2
  grep -q "SYNC_BN" "$work/local.out" && fail "--batchnorm local still syncs BatchNorm"
fi

# vgg_like at batch 8 with its convolutions, ReLUs and pools split 4/4 over r0, r1 and the
# rest on r0: segments image..relu2 (split), flat..fc1 (r0), relu3 (split), fc2..loss (r0);
# one bucket (conv1 and conv2, group {0,1}); 6 messages, r1's half of relu2, fc1 and relu3
# there and its gradient back.
"$burst" model show "$models/vgg_like.json" --json >"$work/vgg_model.json" 2>/dev/null
python3 - "$work/vgg_model.json" "$work/mixed.json" <<'PY'
import json, sys
layers = json.load(open(sys.argv[1]))["layers"]
split = [[0, 0, 4], [1, 4, 8]]
plan = {"format": "burst.plan", "version": 1, "model": "vgg_like", "strategy": "hand", "global_batch": 8,
        "devices": 2,
        "layers": [{"layer": l["name"], "shards": split if l["op"] in ("input", "conv2d", "relu", "maxpool2d")
                    else [[0, 0, 8]]} for l in layers]}
json.dump(plan, open(sys.argv[2], "w"))
PY
if quiet mixed program --model "$models/vgg_like.json" --plan "$work/mixed.json"; then
  contains mixed "vgg_like: 2 ranks, global batch 8, 4 segments, 1 buckets, 6 messages"
  contains mixed "SEND_F0"
  contains mixed "RECV_B0"
  contains mixed "tag 0,"
fi
if quiet json program --model "$models/vgg_like.json" --plan "$work/mixed.json" --json; then
  py_check "burst program --json" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "burst.program" and d["ranks"] == 2, d["format"]
assert sorted(d["programs"]) == ["0", "1"], sorted(d["programs"])
tags = [op["piece"]["tag"] for ops in d["programs"].values() for op in ops
        if "piece" in op and not op["piece"]["local"] and op["kind"].startswith("SEND")]
assert tags and len(tags) == len(set(tags)), tags
' "$work/json.out"
fi

refused "a bucket of 0 MiB" "${dp[@]}" --bucket-mb 0
refused "a negative bucket" "${dp[@]}" --bucket-mb -1
refused "a NaN bucket" "${dp[@]}" --bucket-mb nan
refused "an unknown BatchNorm mode" "${dp[@]}" --batchnorm other
refused "a rank outside the plan" "${dp[@]}" --rank 2
refused "neither a plan nor data parallelism" program --model fmnist_cnn
refused "a plan and --devices together" program --model "$models/vgg_like.json" --plan "$work/mixed.json" --devices 2
refused "a plan for another model" program --model fmnist_cnn --plan "$work/mixed.json"

finish "burst program prints step programs and refuses bad input"
