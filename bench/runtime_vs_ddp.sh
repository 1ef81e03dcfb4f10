#!/usr/bin/env bash
# burst's runtime against PyTorch DDP and a plain libtorch loop (issue 5, item 6), measured side
# by side in one run. Not a test: it prints times and ratios and never fails on speed.
#
#   bench/runtime_vs_ddp.sh            # about 5 minutes on 2 cores; figures: docs/runtime-benchmark.md
#
# Same model (zoo fmnist_cnn, synthetic [1,28,28] data, 10 classes), global batch, process
# count and threads everywhere (1 intra-op thread per process, OMP_NUM_THREADS=1), SGD lr 0.01:
#   1. burst train, data-parallel plan (the default)  vs  DDP (gloo, bench/ddp_peer.py: the
#      model built from the burst model file, checked against `burst model show --json`)
#   2. burst train --plan from `burst plan --device v100 --devices 2`  vs  the same DDP
#      at global batch 16 and 64 on 2 processes x 1 thread;
#   3. burst train --nproc 1  vs  build/release/bench/plain_loop (graph-built modules, SGD)
#      at the same batches, 1 process x 1 thread.
#   info rows (no goal):
#    - without BatchNorm (bench/fmnist_cnn_nobn.json: fmnist_cnn less bn1 and bn2), burst's
#      data-parallel plan vs DDP on the same reduced model, at each batch: tells the cost of
#      burst's synchronised BatchNorm (DDP's BatchNorm is local) apart from the rest;
#    - a mixed plan (`burst plan ... --amplification 1.2 --strict-amplification` at batch 64:
#      layers on 2 ranks and on 1, so re-sharding messages) against the same DDP.
# Metric: steady-state ms/iteration = the mean of the per-step times of steps WARMUP+1..STEPS
# (burst: rank 0's `ms/iter` log lines; DDP and the plain loop time the same span per step:
# zero_grad, batch, forward, backward, optimizer step, loss.item()). Every configuration runs
# REPEATS times; the table shows the medians. Within each repeat the paired configurations run
# back to back, their order alternating between repeats, so machine noise hits both sides.
#
# Environment: BUILD (default build/release), PYTHON (default /usr/bin/python3, needs torch),
# STEPS (60), WARMUP (20), REPEATS (3), BATCHES ("16 64"), NOBN and MIXED (1: run those info
# rows; 0: skip them), KEEP (set: keep the logs folder and print its path).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build/release}
PYTHON=${PYTHON:-/usr/bin/python3}
STEPS=${STEPS:-60}
WARMUP=${WARMUP:-20}
REPEATS=${REPEATS:-3}
BATCHES=${BATCHES:-"16 64"}
MIXED=${MIXED:-1}
NOBN=${NOBN:-1}
MODEL=fmnist_cnn
NOBN_MODEL=$ROOT/bench/fmnist_cnn_nobn.json
BURST=$BUILD/apps/burst/burst
PLAIN=$BUILD/bench/plain_loop
DDP=$ROOT/bench/ddp_peer.py

export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

for exe in "$BURST" "$PLAIN"; do
  if [[ ! -x $exe ]]; then
    echo "runtime_vs_ddp: $exe is missing: ninja -C $BUILD burst plain_loop (needs libtorch)" >&2
    exit 2
  fi
done
if ! "$PYTHON" -c 'import torch' 2>/dev/null; then
  echo "runtime_vs_ddp: $PYTHON has no torch (set PYTHON to one that has)" >&2
  exit 2
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/runtime_vs_ddp.XXXXXX")
if [[ -z ${KEEP:-} ]]; then trap 'rm -rf "$WORK"' EXIT; fi
RESULTS=$WORK/results.tsv  # config  side  repeat  ms  burst's per-rank compute/comm/idle
: >"$RESULTS"

started=$(date +%s)
echo "runtime_vs_ddp: $MODEL, batches $BATCHES, $STEPS steps (mean of the last $((STEPS - WARMUP))), $REPEATS repeats, OMP_NUM_THREADS=1"
echo "machine: $(getconf _NPROCESSORS_ONLN) cores, $(uname -m), load average $(cut -d' ' -f1-3 /proc/loadavg); torch $("$PYTHON" -c 'import torch; print(torch.__version__)')"

# The PyTorch model is built from burst's model file and must be burst's, layer by layer.
MODEL_FILE=$WORK/model_file.json
exported=$("$BURST" model export "$MODEL" -o "$MODEL_FILE" 2>&1) || { echo "$exported" >&2; exit 1; }
"$BURST" model show "$MODEL" --json >"$WORK/model.json"
"$PYTHON" "$DDP" --model-file "$MODEL_FILE" --model-json "$WORK/model.json" --check-model
if [[ $NOBN == 1 ]]; then
  "$BURST" model show "$NOBN_MODEL" --json >"$WORK/model_nobn.json"
  "$PYTHON" "$DDP" --model-file "$NOBN_MODEL" --model-json "$WORK/model_nobn.json" --check-model
