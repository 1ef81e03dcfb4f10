#!/usr/bin/env bash
# Users' data (docs/runtime.md, "Your own data"): npy:DIR, tokens:FILE and images:DIR.
#  - each trains on 2 workers equal to one process (float64, 1e-9): samples are drawn by
#    global index, so the plan does not change them; the validation lines are equal too;
#  - a character-level GPT on a token file made from the licence texts Debian ships trains
#    on 2 workers with a pipeline plan, its validation loss reported, falling from ln 256 =
#    5.55 at initialisation to below 3.0 after 600 steps (2.91 when written);
#  - bad data is one line and exit 2 before any worker starts.
#
# usage: user_data.sh BURST PYTHON_WITH_TORCH
set -uo pipefail
burst=$1
python=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/compare_runs.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# --- the data ---------------------------------------------------------------------------
python3 "$root/scripts/text_tokens.py" "$work/text" /usr/share/common-licenses/* >/dev/null
python3 "$root/scripts/fashion_mnist_images.py" "$work/images" --per-split 256 >/dev/null
python3 - "$work" <<'PY'
import os, struct, sys, random
work = sys.argv[1]
def npy(path, descr, shape, fmt, values):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, "".join(f"{d}, " for d in shape))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))
rng = random.Random(3)
n = 96
os.makedirs(f"{work}/npy")
labels = [rng.randrange(10) for _ in range(n)]
# uint8 pixels: class c's images are brighter in row band c (learnable).
pixels = [min(255, rng.randrange(64) + (160 if (p // 28) // 3 == labels[i] else 0)) for i in range(n) for p in range(784)]
npy(f"{work}/npy/inputs.npy", "|u1", (n, 1, 28, 28), "B", pixels)
npy(f"{work}/npy/labels.npy", "<i8", (n,), "q", labels)
os.makedirs(f"{work}/float_npy")
npy(f"{work}/float_npy/inputs.npy", "<f4", (n, 1, 28, 28), "f", [p / 255 for p in pixels])
npy(f"{work}/float_npy/labels.npy", "<i8", (n,), "q", labels)
# Bad ones: truncated, wrong dtype, wrong shape, labels out of range.
os.makedirs(f"{work}/truncated")
npy(f"{work}/truncated/inputs.npy", "|u1", (n, 1, 28, 28), "B", pixels[:-5])
npy(f"{work}/truncated/labels.npy", "<i8", (n,), "q", labels)
os.makedirs(f"{work}/int_inputs")
npy(f"{work}/int_inputs/inputs.npy", "<i8", (n, 1, 28, 28), "q", pixels)
npy(f"{work}/int_inputs/labels.npy", "<i8", (n,), "q", labels)
os.makedirs(f"{work}/small_images")
npy(f"{work}/small_images/inputs.npy", "|u1", (n, 1, 14, 14), "B", pixels[: n * 196])
npy(f"{work}/small_images/labels.npy", "<i8", (n,), "q", labels)
os.makedirs(f"{work}/bad_labels")
npy(f"{work}/bad_labels/inputs.npy", "|u1", (n, 1, 28, 28), "B", pixels)
npy(f"{work}/bad_labels/labels.npy", "<i8", (n,), "q", labels[:-1] + [10])
open(f"{work}/odd.bin", "wb").write(b"\x01\x00\x02")
open(f"{work}/big_ids.bin", "wb").write(struct.pack("<200H", *([5] * 199 + [300])))
PY
mkdir -p "$work/broken/a" && cp "$work/images/train/0-tshirt/00001.png" "$work/broken/a/" && echo "not a png" > "$work/broken/a/bad.png"

# --- 2 workers against one process ------------------------------------------------------
lm="gpt2:layers=2,width=64,heads=2,seq=32,vocab=256"
trained=()
train_pair() {  # NAME TRAIN-ARGS...: one process and 2 workers; both must finish
  local name=$1
  shift
  for n in 1 2; do
    if ! "$burst" train "$@" --nproc "$n" --dtype float64 --seed 5 --log-every 5 \
        --save-params "$work/$name-$n.pt" > "$work/$name-$n.log" 2>&1; then
      fail "$name on $n workers: $(tail -n 1 "$work/$name-$n.log")"
      return
    fi
  done
  trained+=("$name=$work/$name-2.pt")
  if ! diff <(grep '^validation' "$work/$name-1.log") <(grep '^validation' "$work/$name-2.log") > /dev/null; then
    fail "$name: validation on 2 workers differs from one process: $(grep '^validation' "$work/$name-2.log" | head -n 2)"
  elif [ "$(grep -c '^validation' "$work/$name-2.log")" -lt 1 ]; then
    fail "$name: no validation line"
  else
    echo "ok: $name: $(grep '^validation' "$work/$name-2.log" | tail -n 1)"
  fi
}
cnn=(--model fmnist_cnn --global-batch 16 --steps 10 --lr 0.05 --momentum 0.9 --eval-every 5)
train_pair npy "${cnn[@]}" --dataset "npy:$work/npy" --val-dataset "npy:$work/float_npy"
train_pair images "${cnn[@]}" --dataset "images:$work/images/train" --val-dataset "images:$work/images/test" \
  --image-mean 0.286 --image-std 0.353
train_pair tokens --model "$lm" --global-batch 8 --steps 10 --lr 0.01 --momentum 0.9 --eval-every 5 \
  --dataset "tokens:$work/text/train.bin" --val-dataset "tokens:$work/text/val.bin"
for run in "${trained[@]}"; do
  name=${run%%=*}
  compare_runs "$python" "$work/$name-1.pt" 1e-9 "${name}-2-workers=${run#*=}"
  failures=$((failures + compare_failures))
done
# The same pixels as uint8 (scaled by 1/255) and float32 train alike (to float32's rounding).
"$burst" train "${cnn[@]}" --dataset "npy:$work/float_npy" --nproc 1 --dtype float64 --seed 5 \
  --save-params "$work/float.pt" > "$work/float.log" 2>&1 || fail "float32 npy: $(tail -n 1 "$work/float.log")"
compare_runs "$python" "$work/npy-1.pt" 1e-6 "uint8-and-float32-inputs=$work/float.pt"
failures=$((failures + compare_failures))

# --- the character-level GPT on a pipeline plan ------------------------------------------
char_gpt="gpt2:layers=2,width=128,heads=4,seq=64,vocab=256"
"$burst" plan --model "$char_gpt" --device v100 --devices 2 --global-batch 32 --strategy pipeline \
  -o "$work/pipeline.json" > "$work/pipeline.log" 2>&1 || fail "pipeline plan: $(tail -n 1 "$work/pipeline.log")"
if "$burst" train --model "$char_gpt" --plan "$work/pipeline.json" --nproc 2 --global-batch 32 --steps 600 \
    --dataset "tokens:$work/text/train.bin" --val-dataset "tokens:$work/text/val.bin" --optimizer adamw --lr 3e-3 \
    --lr-schedule cosine --warmup-steps 20 --eval-every 300 --log-every 100 > "$work/char.log" 2>&1; then
  losses=$(sed -n 's/^validation after step \([0-9]*\): loss \([0-9.]*\).*/\2/p' "$work/char.log" | tr '\n' ' ')
  read -r middle final <<< "$losses"
  if ! grep -q '"stages"\|pipeline' "$work/pipeline.json"; then
    fail "the char GPT's plan is not a pipeline plan"
  elif [ -z "${final:-}" ] || ! awk -v m="$middle" -v f="$final" 'BEGIN { exit !(f < 3.0 && f < m) }'; then
    fail "char GPT: validation loss after steps 300 and 600 is '$losses' (expected falling, below 3.0)"
  else
    echo "ok: char GPT on a 2-stage pipeline: validation loss $middle after 300 steps, $final after 600"
  fi
