#!/usr/bin/env bash
# burst's pipeline plans against torch.distributed.pipelining (torch 2.x), measured side by
# side in one run. Not a test: it prints times and ratios and never fails on speed.
#
#   bench/pipeline_vs_pipelining.sh     # about 6 minutes on 2 cores; figures: docs/pipelines.md
#
# Both sides: the same GPT-2 in miniature (tests/runtime/pipeline.sh's: 2 blocks, width 64,
# 2 heads, 16 tokens, vocabulary 64, head tied to the token embedding) and a larger one
# (4 blocks, width 256, 4 heads, 64 tokens, vocabulary 512), 2 processes, one stage each cut
# before block 1's (or block 2's) first LayerNorm, global batch 16 in 4 micro-batches,
# 1 intra-op thread per process, synthetic data, SGD lr 0.01.
#   - burst: `burst train --nproc 2 --plan P`, P a 2-stage pipeline plan under GPipe or 1F1B;
#   - peer: bench/pipelining_peer.py, PipelineStage under ScheduleGPipe or Schedule1F1B over
#     gloo (each stage trains its own copy of the tied weight: the peer has no ties across
#     stages);
#   - info: burst's own pipeline planner's plan for 2 CPU workers (`burst plan --strategy
#     pipeline` on a profile measured here), beside them.
# Metric: steady-state ms/iteration, the mean step time of steps WARMUP+1..STEPS (burst: its
# log lines after the warm-up; the peer: rank 0's steps). Each pair runs REPEATS times, back
# to back, the order alternating between repeats; the table shows medians and each ratio
# peer / burst (> 1: burst is faster).
#
# Environment: BUILD (build/release), PYTHON (.venv/bin/python), STEPS (61), WARMUP (21),
# LOG (10), REPEATS (3), KEEP (set: keep the logs folder).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build/release}
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
STEPS=${STEPS:-61}
WARMUP=${WARMUP:-21}
LOG=${LOG:-10}
REPEATS=${REPEATS:-3}
BURST=$BUILD/apps/burst/burst
BATCH=16
MICRO=4
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

[[ -x $BURST ]] || { echo "pipeline_vs_pipelining: $BURST is missing (scripts/build.sh release)" >&2; exit 2; }
WORK=$(mktemp -d)
if [[ -z ${KEEP:-} ]]; then trap 'rm -rf "$WORK"' EXIT; else echo "logs in $WORK" >&2; fi
RESULTS=$WORK/results.tsv

# name | zoo spec | the first layer of stage 2
models=(
  "tiny|gpt2:layers=2,width=64,heads=2,seq=16,vocab=64|transformer.h.1.ln_1"
  "small|gpt2:layers=4,width=256,heads=4,seq=64,vocab=512|transformer.h.2.ln_1"
)

# hand_plan NAME SPEC CUT SCHEDULE: the 2-stage plan, each stage on one rank (micro-batches of 4).
hand_plan() {
  "$BURST" model show "$2" --json >"$WORK/$1.show.json"
  python3 - "$WORK/$1.show.json" "$3" "$4" "$BATCH" "$MICRO" "$WORK/$1.$4.plan.json" <<'PY'
import json, sys
show, cut, schedule, batch, micro_batches, out = sys.argv[1:7]
model = json.load(open(show))
batch, micro_batches = int(batch), int(micro_batches)
micro, stage, layers = batch // micro_batches, 0, []
for layer in model["layers"]:
    stage = 1 if layer["name"] == cut else stage
    layers.append({"layer": layer["name"], "shards": [[stage, 0, micro]]})
json.dump({"format": "burst.plan", "version": 2, "model": model["name"], "strategy": "hand",
           "global_batch": batch, "devices": 2,
           "pipeline": {"micro_batches": micro_batches, "schedule": schedule, "stage_starts": [cut]},
           "layers": layers}, open(out, "w"))
PY
}

# burst_run CONFIG REPEAT SPEC PLAN: steady ms/iter of `burst train --plan PLAN`.
burst_run() {
  local log=$WORK/$1.burst.$2.log
  "$BURST" train --model "$3" --plan "$4" --steps "$STEPS" --nproc 2 --threads 1 --log-every "$LOG" >"$log" 2>&1 ||
    { echo "burst failed, see $log:" >&2; tail -5 "$log" >&2; exit 1; }
  awk -v warmup="$WARMUP" -v config="$1" -v repeat="$2" '
    /^step / && $2 > warmup { for (i = 1; i <= NF; i++) if ($i == "ms/iter") ms += $(i - 1); n++ }
    END { if (n == 0) exit 1; printf "%s\tburst\t%s\t%.3f\n", config, repeat, ms / n }' "$log" >>"$RESULTS"
}

