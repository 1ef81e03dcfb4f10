#!/usr/bin/env bash
# burst on a GPU: build with CUDA, check one-rank training on the GPU against the CPU, run a
# background job beside it on the same GPU, measure a profile of the zoo, print one summary.
# Meant for a machine with an NVIDIA GPU, torch 2.x with CUDA and the CUDA toolkit; on one
# without a GPU it says so and exits 0.
#
#   scripts/gpu-check.sh [OUT_DIR]      # default OUT_DIR: build/gpu-check; under 8 minutes
#
# Steps (each prints a line; the summary repeats the figures):
#  1. set-up and build: scripts/setup.sh (skipped with BURST_SKIP_SETUP=1, for a machine
#     that has the packages but reaches no registry; BURST_PYTHON then names a Python whose
#     torch is the one to build against), then scripts/build.sh release with BURST_CUDA=ON;
#  2. equivalence: fmnist_cnn, 20 SGD steps (momentum 0.9) at global batch 32, one rank, in
#     float64 on the GPU against float64 on the CPU, within 1e-7 (relative per tensor,
#     tests/runtime/compare_params.py); float32 on the GPU against the same reference is
#     reported (cuDNN may use TF32 for convolutions: about 1e-3);
#  3. multiplexing: resnet50 at global batch 32 alone, then with a background job (fmnist_cnn
#     at batch 256) on the same GPU: the foreground's ms per step both ways and the
#     background's samples per second;
#  4. a profile of the zoo's models on the GPU (`burst profile --device cuda`, batches 8 and
#     32) into OUT_DIR/<kind>-<model>.json, each kept to GPU_CHECK_PROFILE_S seconds (90).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/gpu-check}
python=${BURST_PYTHON:-.venv/bin/python}
[ -x "$python" ] || python=$(command -v python3)

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "${gpus:-0}" -eq 0 ]; then
  echo "gpu-check: no GPU on this machine (nvidia-smi lists none): nothing to check"
  exit 0
fi
mkdir -p "$out"
summary=()
note() { echo "gpu-check: $*" >&2; summary+=("$*"); }
fail() { note "FAILED: $*"; printf '%s\n' "${summary[@]}" >"$out/summary.txt"; exit 1; }
started=$(date +%s)

# 1. set-up and build with CUDA
if [ "${BURST_SKIP_SETUP:-0}" != 1 ]; then scripts/setup.sh || fail "scripts/setup.sh"; python=.venv/bin/python; fi
prefix=$("$python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)') || fail "no torch in $python"
cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON -DBURST_CUDA=ON \
  -DBURST_BUILD_TESTS=OFF "-DCMAKE_PREFIX_PATH=$prefix" >"$out/configure.log" 2>&1 || fail "configure: see $out/configure.log"
ninja -C build/gpu burst >"$out/build.log" 2>&1 || fail "build: see $out/build.log"
burst=build/gpu/apps/burst/burst
note "$("$burst" --version), $(nvidia-smi -L | head -1), built in $(( $(date +%s) - started )) s"

# 2. one rank on the GPU against the CPU
train=(train --model fmnist_cnn --global-batch 32 --steps 20 --seed 7 --lr 0.01 --momentum 0.9 --log-every 20)
"$burst" "${train[@]}" --dtype float64 --save-params "$out/cpu64.pt" >"$out/cpu64.log" 2>&1 || fail "CPU run: $(tail -1 "$out/cpu64.log")"
for dtype in float64 float32; do
  "$burst" "${train[@]}" --device cuda --dtype "$dtype" --save-params "$out/gpu-$dtype.pt" >"$out/gpu-$dtype.log" 2>&1 ||
    fail "GPU run ($dtype): $(tail -1 "$out/gpu-$dtype.log")"
done
equal=$("$python" tests/runtime/compare_params.py "$out/cpu64.pt" "$out/gpu-float64.pt" 1e-7 2>&1) ||
  fail "float64 on the GPU differs from the CPU beyond 1e-7: $equal"
note "equivalence: float64 GPU vs CPU within 1e-7: $equal"
note "float32 GPU vs float64 CPU: $("$python" tests/runtime/compare_params.py "$out/cpu64.pt" "$out/gpu-float32.pt" 1 2>&1)"

# 3. foreground and background on the one GPU
step_ms() { awk '/^step / && $2 > 10 { for (i = 1; i <= NF; i++) if ($i == "ms/iter") { s += $(i - 1); n++ } } END { if (n) printf "%.2f", s / n }' "$1"; }
fg=(train --model resnet50 --global-batch 32 --steps 40 --seed 7 --device cuda --log-every 1)
"$burst" "${fg[@]}" >"$out/alone.log" 2>&1 || fail "resnet50 alone: $(tail -1 "$out/alone.log")"
"$burst" "${fg[@]}" --background fmnist_cnn:256 >"$out/shared.log" 2>&1 || fail "resnet50 with a background job: $(tail -1 "$out/shared.log")"
alone=$(step_ms "$out/alone.log"); shared=$(step_ms "$out/shared.log")
background=$(grep -o 'bg [0-9.]* samples/s' "$out/shared.log" | tail -20 | awk '{ s += $2; n++ } END { if (n) printf "%.0f", s / n }')
note "multiplexing: resnet50 batch 32 alone ${alone} ms/step, beside a background job ${shared} ms/step" \
     "(slowdown $(awk -v a="$alone" -v b="$shared" 'BEGIN { printf "%.3f", b / a }')x); background fmnist_cnn:256 ${background} samples/s"

# 4. a profile of the zoo on the GPU
for model in fmnist_cnn resnet50 vgg16 vit_b_16 gpt2; do
  timeout "${GPU_CHECK_PROFILE_S:-90}" "$burst" profile --device cuda --model "$model" --batch-sizes 8,32 \
    -o "$out/profile-$model.json" >"$out/profile-$model.log" 2>&1
  status=$?
  kind=$("$python" -c "import json,sys; print(json.load(open(sys.argv[1]))['device'])" "$out/profile-$model.json" 2>/dev/null || echo gpu)
  [ -f "$out/profile-$model.json" ] && mv "$out/profile-$model.json" "$out/$kind-$model.json"
  entries=$("$python" -c "import json,sys; print(len(json.load(open(sys.argv[1]))['entries']))" "$out/$kind-$model.json" 2>/dev/null || echo 0)
  note "profile $kind-$model.json: $entries entries$([ "$status" -eq 124 ] && echo ' (stopped at the time limit: resumable)')"
done

note "done in $(( $(date +%s) - started )) s"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
