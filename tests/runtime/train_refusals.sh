#!/usr/bin/env bash
# `burst train` refuses what cannot work before any worker starts: exit 2 and one
# "burst: error:" line (tests/cli/common.sh's `refused`).
#
# usage: train_refusals.sh BURST MODEL_DIR
source "$(dirname "$0")/../cli/common.sh"
cli_setup "train_refusals.sh BURST MODEL_DIR" 2 "$@"
models=$2
vgg=(train --model "$models/vgg_like.json" --steps 2)
examples="$(cd "$(dirname "$0")/../../docs/examples" && pwd)"

"$burst" plan --model "$models/resnet_like.json" --device v100 --devices 2 --global-batch 16 -o "$work/resnet2.json" >/dev/null
"$burst" plan --model "$models/vgg_like.json" --device v100 --devices 3 --global-batch 16 -o "$work/vgg3.json" >/dev/null
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
plan = json.load(open(f"{work}/vgg3.json"))
plan["layers"][1]["shards"] = [[0, 0, 15]]  # sample 15 of conv1 on no rank
json.dump(plan, open(f"{work}/uncovered.json", "w"))
PY

refused "a plan for another model" "${vgg[@]}" --plan "$work/resnet2.json" --nproc 2
refused "a plan for 3 workers run by 2" "${vgg[@]}" --plan "$work/vgg3.json" --nproc 2
refused "a plan leaving samples uncovered" "${vgg[@]}" --plan "$work/uncovered.json" --nproc 3
refused "a missing plan file" "${vgg[@]}" --plan "$work/none.json" --nproc 2
refused "global batch differs from the plan's" "${vgg[@]}" --plan "$work/vgg3.json" --nproc 3 --global-batch 8
refused "no steps or epochs" train --model "$models/vgg_like.json" --global-batch 16 --nproc 2
refused "zero steps" "${vgg[@]}" --global-batch 16 --steps 0 --nproc 2
refused "zero workers" "${vgg[@]}" --global-batch 16 --nproc 0
refused "global batch 0" "${vgg[@]}" --global-batch 0 --nproc 2
refused "plan and strategy together" "${vgg[@]}" --plan "$work/vgg3.json" --strategy burst --cost-device v100 --nproc 3
refused "images that do not fit the model" "${vgg[@]}" --global-batch 16 --dataset fashion-mnist --nproc 2
refused "an unknown dataset" "${vgg[@]}" --global-batch 16 --dataset imagenet --nproc 2
refused "an unknown model" train --model no_such_model --global-batch 16 --steps 2 --nproc 2
refused "a cluster file without --strategy burst" "${vgg[@]}" --global-batch 16 --nproc 2 \
  --cluster "$examples/cluster-2x8-a100.json"
refused "a cluster file of another size" "${vgg[@]}" --global-batch 16 --nproc 2 --strategy burst --cost-device v100 \
  --cluster "$examples/cluster-2x8-a100.json"
refused "a bucket of 0 MiB" "${vgg[@]}" --global-batch 16 --nproc 2 --bucket-mb 0
refused "a negative bucket" "${vgg[@]}" --global-batch 16 --nproc 2 --bucket-mb -1
refused "a NaN bucket" "${vgg[@]}" --global-batch 16 --nproc 2 --bucket-mb nan
refused "an unknown BatchNorm mode" "${vgg[@]}" --global-batch 16 --nproc 2 --batchnorm other
refused "ZeRO stage 3 (planned, not run)" "${vgg[@]}" --global-batch 16 --nproc 2 --zero 3
refused "selective recomputation (planned, not run)" "${vgg[@]}" --global-batch 16 --nproc 2 --recompute selective
refused "an infinite learning rate" "${vgg[@]}" --global-batch 16 --nproc 2 --lr inf
refused "a NaN learning rate" "${vgg[@]}" --global-batch 16 --nproc 2 --lr nan
refused "warmup beyond the steps" "${vgg[@]}" --global-batch 16 --nproc 2 --warmup-steps 3
refused "an unknown schedule" "${vgg[@]}" --global-batch 16 --nproc 2 --lr-schedule exponential
refused "a step schedule without a step size" "${vgg[@]}" --global-batch 16 --nproc 2 --lr-schedule step
refused "a minimum above the rate" "${vgg[@]}" --global-batch 16 --nproc 2 --lr-schedule cosine --min-lr 1
refused "an infinite weight decay" "${vgg[@]}" --global-batch 16 --nproc 2 --weight-decay inf
refused "momentum of 1" "${vgg[@]}" --global-batch 16 --nproc 2 --momentum 1

echo '{"format": "burst-train-job", "version": 99}' >"$work/future_job.json"
refused "a job file with other options" train --job "$work/future_job.json" --steps 2
refused "a missing job file" train --job "$work/none.json"
refused "a plan file given as a job" train --job "$work/vgg3.json"
refused "a job file of another version" train --job "$work/future_job.json"
refused "train without a model" train --global-batch 16 --steps 2
refused "an unknown device" "${vgg[@]}" --global-batch 16 --device tpu
# --device cuda: refused where it cannot run, whichever reason applies (a build without CUDA,
# or no GPU); on a machine with a GPU there is nothing to refuse.
if [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -eq 0 ]; then
  refused "--device cuda without a GPU, launcher" "${vgg[@]}" --global-batch 16 --device cuda --nproc 2
  refused "--device cuda without a GPU, one process" "${vgg[@]}" --global-batch 16 --device cuda
  refused "profile --device cuda without a GPU" profile --model "$models/vgg_like.json" --device cuda -o "$work/gpu.json"
  refused "a background job on a GPU that is not there" background --model fmnist_cnn --steps 1 --device cuda:0
fi

finish "bad train commands refused with exit 2 and one line, before any worker started"
