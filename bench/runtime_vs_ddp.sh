#!/usr/bin/env bash
# burst's runtime against PyTorch DDP and a plain libtorch loop, measured side by side in one
# run. Not a test: it prints times and ratios and never fails on speed.
#
#   bench/runtime_vs_ddp.sh            # about 12 minutes on 2 cores; figures: docs/runtime-benchmark.md
#
# Same model, global batch, process count and threads on both sides (1 intra-op thread per
# process, OMP_NUM_THREADS=1), synthetic data, SGD lr 0.01. The DDP peer (bench/ddp_peer.py)
# builds the model from the burst model file, checked against `burst model show --json`,
# with DDP's defaults (gloo, 25 MiB buckets, 1 MiB first bucket) and local BatchNorm.
# Rows, on 2 processes x 1 thread unless said:
#   fmnist_cnn (zoo), at each batch of BATCHES:
#     - burst's data-parallel plan with --batchnorm local vs DDP            goal >= 1.0
#     - the same with --batchnorm sync (statistics over both ranks: the
#       one-device result, which DDP cannot give on CPU) vs DDP              reported beside
#     - without BatchNorm (bench/fmnist_cnn_nobn.json), dp vs DDP            goal >= 1.0
#     - burst --nproc 1 vs build/release/bench/plain_loop, 1 process         goal >= 1.0
#   tests/runtime/resnet_like.json and vgg_like.json, at global batch 16:
#     - burst --plan from `burst plan --profile P --cluster C --batchnorm local`, P measured
#       by `burst profile` and C by bench/measure_cpu_links.py in this run, --batchnorm local
#       vs DDP                                          goal >= 1.2 (resnet_like), info (vgg_like)
#     - the plan for --batchnorm sync, run with it                           reported beside
#     (the script prints how many layers each plan puts on both workers: a plan that
#     differs from data parallelism is what the goal is about)
#     - burst's data-parallel plan, --batchnorm local, vs DDP                info
# Metric: steady-state ms/iteration = the mean per-step time of steps WARMUP+1..STEPS. burst
# logs every LOG steps, each line the mean of the steps since the previous one (steps 1,
# LOG+1, ...: with STEPS 61, WARMUP 21, LOG 10 the lines of steps 31-61 cover steps 22-61);
# DDP and the plain loop time the same span per step (zero_grad, batch, forward, backward,
# optimizer step, loss.item()). Every configuration runs REPEATS times; the table shows the
# medians. Within each repeat the paired configurations run back to back, their order
# alternating between repeats, so machine noise hits both sides.
#
# Environment: BUILD (default build/release), PYTHON (default .venv/bin/python, torch 2.x from scripts/setup.sh),
# STEPS (61), WARMUP (21), LOG (10), REPEATS (3), BATCHES ("16 64"), PLANNED (1: run the
# resnet_like and vgg_like rows; 0: skip them), KEEP (set: keep the logs folder).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build/release}
PYTHON=${PYTHON:-$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python}
STEPS=${STEPS:-61}
WARMUP=${WARMUP:-21}
LOG=${LOG:-10}
REPEATS=${REPEATS:-3}
BATCHES=${BATCHES:-"16 64"}
PLANNED=${PLANNED:-1}
BURST=$BUILD/apps/burst/burst
PLAIN=$BUILD/bench/plain_loop
DDP=$ROOT/bench/ddp_peer.py
MODELS=$ROOT/tests/runtime

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
if (((STEPS - 1) % LOG != 0 || (WARMUP - 1) % LOG != 0 || WARMUP >= STEPS)); then
  echo "runtime_vs_ddp: STEPS - 1 and WARMUP - 1 must be multiples of LOG, WARMUP < STEPS" >&2
  exit 2
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/runtime_vs_ddp.XXXXXX")
if [[ -z ${KEEP:-} ]]; then trap 'rm -rf "$WORK"' EXIT; fi
RESULTS=$WORK/results.tsv  # config  side  repeat  ms  burst's per-rank compute/comm/idle
: >"$RESULTS"

started=$(date +%s)
echo "runtime_vs_ddp: batches $BATCHES, $STEPS steps (mean of the last $((STEPS - WARMUP))), $REPEATS repeats, OMP_NUM_THREADS=1"
echo "machine: $(getconf _NPROCESSORS_ONLN) cores, $(uname -m), load average $(cut -d' ' -f1-3 /proc/loadavg); torch $("$PYTHON" -c 'import torch; print(torch.__version__)')"

# Model files (the zoo's exported), each checked against the DDP peer's model.
"$BURST" model export fmnist_cnn -o "$WORK/fmnist_cnn.json" >/dev/null
declare -A FILE=([fmnist]=$WORK/fmnist_cnn.json [nobn]=$ROOT/bench/fmnist_cnn_nobn.json
                 [resnet]=$MODELS/resnet_like.json [vgg]=$MODELS/vgg_like.json)
