#!/usr/bin/env bash
# Launches without burst's launcher (docs/runtime.md, "Job files"): 2 ranks started the
# torchrun way (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT) and the
# Slurm way (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID) each resolve the job from the same
# command line and train as `--nproc 2` does, whose workers read one job file: the saved
# parameters are bitwise the same. Data parallel, and a burst plan each rank makes from the
# same given cost model (--device). One extra check: a resumed run under the torchrun way
# ends where the uninterrupted one does.
#
# usage: env_launch.sh BURST PYTHON_WITH_TORCH MODEL_DIR
set -euo pipefail
burst=$1
python=$2
models=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(--model "$models/resnet_like.json" --global-batch 8 --seed 3 --lr 0.01 --dtype float64 --log-every 100)
failures=0

free_port() { "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# RANKS_WAY OUT ARGS...: 2 ranks launched by environment variables alone, in the background.
two_ranks() {
  local way=$1 out=$2
  shift 2
  local port
  port=$(free_port)
  local pids=()
  for rank in 0 1; do
    if [ "$way" = torchrun ]; then
      RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        "$burst" train "${common[@]}" "$@" > "$work/$out.$rank.log" 2>&1 &
    else
      SLURM_PROCID=$rank SLURM_NTASKS=2 SLURM_LOCALID=$rank MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        "$burst" train "${common[@]}" "$@" > "$work/$out.$rank.log" 2>&1 &
    fi
    pids+=($!)
  done
  local rc=0
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  if [ $rc -ne 0 ]; then
    echo "FAIL: $way ranks of burst train $* failed:"
    tail -n 5 "$work/$out".*.log | sed 's/^/    | /'
    exit 1
  fi
}

launcher() {  # OUT ARGS...: the same with --nproc 2
  local out=$1
  shift
  if ! "$burst" train "${common[@]}" --nproc 2 "$@" > "$work/$out.log" 2>&1; then
    echo "FAIL: burst train --nproc 2 $* failed:"
    tail -n 5 "$work/$out.log" | sed 's/^/    | /'
    exit 1
  fi
}

launcher nproc_dp --steps 4 --save-params "$work/nproc_dp.pt"
two_ranks torchrun torchrun_dp --steps 4 --save-params "$work/torchrun_dp.pt"
two_ranks slurm slurm_dp --steps 4 --save-params "$work/slurm_dp.pt"
launcher nproc_burst --steps 4 --strategy burst --cost-device v100 --save-params "$work/nproc_burst.pt"
two_ranks torchrun torchrun_burst --steps 4 --strategy burst --cost-device v100 --save-params "$work/torchrun_burst.pt"
two_ranks torchrun resumed_part1 --steps 2 --checkpoint-dir "$work/ckpt"
two_ranks torchrun resumed --steps 4 --checkpoint-dir "$work/ckpt" --resume --save-params "$work/resumed.pt"

"$python" "$here/compare_params.py" --many "$work/nproc_dp.pt" 0 \
  "torchrun ranks, data parallel=$work/torchrun_dp.pt" "slurm ranks, data parallel=$work/slurm_dp.pt" \
  "torchrun ranks resumed at step 2=$work/resumed.pt" || failures=$((failures + 1))
"$python" "$here/compare_params.py" --many "$work/nproc_burst.pt" 0 \
  "torchrun ranks, burst plan from --device v100=$work/torchrun_burst.pt" || failures=$((failures + 1))
grep -q "resumed from step 2" "$work/resumed.0.log" || { echo "FAIL: the resumed run did not say so"; failures=$((failures + 1)); }
if [ $failures -ne 0 ]; then
  echo "env_launch: $failures comparison(s) failed"
  exit 1
fi
echo "env_launch: ranks launched by torchrun's and Slurm's variables train as --nproc 2 does (bitwise)"
