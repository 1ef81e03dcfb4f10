#!/usr/bin/env bash
# Checkpoints (docs/runtime.md, "Checkpoints"), on resnet_like (BatchNorm running statistics
# and SGD momentum buffers are part of the state):
#  - bitwise resume: 12 steps on 2 workers in one go, against 6 steps, a checkpoint, and a
#    resumed run to 12 on the same 2 workers: every parameter and buffer identical; the
#    same with Adam (8 steps, resumed after 4), and with dropout (its masks are keyed by the
#    step and the global sample, so nothing random needs restoring);
#  - elastic resume: a checkpoint written by 4 workers, resumed on 3 (data parallel), the same
#    with dropout, and one written under a burst plan, resumed with data parallelism: within
#    1e-9 of the uninterrupted run (in float64, so that no CPU's rounding flips a ReLU) (the global batch is fixed, so the steps compute the same
#    training, dropout masks included);
#  - damaged or foreign checkpoints are refused before any worker starts, exit 2 and one
#    line with the reason: truncated, a flipped bit, another model, another training
#    (learning rate), no checkpoint at all.
#
# usage: checkpoint.sh BURST PYTHON_WITH_TORCH MODEL_DIR
set -euo pipefail
burst=$1
python=$2
models=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model="$models/resnet_like.json"
# Seed and learning rate as in equivalence.sh (which shows the one-process floor for them).
settings=(--global-batch 16 --seed 7 --momentum 0.9 --dataset synthetic --log-every 100 --dtype float64)
common=(--model "$model" --lr 0.005 "${settings[@]}")
failures=0
checks=0
run_with=()