for name in "${!FILE[@]}"; do
  "$BURST" model show "${FILE[$name]}" --json >"$WORK/$name.show.json"
  "$PYTHON" "$DDP" --model-file "${FILE[$name]}" --model-json "$WORK/$name.show.json" --check-model
done

# Plans for resnet_like and vgg_like from this machine's measured layer times and link.
if [[ $PLANNED == 1 ]]; then
  echo "measuring the link (bench/measure_cpu_links.py) and profiling resnet_like and vgg_like ..."
  "$PYTHON" "$ROOT/bench/measure_cpu_links.py" "$WORK/cluster.json" 2 | sed 's/^/  /'
  for name in resnet vgg; do
    "$BURST" profile --model "${FILE[$name]}" --batch-sizes 1 2 4 8 16 --threads 1 -o "$WORK/$name.profile.json" \
      >/dev/null 2>&1
    # Planned for the BatchNorm each row runs: local (as DDP's) and sync.
    for bn in local sync; do
      "$BURST" plan --model "${FILE[$name]}" --profile "$WORK/$name.profile.json" --cluster "$WORK/cluster.json" \
        --devices 2 --global-batch 16 --batchnorm $bn -o "$WORK/$name.$bn.plan.json" >"$WORK/$name.$bn.plan.txt"
      echo "$name burst plan, --batchnorm $bn: $("$PYTHON" -c "import json,sys; p=json.load(open(sys.argv[1])); two=sum(len(l['shards'])>1 for l in p['layers']); print(f'{two} of {len(p[\"layers\"])} layers on both workers, the others on one')" "$WORK/$name.$bn.plan.json");" \
        "$(grep -E 'predicted iteration time|data parallel on' "$WORK/$name.$bn.plan.txt" | tr -s ' ' | tr '\n' ';')"
    done
  done
fi

# burst_run CONFIG REPEAT NPROC BATCH MODEL_KEY [BURST ARGS...]: one burst train run.
burst_run() {
  local config=$1 repeat=$2 nproc=$3 gb=$4 model=$5
  shift 5
  local log=$WORK/$config.burst.$repeat.log
  "$BURST" train --model "${FILE[$model]}" --global-batch "$gb" --steps "$STEPS" --nproc "$nproc" --threads 1 \
    --log-every "$LOG" "$@" >"$log" 2>&1 || { echo "burst failed, see $log:" >&2; tail -5 "$log" >&2; exit 1; }
  # Step lines: `step N ... X ms/iter  compute/comm/idle ms: r0 C/M/I r1 C/M/I`, each the mean
  # of the LOG steps before it; lines after the warm-up are averaged.
  awk -v warmup="$WARMUP" -v config="$config" -v repeat="$repeat" '
    /^step / && $2 > warmup {
      for (i = 1; i <= NF; i++) {
        if ($i == "ms/iter") ms += $(i - 1)
        if ($i ~ /^r[0-9]+$/ && $(i + 1) ~ /\//) {
          split($(i + 1), part, "/"); r = substr($i, 2) + 0; ranks = r + 1 > ranks ? r + 1 : ranks
          c[r] += part[1]; m[r] += part[2]; d[r] += part[3]
        }
      }
      n++
    }
    END {
      if (n == 0) exit 1
      text = ""
      for (r = 0; r < ranks; r++) text = text sprintf("%sr%d %.1f/%.1f/%.1f", r ? " " : "", r, c[r] / n, m[r] / n, d[r] / n)
      printf "%s\tburst\t%s\t%.3f\t%s\n", config, repeat, ms / n, text
    }' "$log" >>"$RESULTS"
}

# peer_run CONFIG REPEAT KIND BATCH MODEL_KEY: DDP on 2 processes or the plain loop on 1.
peer_run() {
  local config=$1 repeat=$2 kind=$3 gb=$4 model=$5
  local log=$WORK/$config.$kind.$repeat.log
  if [[ $kind == ddp ]]; then
    "$PYTHON" "$DDP" --model-file "${FILE[$model]}" --nproc 2 --threads 1 --global-batch "$gb" --steps "$STEPS" \
      --warmup "$WARMUP" >"$log" 2>&1 || { echo "ddp failed, see $log:" >&2; tail -5 "$log" >&2; exit 1; }
  else
    "$PLAIN" --model "${FILE[$model]}" --global-batch "$gb" --steps "$STEPS" --warmup "$WARMUP" --threads 1 >"$log" 2>&1 ||
      { echo "plain_loop failed, see $log:" >&2; tail -5 "$log" >&2; exit 1; }
  fi
  local ms
  ms=$(sed -n 's/.*steady ms\/iter \([0-9.]*\).*/\1/p' "$log")
  [[ -n $ms ]] || { echo "no steady ms/iter in $log" >&2; exit 1; }
  printf '%s\t%s\t%s\t%s\t-\n' "$config" "$kind" "$repeat" "$ms" >>"$RESULTS"
}