fi
zoo_params=$("$BURST" models --json | "$PYTHON" -c "import json,sys; print([m['params'] for m in json.load(sys.stdin) if m['name']=='$MODEL'][0])")
echo "burst models --json: $MODEL has $zoo_params parameters"

# Plans: the burst planner's, on the v100 cost model; and the mixed one for the info row.
for gb in $BATCHES; do
  "$BURST" plan --model "$MODEL" --device v100 --devices 2 --global-batch "$gb" -o "$WORK/burst$gb.json" >/dev/null
  "$BURST" plan --model "$MODEL" --strategy dp --devices 2 --device v100 --global-batch "$gb" -o "$WORK/dp$gb.json" >/dev/null
  same=$("$PYTHON" -c "import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); print('the same shards as data parallel' if a['layers']==b['layers'] else 'differs from data parallel')" "$WORK/burst$gb.json" "$WORK/dp$gb.json")
  echo "burst plan (v100 cost model, 2 devices, batch $gb): $same"
done
if [[ $MIXED == 1 ]]; then
  "$BURST" plan --model "$MODEL" --device v100 --devices 2 --global-batch 64 --amplification 1.2 \
    --strict-amplification -o "$WORK/mixed64.json" >/dev/null
  echo "mixed plan (batch 64): $("$PYTHON" -c "import json,sys; p=json.load(open(sys.argv[1])); print(', '.join(l['layer']+(' x2' if len(l['shards'])>1 else ' x1') for l in p['layers']))" "$WORK/mixed64.json")"
fi

# burst_run CONFIG REPEAT NPROC BATCH [PLAN|nobn]: one burst train run; records its steady means.
burst_run() {
  local config=$1 repeat=$2 nproc=$3 gb=$4 plan=${5:-} model=$MODEL
  local log=$WORK/$config.burst.$repeat.log
  if [[ $plan == nobn ]]; then model=$NOBN_MODEL; plan=; fi
  local args=(train --model "$model" --global-batch "$gb" --steps "$STEPS" --nproc "$nproc" --threads 1 --log-every 1)
  [[ -n $plan ]] && args+=(--plan "$plan")
  "$BURST" "${args[@]}" >"$log" 2>&1 || { echo "burst failed, see $log:" >&2; tail -5 "$log" >&2; exit 1; }
  # Step lines: `... X ms/iter  compute/comm/idle ms: r0 C/M/I r1 C/M/I` (older builds:
  # `(rank 0: compute C ms, communication M ms)`); the split is averaged per rank.
  awk -v warmup="$WARMUP" -v config="$config" -v repeat="$repeat" '
    /^step / && $2 > warmup {
      for (i = 1; i <= NF; i++) {
        if ($i == "ms/iter") ms += $(i - 1)
        if ($i ~ /^r[0-9]+$/ && $(i + 1) ~ /\//) {
          split($(i + 1), part, "/"); r = substr($i, 2) + 0; ranks = r + 1 > ranks ? r + 1 : ranks
          c[r] += part[1]; m[r] += part[2]; d[r] += part[3]; style = "new"
        }
        if ($i == "compute") { c[0] += $(i + 1); ranks = 1 }
        if ($i == "communication") m[0] += $(i + 1)
      }
      n++
    }
    END {
      if (n == 0) exit 1
      text = ""
      for (r = 0; r < ranks; r++) {
        idle = style == "new" ? sprintf("%.1f", d[r] / n) : "-"
        text = text sprintf("%sr%d %.1f/%.1f/%s", r ? " " : "", r, c[r] / n, m[r] / n, idle)
      }
      printf "%s\tburst\t%s\t%.3f\t%s\n", config, repeat, ms / n, text
    }' "$log" >>"$RESULTS"
}

# peer_run CONFIG REPEAT KIND BATCH [nobn]: DDP on 2 processes or the plain loop on 1.
peer_run() {
  local config=$1 repeat=$2 kind=$3 gb=$4 file=$MODEL_FILE
  local log=$WORK/$config.$kind.$repeat.log
  [[ ${5:-} == nobn ]] && file=$NOBN_MODEL
  if [[ $kind == ddp ]]; then
    "$PYTHON" "$DDP" --model-file "$file" --nproc 2 --threads 1 --global-batch "$gb" --steps "$STEPS" --warmup "$WARMUP" >"$log" 2>&1 ||
      { echo "ddp failed, see $log:" >&2; tail -5 "$log" >&2; exit 1; }
  else
    "$PLAIN" --model "$MODEL" --global-batch "$gb" --steps "$STEPS" --warmup "$WARMUP" --threads 1 >"$log" 2>&1 ||
      { echo "plain_loop failed, see $log:" >&2; tail -5 "$log" >&2; exit 1; }
  fi
  local ms
  ms=$(sed -n 's/.*steady ms\/iter \([0-9.]*\).*/\1/p' "$log")
  [[ -n $ms ]] || { echo "no steady ms/iter in $log" >&2; exit 1; }
  printf '%s\t%s\t%s\t%s\t-\n' "$config" "$kind" "$repeat" "$ms" >>"$RESULTS"
}