# peer_run CONFIG REPEAT MODEL_FILE CUT SCHEDULE: steady ms/iter of the pipelining peer.
peer_run() {
  local log=$WORK/$1.peer.$2.log
  "$PYTHON" "$ROOT/bench/pipelining_peer.py" --model-file "$3" --stage-starts "$4" --schedule "$5" \
    --micro-batches "$MICRO" --global-batch "$BATCH" --steps "$STEPS" --warmup "$WARMUP" >"$log" 2>&1 ||
    { echo "peer failed, see $log:" >&2; tail -5 "$log" >&2; exit 1; }
  local ms
  ms=$(sed -n 's/.*steady ms\/iter \([0-9.]*\).*/\1/p' "$log")
  [[ -n $ms ]] || { echo "no steady ms/iter in $log" >&2; exit 1; }
  printf '%s\tpeer\t%s\t%s\n' "$1" "$2" "$ms" >>"$RESULTS"
}

for entry in "${models[@]}"; do
  IFS='|' read -r name spec cut <<< "$entry"
  "$BURST" model export "$spec" -o "$WORK/$name.model.json" >/dev/null
  "$BURST" model show "$spec" --json >"$WORK/$name.show.json"
  "$PYTHON" "$ROOT/bench/ddp_peer.py" --model-file "$WORK/$name.model.json" --model-json "$WORK/$name.show.json" \
    --check-model >&2
  for schedule in gpipe 1f1b; do hand_plan "$name" "$spec" "$cut" "$schedule"; done
  # burst's pipeline planner on this machine's measured layers, for the row beside them.
  "$BURST" profile --model "$spec" --batch-sizes 1,2,4,8,16 -o "$WORK/$name.profile.json" 2>/dev/null
  "$BURST" plan --model "$spec" --profile "$WORK/$name.profile.json" --devices 2 --global-batch "$BATCH" \
    --strategy pipeline -o "$WORK/$name.planned.json" >"$WORK/$name.planned.txt"
  echo "$name: burst's pipeline planner: $(grep -E '^(pipeline|predicted iteration time):' "$WORK/$name.planned.txt" | tr -s ' ' | tr '\n' ';')" >&2
done

for repeat in $(seq 1 "$REPEATS"); do
  for entry in "${models[@]}"; do
    IFS='|' read -r name spec cut <<< "$entry"
    for schedule in gpipe 1f1b; do
      config="$name-$schedule"
      echo "repeat $repeat/$REPEATS: $config" >&2
      if (( repeat % 2 )); then
        burst_run "$config" "$repeat" "$spec" "$WORK/$name.$schedule.plan.json"
        peer_run "$config" "$repeat" "$WORK/$name.model.json" "$cut" "$schedule"
      else
        peer_run "$config" "$repeat" "$WORK/$name.model.json" "$cut" "$schedule"
        burst_run "$config" "$repeat" "$spec" "$WORK/$name.$schedule.plan.json"
      fi
    done
    burst_run "$name-planned" "$repeat" "$spec" "$WORK/$name.planned.json"
  done
done

python3 - "$RESULTS" "$REPEATS" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(lambda: collections.defaultdict(list))
order = []
for line in open(sys.argv[1]):
    config, side, _, ms = line.rstrip("\n").split("\t")
    if config not in order:
        order.append(config)
    rows[config][side].append(float(ms))
print(f"{'config':<16} {'burst ms/iter':>13} {'peer ms/iter':>12} {'peer/burst':>10}   repeats (burst | peer)")
for config in order:
    burst, peer = rows[config]["burst"], rows[config].get("peer", [])
    b = statistics.median(burst)
    p = statistics.median(peer) if peer else None
    ratio = f"{p / b:.2f}" if p else "-"
    runs = " ".join(f"{x:.1f}" for x in burst) + (" | " + " ".join(f"{x:.1f}" for x in peer) if peer else "")
    print(f"{config:<16} {b:>13.2f} {(f'{p:.2f}' if p else '-'):>12} {ratio:>10}   {runs}")
print(f"medians of {sys.argv[2]} repeats; peer/burst > 1: burst is faster; *-planned: burst's pipeline planner's plan")
PY