# in_order REPEAT JOB...: runs the jobs back to back, reversed in even repeats.
in_order() {
  local repeat=$1
  shift
  local jobs=("$@") j
  if ((repeat % 2 == 0)); then
    for ((j = ${#jobs[@]} - 1; j >= 0; j--)); do ${jobs[j]}; done
  else
    for ((j = 0; j < ${#jobs[@]}; j++)); do ${jobs[j]}; done
  fi
}

for ((r = 1; r <= REPEATS; r++)); do
  for gb in $BATCHES; do
    in_order "$r" "burst_run dpL$gb $r 2 $gb fmnist --batchnorm local" "peer_run ddp$gb $r ddp $gb fmnist" \
      "burst_run dpS$gb $r 2 $gb fmnist --batchnorm sync"
    in_order "$r" "burst_run nobn$gb $r 2 $gb nobn" "peer_run nobn$gb $r ddp $gb nobn"
    in_order "$r" "burst_run one$gb $r 1 $gb fmnist" "peer_run one$gb $r plain $gb fmnist"
  done
  if [[ $PLANNED == 1 ]]; then
    for name in resnet vgg; do
      in_order "$r" "burst_run ${name}B $r 2 16 $name --plan $WORK/$name.local.plan.json --batchnorm local" \
        "peer_run ${name}16 $r ddp 16 $name" "burst_run ${name}S $r 2 16 $name --plan $WORK/$name.sync.plan.json" \
        "burst_run ${name}D $r 2 16 $name --batchnorm local"
    done
  fi
  echo "repeat $r of $REPEATS done ($(($(date +%s) - started)) s, load average $(cut -d' ' -f1 /proc/loadavg))"
done

# The table: medians over the repeats; ratio = peer / burst (> 1: burst is faster).
"$PYTHON" - "$RESULTS" "$BATCHES" "$PLANNED" <<'EOF'
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
batches = sys.argv[2].split()
planned = sys.argv[3] == "1"

def values(config, side):
    return [float(r[3]) for r in rows if r[0] == config and r[1] == side]

def median_split(config):
    """The per-rank compute/comm/idle of the run with the median ms/iter (the lower middle)."""
    runs = sorted((float(r[3]), r[4]) for r in rows if r[0] == config and r[1] == "burst")
    return runs[(len(runs) - 1) // 2][1]

table = []
for gb in batches:
    table.append((f"fmnist dp, bn local vs DDP, gb {gb}", f"dpL{gb}", f"ddp{gb}", "ddp", 1.0))
    table.append((f"fmnist dp, bn sync vs DDP, gb {gb}", f"dpS{gb}", f"ddp{gb}", "ddp", None))
    table.append((f"fmnist no-BN dp vs DDP, gb {gb}", f"nobn{gb}", f"nobn{gb}", "ddp", 1.0))
    table.append((f"1 proc vs plain loop, gb {gb}, 1x1", f"one{gb}", f"one{gb}", "plain", 1.0))
if planned:
    for name, goal in (("resnet", 1.2), ("vgg", None)):
        table.append((f"{name}_like burst plan, bn local vs DDP", f"{name}B", f"{name}16", "ddp", goal))
        table.append((f"{name}_like burst plan, bn sync vs DDP", f"{name}S", f"{name}16", "ddp", None))
        table.append((f"{name}_like dp, bn local vs DDP", f"{name}D", f"{name}16", "ddp", None))

head = (f"{'config':<40} {'burst ms/iter':>13} {'peer ms/iter':>12} {'ratio':>6} {'goal':>7} {'met':>4}"
        f"  {'paired':>11}  burst compute/comm/idle ms per rank (median run)")
print()
print(head)
print("-" * len(head))
for label, burst, peer, side, goal in table:
    b, p = statistics.median(values(burst, "burst")), statistics.median(values(peer, side))
    ratio = p / b
    goal_text = f">={goal:.2f}" if goal else "-"
    met = ("yes" if ratio >= goal else "no") if goal else "-"
    pairs = [q / c for q, c in zip(values(peer, side), values(burst, "burst"))]
    spread = f"{min(pairs):.2f}-{max(pairs):.2f}"
    print(f"{label:<40} {b:>13.2f} {p:>12.2f} {ratio:>6.2f} {goal_text:>7} {met:>4}  {spread:>11}  {median_split(burst)}")
print()
print("ratio = median peer ms/iter / median burst ms/iter over the repeats (> 1: burst is faster); paired:")
print("the lowest and highest ratio of runs made back to back in one repeat.")
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
