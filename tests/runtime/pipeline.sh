#!/usr/bin/env bash
# Pipeline plans in the runtime (docs/pipelines.md): GPT-2 in miniature (2 blocks, width 64,
# 2 heads, 16 tokens, vocabulary 64, the LM head tied to the token embedding; no BatchNorm)
# at global batch 16 in 4 micro-batches, 20 SGD steps with momentum 0.9, against one
# process: in float64 within 1e-9, under GPipe and 1F1B,
#  - 2 stages on 2 workers (the embedding on rank 0, its tied head on rank 1: the weight's
#    gradient is summed over both stages before the one update);
#  - 3 stages on 3 workers, and 4 stages on 4 workers;
#  - 2 stages of 2 data-parallel workers each (micro-batches of 4 split 2 + 2);
#  - gradient accumulation: one stage, data parallel on 2 workers;
#  - burst placements inside 2 stages of 2 workers (a block's MLP, and the head, on one rank);
# the pipeline planner's plan for 2 V100s and the hybrid planner's for 4; and 2 stages on 2
# workers in float32 within 1e-5.
#
# usage: pipeline.sh BURST PYTHON_WITH_TORCH
set -euo pipefail
burst=$1
python=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model="gpt2:layers=2,width=64,heads=2,seq=16,vocab=64"
batch=16
common=(--model "$model" --global-batch "$batch" --steps 20 --seed 7 --lr 0.01 --momentum 0.9 --log-every 20)
failures=0
declare -A trained  # by "DTYPE TOLERANCE": the NAME=FILE of its finished runs, compared at the end
run() {  # NAME TOLERANCE DTYPE ARGS...: trains, to be compared with one process of DTYPE
  local name=$1 tolerance=$2 dtype=$3
  shift 3
  if ! "$burst" train "${common[@]}" --dtype "$dtype" "$@" --save-params "$work/$name.pt" > "$work/$name.log" 2>&1; then
    echo "FAIL: $name: burst train failed: $(tail -n 1 "$work/$name.log")"
    failures=$((failures + 1))
    return
  fi
  trained["$dtype $tolerance"]+=" $name=$work/$name.pt"
}
# Each group's runs against its one-process reference, in one process.
source "$here/compare_runs.sh"
compare_all() {
  local key dtype tolerance runs
  for key in "${!trained[@]}"; do
    read -r dtype tolerance <<< "$key"
    read -r -a runs <<< "${trained[$key]}"
    compare_runs "$python" "$work/one-$dtype.pt" "$tolerance" "${runs[@]}"
    failures=$((failures + compare_failures))
  done
}

for dtype in float64 float32; do
  "$burst" train "${common[@]}" --dtype "$dtype" --save-params "$work/one-$dtype.pt" > "$work/one-$dtype.log" 2>&1 ||
    { cat "$work/one-$dtype.log"; exit 1; }
done

"$burst" model show "$model" --json > "$work/model.json"
python3 - "$work" "$batch" <<'PY'
import json, sys
work, batch = sys.argv[1], int(sys.argv[2])
model = json.load(open(f"{work}/model.json"))
names = [layer["name"] for layer in model["layers"]]
micro_batches = 4
micro = batch // micro_batches
def plan(name, devices, starts, stage_ranks, schedule):
    """Stage k (from layer starts[k-1]) data parallel on stage_ranks[k], micro-batches of 4."""
    layers, stage = [], 0
    for n in names:
        if stage < len(starts) and n == starts[stage]:
            stage += 1
        ranks = stage_ranks[stage]
        shards = [[r, i * micro // len(ranks), (i + 1) * micro // len(ranks)] for i, r in enumerate(ranks)]
        layers.append({"layer": n, "shards": shards})
    json.dump({"format": "burst.plan", "version": 2, "model": model["name"], "strategy": "hand",
               "global_batch": batch, "devices": devices,
               "pipeline": {"micro_batches": micro_batches, "schedule": schedule, "stage_starts": starts},
               "layers": layers}, open(f"{work}/{name}-{schedule}.json", "w"))
for schedule in ("gpipe", "1f1b"):
    plan("two-stages", 2, ["transformer.h.1.ln_1"], [[0], [1]], schedule)
    plan("three-stages", 3, ["transformer.h.0.ln_2", "transformer.h.1.ln_1"], [[0], [1], [2]], schedule)
    plan("four-stages", 4, ["transformer.h.0.ln_2", "transformer.h.1.ln_1", "transformer.h.1.ln_2"],
         [[0], [1], [2], [3]], schedule)
    plan("two-stages-of-two", 4, ["transformer.h.1.ln_1"], [[0, 1], [2, 3]], schedule)
    plan("accumulation", 2, [], [[0, 1]], schedule)
# Burst placements inside stages: stage 0 on ranks 0-1 with its MLP on rank 1 alone, stage 1
# on ranks 2-3 with the tied head on rank 3 alone.
plan("inside", 4, ["transformer.h.1.ln_1"], [[0, 1], [2, 3]], "1f1b")
hybrid = json.load(open(f"{work}/inside-1f1b.json"))
for layer in hybrid["layers"]:
    if layer["layer"].startswith("transformer.h.0.mlp"):
        layer["shards"] = [[1, 0, micro]]
    if layer["layer"] == "lm_head":
        layer["shards"] = [[3, 0, micro]]
json.dump(hybrid, open(f"{work}/burst-inside-stages.json", "w"))
PY
for schedule in gpipe 1f1b; do
  run "two-stages-$schedule" 1e-9 float64 --nproc 2 --plan "$work/two-stages-$schedule.json"
  run "three-stages-$schedule" 1e-9 float64 --nproc 3 --plan "$work/three-stages-$schedule.json"
  run "four-stages-$schedule" 1e-9 float64 --nproc 4 --plan "$work/four-stages-$schedule.json"
  run "two-stages-of-two-$schedule" 1e-9 float64 --nproc 4 --plan "$work/two-stages-of-two-$schedule.json"
done
run "accumulation-1f1b" 1e-9 float64 --nproc 2 --plan "$work/accumulation-1f1b.json"
run "burst-inside-stages-1f1b" 1e-9 float64 --nproc 4 --plan "$work/burst-inside-stages.json"
run "two-stages-1f1b-float32" 1e-5 float32 --nproc 2 --plan "$work/two-stages-1f1b.json"
"$burst" plan --model "$model" --device v100 --devices 2 --global-batch "$batch" --strategy pipeline \
  -o "$work/planned.json" > "$work/planned.log"
echo "the planner's plan: $(grep '^pipeline:' "$work/planned.log" || echo 'data parallel')"
run "pipeline-planner-2" 1e-9 float64 --nproc 2 --plan "$work/planned.json"
"$burst" plan --model "$model" --device v100 --devices 4 --global-batch "$batch" --strategy hybrid \
  -o "$work/hybrid.json" > "$work/hybrid.log"
echo "the hybrid planner's plan: $(grep '^pipeline:' "$work/hybrid.log" || echo 'data parallel')"
run "hybrid-planner-4" 1e-9 float64 --nproc 4 --plan "$work/hybrid.json"
compare_all
[ "$failures" -eq 0 ] && echo "all pipeline runs equal one process"
[ "$failures" -eq 0 ]
