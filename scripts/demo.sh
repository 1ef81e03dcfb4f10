#!/usr/bin/env bash
# The main job on built-in defaults: set up, build in Release, then show what burst is for on
# this machine's CPU, with 2 worker processes:
#  1. a model whose layers want different device counts (data/demo/fmnist_wide_head.json: a
#     small CNN under a wide 2048-unit classifier head), measured on this CPU and planned at a
#     global batch of 8: the convolutions on both workers, the head on one (its 6.4M weights
#     would otherwise be all-reduced every step), with both predictions;
#  2. that plan trained on Fashion-MNIST, alone and with a background job in the device time
#     the head leaves idle on the other worker, beside data parallelism on the same steps;
#  3. the measured step times side by side, the background's samples/s, the foreground's
#     slowdown and the test accuracy of each run.
# About 2 minutes after the build on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
scripts/build.sh release
burst=build/release/apps/burst/burst
model=data/demo/fmnist_wide_head.json
work=build/demo
mkdir -p "$work"
steps=1000
common=(--model "$model" --dataset fashion-mnist --global-batch 8 --steps "$steps" --nproc 2
        --lr 0.01 --momentum 0.9 --seed 1 --log-every 100)

echo "== a plan of 16 A100s we do not have: burst plan --model vgg16 --device a100 --devices 16 --global-batch 32"
"$burst" plan --model vgg16 --device a100 --devices 16 --global-batch 32 | tail -n 9
echo
echo "== measure $model on this CPU: burst profile -o $work/profile.json"
"$burst" profile --model "$model" -o "$work/profile.json" 2>&1 | tail -n 1
echo
echo "== plan it for 2 CPU workers at global batch 8 (devices per layer, both predictions)"
"$burst" plan --model "$model" --device cpu --profile "$work/profile.json" --devices 2 --global-batch 8 |
  sed -n '/^id /,$p'
echo

# run NAME ARGS...: one training run, its log kept in $work/NAME.log, its last lines shown.
run() {
  local name=$1
  shift
  echo "== $name: burst train ${common[*]} $*"
  "$burst" train "${common[@]}" "$@" 2>&1 | grep -v '^profiling' | tee "$work/$name.log" | tail -n 3
  echo
}
run burst --strategy burst --profile "$work/profile.json"
run burst+background --strategy burst --profile "$work/profile.json" --background fmnist_cnn:8
run data-parallel --strategy dp

# median FIELD LOG: the median of a log line's value before FIELD ("ms/iter", or the
# background's "samples/s" after "bg") over the logged steps after the first.
median() {
  awk -v field="$1" '/^step/ && $2 > 1 {
      for (i = 2; i <= NF; ++i) if ($i == field && (field != "samples/s" || $(i - 2) == "bg")) print $(i - 1)
    }' "$2" | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
accuracy() { sed -n 's/.*accuracy \([0-9.]*%\).*/\1/p' "$1" | tail -n 1; }

burst_ms=$(median ms/iter "$work/burst.log")
with_ms=$(median ms/iter "$work/burst+background.log")
dp_ms=$(median ms/iter "$work/data-parallel.log")
bg_rate=$(median samples/s "$work/burst+background.log")
echo "== side by side: median ms per step over logged steps 101..$steps (logs in $work)"
printf '%-24s %8s ms   test accuracy %s\n' "burst plan" "$burst_ms" "$(accuracy "$work/burst.log")"
printf '%-24s %8s ms   test accuracy %s   background %s samples/s\n' "burst plan + background" "$with_ms" \
  "$(accuracy "$work/burst+background.log")" "$bg_rate"
printf '%-24s %8s ms   test accuracy %s\n' "data parallel" "$dp_ms" "$(accuracy "$work/data-parallel.log")"
awk -v b="$burst_ms" -v w="$with_ms" -v d="$dp_ms" 'BEGIN {
  printf "burst plan vs data parallel: %.2fx as fast; the background job slows the foreground %.2fx\n", d / b, w / b }'
grep -h 'predicts' "$work/burst.log"