else
  fail "char GPT: $(tail -n 1 "$work/char.log")"
fi

# --- bad data: one line, exit 2, before any worker starts ---------------------------------
refuse() {  # EXPECTED-TEXT ARGS...
  local expected=$1
  shift
  "$burst" train --global-batch 16 --steps 2 --nproc 2 "$@" > "$work/out" 2> "$work/err"
  local rc=$?
  if [ "$rc" -ne 2 ] || [ "$(grep -c . "$work/err")" -ne 1 ] || ! grep -q -- "$expected" "$work/err"; then
    fail "refusal '$expected' (exit $rc): $(head -c 300 "$work/err")"
  elif grep -q "^step" "$work/out"; then
    fail "refusal '$expected' came after a step"
  else
    echo "ok: refused: $(cat "$work/err")"
  fi
}
refuse "cannot open" --model fmnist_cnn --dataset "npy:$work/missing"
refuse "truncated" --model fmnist_cnn --dataset "npy:$work/truncated"
refuse "takes floats" --model fmnist_cnn --dataset "npy:$work/int_inputs"
refuse "takes samples \[1, 28, 28\]" --model fmnist_cnn --dataset "npy:$work/small_images"
refuse "label 10 at element 95" --model fmnist_cnn --dataset "npy:$work/bad_labels"
refuse "not a whole number" --model "$lm" --dataset "tokens:$work/odd.bin"
refuse "token 300 at position 199" --model "$lm" --dataset "tokens:$work/big_ids.bin"
refuse "image '$work/broken/a/bad.png' does not decode" --model fmnist_cnn --dataset "images:$work/broken"
refuse "not synthetic, fashion-mnist" --model fmnist_cnn --dataset "csv:$work/x"
refuse "--image-std" --model fmnist_cnn --dataset "images:$work/images/train" --image-std 0

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