# Each DDP run serves both rows 1 and 2 of its batch (and the info row at 64): within a
# repeat they run back to back, in an order that alternates between repeats.
for ((r = 1; r <= REPEATS; r++)); do
  for gb in $BATCHES; do
    jobs=("burst_run dp$gb $r 2 $gb" "burst_run burst$gb $r 2 $gb $WORK/burst$gb.json"
          "peer_run ddp$gb $r ddp $gb")
    [[ $MIXED == 1 && $gb == 64 ]] && jobs+=("burst_run mixed64 $r 2 64 $WORK/mixed64.json")
    if ((r % 2 == 0)); then
      for ((j = ${#jobs[@]} - 1; j >= 0; j--)); do ${jobs[j]}; done
    else
      for ((j = 0; j < ${#jobs[@]}; j++)); do ${jobs[j]}; done
    fi
    if ((r % 2 == 0)); then
      peer_run one$gb "$r" plain "$gb"; burst_run one$gb "$r" 1 "$gb"
    else
      burst_run one$gb "$r" 1 "$gb"; peer_run one$gb "$r" plain "$gb"
    fi
    if [[ $NOBN == 1 ]]; then
      if ((r % 2 == 0)); then
        peer_run nobn$gb "$r" ddp "$gb" nobn; burst_run nobn$gb "$r" 2 "$gb" nobn
      else
        burst_run nobn$gb "$r" 2 "$gb" nobn; peer_run nobn$gb "$r" ddp "$gb" nobn
      fi
    fi
  done
  echo "repeat $r of $REPEATS done ($(($(date +%s) - started)) s, load average $(cut -d' ' -f1 /proc/loadavg))"
done

# The table: medians over the repeats; ratio = peer / burst (> 1: burst is faster).
"$PYTHON" - "$RESULTS" "$BATCHES" "$MIXED" "$NOBN" <<'EOF'
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
batches = sys.argv[2].split()
mixed = sys.argv[3] == "1"
nobn = sys.argv[4] == "1"

def values(config, side):
    return [float(r[3]) for r in rows if r[0] == config and r[1] == side]

def median(config, side):
    return statistics.median(values(config, side))

def median_split(config):
    """The per-rank compute/comm/idle of the run with the median ms/iter (the lower middle)."""
    runs = sorted((float(r[3]), r[4]) for r in rows if r[0] == config and r[1] == "burst")
    return runs[(len(runs) - 1) // 2][1]

table = []
for gb in batches:
    table.append((f"dp plan vs DDP, gb {gb}, 2x1", f"dp{gb}", f"ddp{gb}", "ddp", 1.0))
for gb in batches:
    table.append((f"burst plan vs DDP, gb {gb}, 2x1", f"burst{gb}", f"ddp{gb}", "ddp", 1.0))
for gb in batches:
    table.append((f"1 proc vs plain loop, gb {gb}, 1x1", f"one{gb}", f"one{gb}", "plain", 0.95))
if nobn:
    for gb in batches:
        table.append((f"no-BN model, dp vs DDP, gb {gb} (info)", f"nobn{gb}", f"nobn{gb}", "ddp", None))
if mixed and "64" in batches:
    table.append(("mixed plan vs DDP, gb 64, 2x1 (info)", "mixed64", "ddp64", "ddp", None))

head = (f"{'config':<38} {'burst ms/iter':>13} {'peer ms/iter':>12} {'ratio':>6} {'goal':>7} {'met':>4}"
        f"  {'paired':>11}  burst compute/comm/idle ms per rank (median run)")
print()
print(head)
print("-" * len(head))
for label, burst, peer, side, goal in table:
    b, p = median(burst, "burst"), median(peer, side)
    ratio = p / b
    goal_text = f">={goal:.2f}" if goal else "-"
    met = ("yes" if ratio >= goal else "no") if goal else "-"
    split = median_split(burst)
    pairs = [q / c for q, c in zip(values(peer, side), values(burst, "burst"))]
    spread = f"{min(pairs):.2f}-{max(pairs):.2f}"
    print(f"{label:<38} {b:>13.2f} {p:>12.2f} {ratio:>6.2f} {goal_text:>7} {met:>4}  {spread:>11}  {split}")
print()
print("ratio = median peer ms/iter / median burst ms/iter over the repeats (> 1: burst is faster); paired:")
print("the lowest and highest ratio of runs made back to back in one repeat; goals from issue 5.")
print("repeats (ms/iter, in run order):")
seen = []
for r in rows:
    if (r[0], r[1]) not in seen:
        seen.append((r[0], r[1]))
for config, side in seen:
    print(f"  {config:<8} {side:<5} " + "  ".join(f"{v:7.2f}" for v in values(config, side)))
EOF
echo "total $(($(date +%s) - started)) s"
if [[ -n ${KEEP:-} ]]; then echo "logs in $WORK"; fi
