#!/usr/bin/env bash
# A run whose loss stops being finite ends on every rank at that step: exit code 1, one
# line naming the step and the last checkpoint, and no checkpoint of the step that diverged
# (docs/runtime.md, "Faults and restarts"); so does one whose gradient norm does, with
# --clip-grad-norm; a negative clip is refused (exit 2).
#
# usage: divergence.sh BURST PYTHON MODEL_DIR
source "$(dirname "$0")/../cli/common.sh"
cli_setup "divergence.sh BURST PYTHON MODEL_DIR" 3 "$@"
models=$3

# Plain SGD at 1e12 on the VGG-like model: step 1's loss is finite, its update is not.
checks=$((checks + 1))
timeout -k 5 120 "$burst" train --model "$models/vgg_like.json" --global-batch 16 --steps 6 --nproc 2 --lr 1e12 \
  --checkpoint-dir "$work/ck" --checkpoint-every 1 >"$work/out" 2>"$work/err" </dev/null
rc=$?
line=$(grep -c . "$work/err")
if [ "$rc" -ne 1 ]; then
  fail "a diverging run exited $rc, expected 1 (stderr: $(head -c 400 "$work/err"))"
elif [ "$line" -ne 1 ] || ! grep -q "the loss is .*: training stopped" "$work/err"; then
  fail "a diverging run's stderr is not one line naming the loss: $(head -c 400 "$work/err")"
else
  step=$(sed -n 's/.*step \([0-9]*\): the loss is.*/\1/p' "$work/err")
  last=$(printf 'step-%09d.ckpt' $((step - 1)))
  if [ -z "$step" ] || [ -e "$work/ck/$(printf 'step-%09d.ckpt' "$step")" ]; then
    fail "the step that diverged ($step) was checkpointed or not named: $(cat "$work/err")"
  elif [ "$step" -ge 2 ] && ! grep -q "$last" "$work/err"; then
    fail "the message does not name the last checkpoint, $last: $(cat "$work/err")"
  fi
fi

# With clipping, the global gradient norm is checked every step (the loss only on logged
# ones): step 1's clipped update at 1e12 makes step 2's gradients non-finite.
checks=$((checks + 1))
timeout -k 5 120 "$burst" train --model "$models/vgg_like.json" --global-batch 16 --steps 6 --nproc 2 --lr 1e12 \
  --clip-grad-norm 1 --log-every 100 >"$work/out" 2>"$work/err" </dev/null
rc=$?
if [ "$rc" -ne 1 ] || [ "$(grep -c . "$work/err")" -ne 1 ] ||
    ! grep -q "step [0-9]*: the gradient norm is .*: training stopped, the step not applied" "$work/err"; then
  fail "a run whose gradient norm diverged exited $rc: $(head -c 400 "$work/err")"
fi
checks=$((checks + 1))
"$burst" train --model "$models/vgg_like.json" --global-batch 16 --steps 2 --nproc 2 --clip-grad-norm -1 \
  >"$work/out" 2>"$work/err" </dev/null
rc=$?
if [ "$rc" -ne 2 ] || ! grep -q -- "--clip-grad-norm must be a finite number > 0" "$work/err"; then
  fail "--clip-grad-norm -1 exited $rc: $(head -c 400 "$work/err")"
fi

finish "a diverging run stops with exit 1 and one line, before checkpointing the step"