train() {  # LOG ARGS... (after `common`, or `run_with` when set)
  local log=$1
  shift
  local base=("${common[@]}")
  [ ${#run_with[@]} -gt 0 ] && base=("${run_with[@]}")
  if ! "$burst" train "${base[@]}" "$@" > "$work/$log.log" 2>&1; then
    echo "FAIL: burst train $* failed:"
    tail -n 5 "$work/$log.log" | sed 's/^/    | /'
    exit 1
  fi
}
compare() {  # NAME FILE TOLERANCE [REFERENCE (the 12-step one)]
  checks=$((checks + 1))
  if "$python" "$here/compare_params.py" "${4:-$work/reference.pt}" "$2" "$3" > "$work/compare.out"; then
    echo "ok: $1: $(cat "$work/compare.out")"
  else
    echo "FAIL: $1: $(cat "$work/compare.out")"
    failures=$((failures + 1))
  fi
}
refused() {  # NAME EXPECTED_TEXT ARGS... (model and learning rate among them)
  local name=$1 expected=$2
  shift 2
  checks=$((checks + 1))
  local rc=0
  "$burst" train "${settings[@]}" "$@" > "$work/refused.out" 2> "$work/refused.err" || rc=$?
  local lines
  lines=$(wc -l < "$work/refused.err")
  if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && grep -qF -- "$expected" "$work/refused.err" &&
     ! grep -q "burst train:" "$work/refused.out"; then
    echo "ok: refused $name: $(cat "$work/refused.err")"
  else
    echo "FAIL: $name: exit $rc, $lines stderr lines (expected 2 and 1 containing '$expected'):"
    head -n 3 "$work/refused.err" | sed 's/^/    | /'
    failures=$((failures + 1))
  fi
}

train reference --nproc 2 --steps 12 --save-params "$work/reference.pt"

# Bitwise: the same plan and workers, interrupted after step 6.
train first_half --nproc 2 --steps 6 --checkpoint-dir "$work/bitwise" --checkpoint-every 3
checks=$((checks + 1))
if [ -f "$work/bitwise/step-000000003.ckpt" ] && [ -f "$work/bitwise/step-000000006.ckpt" ]; then
  echo "ok: checkpoints after steps 3 and 6"
else
  echo "FAIL: expected checkpoints after steps 3 and 6, found: $(ls "$work/bitwise")"
  failures=$((failures + 1))
fi
train second_half --nproc 2 --steps 12 --checkpoint-dir "$work/bitwise" --resume --save-params "$work/bitwise.pt"
checks=$((checks + 1))
if grep -q "resumed from step 6" "$work/second_half.log"; then echo "ok: resumed from step 6"; else
  echo "FAIL: the resumed run does not say it resumed from step 6"; failures=$((failures + 1)); fi
compare "bitwise resume on the same 2 workers" "$work/bitwise.pt" 0

# Bitwise resume of 8 steps after 4, for other settings (then back to `common`).
bitwise_case() {  # NAME ARGS (model, optimizer, learning rate)...
  local name=$1
  shift
  run_with=("$@" "${settings[@]}")
  train "${name}_reference" --nproc 2 --steps 8 --save-params "$work/${name}_reference.pt"
  train "${name}_first" --nproc 2 --steps 4 --checkpoint-dir "$work/$name"
  train "${name}_second" --nproc 2 --steps 8 --checkpoint-dir "$work/$name" --resume --save-params "$work/$name.pt"
  run_with=()
  checks=$((checks + 1))
  if "$python" "$here/compare_params.py" "$work/${name}_reference.pt" "$work/$name.pt" 0 > "$work/compare.out"; then
    echo "ok: bitwise resume with $name: $(cat "$work/compare.out")"
  else
    echo "FAIL: bitwise resume with $name: $(cat "$work/compare.out")"
    failures=$((failures + 1))
  fi
}
# Adam: its step count and both moment estimates are restored.
bitwise_case adam --model "$model" --optimizer adam --lr 0.001
# Dropout: the resumed steps draw the masks the uninterrupted run drew.
bitwise_case dropout --model "$models/dropout_like.json" --lr 0.05

# Elastic runs change the layout, so their sums run in another order. In float32 on a CPU with
# AVX-512, a burst plan on 4 resumed on 2 differed by 3.6e-3 in block2.bn1.bias at 12 steps
# (a ReLU input near zero flipped side); in float64 such flips are out of reach.
train reference8 --nproc 2 --steps 8 --save-params "$work/reference8.pt"

# Elastic: 4 workers -> 3.
train four --nproc 4 --steps 4 --checkpoint-dir "$work/elastic"
train three --nproc 3 --steps 8 --checkpoint-dir "$work/elastic" --resume --save-params "$work/elastic.pt"
compare "4 workers, resumed on 3" "$work/elastic.pt" 1e-9 "$work/reference8.pt"

# Elastic with dropout: 4 workers -> 3, against one process.
run_with=(--model "$models/dropout_like.json" --lr 0.05 "${settings[@]}")
train dropout_reference8 --nproc 1 --steps 8 --save-params "$work/dropout_reference8.pt"
train dropout_four --nproc 4 --steps 4 --checkpoint-dir "$work/dropout_elastic"
train dropout_three --nproc 3 --steps 8 --checkpoint-dir "$work/dropout_elastic" --resume \
  --save-params "$work/dropout_elastic.pt"
run_with=()
compare "dropout, 4 workers, resumed on 3" "$work/dropout_elastic.pt" 1e-9 "$work/dropout_reference8.pt"

# Elastic: a burst plan (V100 cost model, 4 devices) -> data parallelism on 2.
"$burst" plan --model "$model" --device v100 --devices 4 --global-batch 16 --amplification inf \
  -o "$work/burst4.json" > /dev/null
train burst --nproc 4 --plan "$work/burst4.json" --steps 4 --checkpoint-dir "$work/burst"
train dp --nproc 2 --steps 8 --checkpoint-dir "$work/burst" --resume --save-params "$work/burst_to_dp.pt"
compare "burst plan on 4, resumed with data parallelism on 2" "$work/burst_to_dp.pt" 1e-9 "$work/reference8.pt"

# ZeRO: a checkpoint holds the optimizer state whole (gathered from the shards), so it resumes
# under another stage and layout.
train zero_four --nproc 4 --zero 1 --steps 4 --checkpoint-dir "$work/zero"
train zero_two --nproc 2 --zero 2 --steps 8 --checkpoint-dir "$work/zero" --resume --save-params "$work/zero.pt"
compare "ZeRO 1 on 4 workers, resumed with ZeRO 2 on 2" "$work/zero.pt" 1e-9 "$work/reference8.pt"

# Refusals, before any worker starts.
latest="$work/bitwise/step-000000012.ckpt"
mkdir "$work/truncated" "$work/flipped"
head -c "$(($(stat -c %s "$latest") - 100))" "$latest" > "$work/truncated/step-000000012.ckpt"
refused "a truncated checkpoint" "truncated" --model "$model" --lr 0.005 --nproc 2 --steps 20 --checkpoint-dir "$work/truncated" --resume
"$python" - "$latest" "$work/flipped/step-000000012.ckpt" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[len(data) // 2] ^= 0x10
open(sys.argv[2], "wb").write(data)
PY
refused "a flipped bit" "corrupt" --model "$model" --lr 0.005 --nproc 2 --steps 20 --checkpoint-dir "$work/flipped" --resume
refused "another model" "is for model resnet_like" --model "$models/vgg_like.json" --lr 0.005 --nproc 2 --steps 20 \
  --checkpoint-dir "$work/bitwise" --resume
refused "another learning rate" "belongs to another training" --model "$model" --lr 0.01 --nproc 2 --steps 20 \
  --checkpoint-dir "$work/bitwise" --resume
refused "no checkpoint" "no checkpoint in" --model "$model" --lr 0.005 --nproc 2 --steps 20 --checkpoint-dir "$work/empty" --resume
refused "--resume without a directory" "need --checkpoint-dir" --model "$model" --lr 0.005 --nproc 2 --steps 20 --resume

refused "--timeout 0" "--timeout must be between" --model "$model" --lr 0.005 --nproc 2 --steps 2 --timeout 0
refused "--max-restarts without --nproc" "--max-restarts restarts the workers --nproc starts" --model "$model" \
  --lr 0.005 --steps 2 --max-restarts 1
refused "--checkpoint-every -1" "--checkpoint-every must be at least 0" --model "$model" --lr 0.005 --nproc 2 \
  --steps 2 --checkpoint-dir "$work/x" --checkpoint-every -1

if [ "$failures" -gt 0 ]; then
  echo "$failures of $checks checks failed"
  exit 1
fi
echo "all $checks checkpoint checks passed"
