#!/usr/bin/env bash
# A language model in the runtime: GPT-2 in miniature (2 blocks, width 64, 2 heads, 16
# tokens, vocabulary 64, the LM head tied to the token embedding) on burst's synthetic token
# data (docs/runtime.md, "Data"). 20 SGD steps with momentum 0.9 in float64, against one
# process within 1e-9: data parallel on 2 and 3 workers; a hand plan on 3 workers with one
# middle layer on rank 1 alone (re-shards into and out of it, so the head and the embedding
# run in different segments); two plans that split the tied pair (the head on rank 0 alone;
# the embedding on rank 0 and the head on rank 2), where the rank that runs only the head
# holds a copy of the weight and the gradient is summed over both layers' ranks; and the
# burst planner's plans for 2 and 3 V100s; the tensor planner's plan for 4 A100s, a mixed
# tensor plan on 4 workers, and checkpoints from the tensor plan and into it.
#
# usage: language_model.sh BURST PYTHON_WITH_TORCH
set -euo pipefail
burst=$1
python=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model="gpt2:layers=2,width=64,heads=2,seq=16,vocab=64"
batch=12
base=(--model "$model" --global-batch "$batch" --seed 7 --lr 0.01 --momentum 0.9 --log-every 20 --dtype float64)
common=("${base[@]}" --steps 20)
failures=0
trained=()  # NAME=FILE of every run that finished, compared with one process at the end
run() {  # NAME ARGS...: trains
  local name=$1
  shift
  if ! "$burst" train "${common[@]}" "$@" --save-params "$work/$name.pt" > "$work/$name.log" 2>&1; then
    echo "FAIL: $name: burst train failed: $(tail -n 1 "$work/$name.log")"
    failures=$((failures + 1))
    return
  fi
  trained+=("$name=$work/$name.pt")
}

"$burst" train "${common[@]}" --save-params "$work/one.pt" > "$work/one.log" 2>&1 || { cat "$work/one.log"; exit 1; }
first=$(grep -m1 -o 'loss [0-9.]*' "$work/one.log"); last=$(grep -o 'loss [0-9.]*' "$work/one.log" | tail -n 1)
echo "one process: step 1 $first, step 20 $last"
for workers in 2 3; do run "dp-$workers" --nproc "$workers"; done

"$burst" model show "$model" --json > "$work/model.json"
python3 - "$work" "$batch" <<'PY'
import json, sys
work, batch = sys.argv[1], int(sys.argv[2])
model = json.load(open(f"{work}/model.json"))
names = [layer["name"] for layer in model["layers"]]
def plan(placement):
    return {"format": "burst.plan", "version": 1, "model": model["name"], "strategy": "hand",
            "global_batch": batch, "devices": 3, "layers": [{"layer": n, "shards": placement(n)} for n in names]}
thirds = [[r, r * batch // 3, (r + 1) * batch // 3] for r in range(3)]
middle = names[len(names) // 2]
json.dump(plan(lambda n: [[1, 0, batch]] if n == middle else thirds), open(f"{work}/middle.json", "w"))
json.dump(plan(lambda n: [[0, 0, batch]] if n == "lm_head" else thirds), open(f"{work}/head_alone.json", "w"))
apart = {"input_ids": [[0, 0, batch]], "transformer.wte": [[0, 0, batch]], "lm_head": [[2, 0, batch]],
         "loss": [[2, 0, batch]]}
json.dump(plan(lambda n: apart.get(n, thirds)), open(f"{work}/apart.json", "w"))
PY
run "middle-layer-on-one-rank" --nproc 3 --plan "$work/middle.json"
run "tied-head-on-rank-0-alone" --nproc 3 --plan "$work/head_alone.json"
run "embedding-on-rank-0-head-on-rank-2" --nproc 3 --plan "$work/apart.json"
for workers in 2 3; do
  "$burst" plan --model "$model" --device v100 --devices "$workers" --global-batch "$batch" --amplification inf \
    -o "$work/burst$workers.json" > /dev/null
  run "burst-plan-$workers" --nproc "$workers" --plan "$work/burst$workers.json"
done

# Tensor splits (docs/tensor-parallel.md): the tensor planner's plan for 4 A100s (its
# column -> row MLPs and, where its parts divide the 2 heads, head-parallel attention).
"$burst" plan --model "$model" --device a100 --devices 4 --global-batch "$batch" --strategy tensor \
  -o "$work/tensor4.json" > /dev/null
grep -q '"split"' "$work/tensor4.json" || { echo "FAIL: the tensor plan splits no layer"; exit 1; }
run "tensor-plan-4" --nproc 4 --plan "$work/tensor4.json"
# A mixed plan from it: the embeddings data parallel on all 4 workers, the blocks, ln_f and
# their replicated layers 2 parts x 2 sample groups (ranks 0-1 and 2-3, 6 samples each),
# the tied head and the loss data parallel on all 4: re-shards between 4 sample splits and
# 2 x 2 copies, and each part's weight gradients summed over its 2 ranks.
python3 - "$work" "$batch" <<'PY'
import json, sys
work, batch = sys.argv[1], int(sys.argv[2])
plan = json.load(open(f"{work}/tensor4.json"))
quarters = [[r, r * batch // 4, (r + 1) * batch // 4] for r in range(4)]
halves = [[0, 0, batch // 2], [1, 0, batch // 2], [2, batch // 2, batch], [3, batch // 2, batch]]
names = [layer["layer"] for layer in plan["layers"]]
first_block = names.index("transformer.h.0.ln_1")
for index, layer in enumerate(plan["layers"]):
    if index >= first_block and "split" in layer:
        layer["shards"] = halves
    else:
        layer.pop("split", None)
        layer["shards"] = quarters
plan["strategy"] = "hand"
json.dump(plan, open(f"{work}/mixed4.json", "w"))
PY
run "mixed-tensor-plan-4" --nproc 4 --plan "$work/mixed4.json"
# Checkpoints hold whole tensors under any plan: 10 steps of the tensor plan resumed on one
# worker, and 10 steps data parallel on 2 resumed under the tensor plan (each part loads
# its slices of the weights and momentum buffers).
half() {  # DIR ARGS...: the first 10 steps, checkpointed in DIR
  local dir=$1
  shift
  "$burst" train "${base[@]}" --steps 10 --checkpoint-dir "$work/$dir" "$@" > "$work/$dir.log" 2>&1 ||
    { echo "FAIL: burst train $*: $(tail -n 1 "$work/$dir.log")"; exit 1; }
}
half from-tensor --nproc 4 --plan "$work/tensor4.json"
run "tensor-plan-4-resumed-on-1" --nproc 1 --checkpoint-dir "$work/from-tensor" --resume
half to-tensor --nproc 2
run "dp-2-resumed-under-tensor-plan-4" --nproc 4 --plan "$work/tensor4.json" --checkpoint-dir "$work/to-tensor" --resume
source "$here/compare_runs.sh"
compare_runs "$python" "$work/one.pt" 1e-9 "${trained[@]}"
failures=$((failures + compare_failures))
[ "$failures" -eq 0 ] && echo "all runs equal one process within 1e-9 (float64)"
[ "$failures" -eq 0 ]
