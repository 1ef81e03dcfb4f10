#!/usr/bin/env bash
# The main job on built-in defaults: set up, build in Release, then show the zoo and one model.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
scripts/build.sh release
burst=build/release/apps/burst/burst

echo "== burst models"
"$burst" models
echo
echo "== burst model show vgg16"
"$burst" model show vgg16
echo
echo "== burst cost --model vgg16 --device a100 --batch 8 (first lines)"
"$burst" cost --model vgg16 --device a100 --batch 8 | sed -n '1,8p'  # sed reads it all: no SIGPIPE under pipefail
echo
echo "== burst plan --model vgg16 --device a100 --devices 16 --global-batch 32 (summary)"
"$burst" plan --model vgg16 --device a100 --devices 16 --global-batch 32 | tail -n 9
echo
echo "== the main job: fmnist_cnn on Fashion-MNIST, 2 epochs, 2 workers, a burst plan (docs/runtime.md)"
"$burst" train --model fmnist_cnn --dataset fashion-mnist --global-batch 64 --epochs 2 \
  --nproc 2 --strategy burst --lr 0.05 --momentum 0.9 --seed 1 --log-every 200
