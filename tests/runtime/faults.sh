#!/usr/bin/env bash
# Faults (docs/runtime.md, "Faults and restarts"), on resnet_like with 2 workers:
#  - a worker killed with SIGKILL mid-training: the run ends within 60 s with exit code 1
#    (a failed run, docs/architecture.md, "Errors and exit codes") and one line naming the
#    rank and the step it was in; no process is left; the last
#    complete checkpoint still loads (a resumed run finishes from it);
#  - a worker stopped with SIGSTOP (a hang): the other gives up after --timeout (10 s
#    here), the run ends within 60 s with exit code 1 and one line naming what it waited
#    for and the rank that did not answer; no process is left;
#  - bad files still exit 2 (bad input), and so does a worker that finds its input bad after
#    the launcher's checks;
#  - with --max-restarts 1, a worker killed once: the launcher restarts both from the latest
#    checkpoint, the run completes, and its parameters equal an uninterrupted run's within
#    1e-5 (bitwise, in fact, on the same plan).
#
# usage: faults.sh BURST PYTHON_WITH_TORCH MODEL_DIR
set -uo pipefail
burst=$1
python=$2
model="$3/resnet_like.json"
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'pkill -KILL -f -- "$work" 2>/dev/null; rm -rf "$work"' EXIT
common=(--model "$model" --global-batch 16 --seed 7 --lr 0.005 --momentum 0.9 --dataset synthetic --nproc 2
        --timeout 10 --log-every 1)
failures=0
checks=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Starts a run in the background (its output under $work/NAME.*); sets `launcher`.
start() {  # NAME ARGS...
  local name=$1
  shift
  "$burst" train "${common[@]}" "$@" > "$work/$name.out" 2> "$work/$name.err" &
  launcher=$!
}
# Waits until the log of NAME shows step S (at most 120 s).
wait_for_step() {  # NAME STEP
  local deadline=$((SECONDS + 120))
  until grep -qE "^step +$2 " "$work/$1.out" 2>/dev/null; do
    if [ $SECONDS -ge $deadline ] || ! kill -0 "$launcher" 2>/dev/null; then return 1; fi
    sleep 0.2
  done
}
# The pid of the worker of rank R under the current launcher.
worker_pid() {  # RANK
  local pid
  for pid in $(pgrep -P "$launcher"); do
    if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "RANK=$1"; then echo "$pid"; return; fi
  done
}
# Waits for the launcher; checks it ended within 60 s of `since`, with exit code 1, one line
# on stderr containing each expected text, and no process of this run left.
check_ended() {  # NAME SINCE TEXT...
  local name=$1 since=$2
  shift 2
  wait "$launcher"
  local rc=$? elapsed=$((SECONDS - since))
  checks=$((checks + 1))
  local problems=()
  [ "$rc" -eq 1 ] || problems+=("exit code $rc, expected 1")
  [ "$elapsed" -le 60 ] || problems+=("took $elapsed s after the fault, more than 60")
  [ "$(wc -l < "$work/$name.err")" -eq 1 ] || problems+=("$(wc -l < "$work/$name.err") lines on stderr, expected 1")
  local text
  for text in "$@"; do grep -qF -- "$text" "$work/$name.err" || problems+=("stderr lacks '$text'"); done
  sleep 1
  if pgrep -f -- "$work" > /dev/null; then problems+=("processes left: $(pgrep -f -- "$work" | tr '\n' ' ')"); fi
  if [ ${#problems[@]} -eq 0 ]; then
    echo "ok: $name: ended $elapsed s after the fault: $(cat "$work/$name.err")"
  else
    fail "$name: ${problems[*]}"
    sed 's/^/    | /' "$work/$name.err"
  fi
}

# --- SIGKILL, then the last complete checkpoint resumes -------------------------------------
start killed --steps 400 --checkpoint-dir "$work/killed.ckpt" --checkpoint-every 5
if wait_for_step killed 12; then
  kill -KILL "$(worker_pid 1)"
  check_ended killed "$SECONDS" "rank 1 was killed by SIGKILL in step" "stopped the other 1 worker"
  checks=$((checks + 1))
  if "$burst" train "${common[@]}" --steps 20 --checkpoint-dir "$work/killed.ckpt" --resume \
       > "$work/resumed.out" 2> "$work/resumed.err" && grep -q "resumed from step" "$work/resumed.out"; then
    echo "ok: the last complete checkpoint loads: $(grep "resumed from step" "$work/resumed.out")"
  else
    fail "resuming after SIGKILL: $(tail -n 2 "$work/resumed.err")"
  fi
else
  fail "the SIGKILL run never reached step 12: $(tail -n 2 "$work/killed.err")"
fi

# --- SIGSTOP: a hung worker ----------------------------------------------------------------
start stopped --steps 400 --save-params "$work/stopped.pt"  # (the path marks its processes)
if wait_for_step stopped 5; then
  kill -STOP "$(worker_pid 1)"
  check_ended stopped "$SECONDS" "rank 0: step" "rank 1 (step" "did not answer"
else
  fail "the SIGSTOP run never reached step 5: $(tail -n 2 "$work/stopped.err")"
fi

# --- Bad input still exits 2 ---------------------------------------------------------------
bad_input() {  # NAME EXPECTED_TEXT ARGS...
  local name=$1 expected=$2
  shift 2
  checks=$((checks + 1))
  local rc=0
  "$burst" train "${common[@]}" "$@" > "$work/bad.out" 2> "$work/bad.err" || rc=$?
  if [ "$rc" -eq 2 ] && [ "$(wc -l < "$work/bad.err")" -eq 1 ] && grep -qF -- "$expected" "$work/bad.err"; then
    echo "ok: $name: exit 2: $(cat "$work/bad.err")"
  else
    fail "$name: exit $rc (expected 2, one line with '$expected'): $(head -n 2 "$work/bad.err")"
  fi
}
bad_input "a missing plan file" "cannot open" --steps 2 --plan "$work/no-such-plan.json"
echo "not json" > "$work/garbage.json"
bad_input "a plan file that is not JSON" "garbage.json" --steps 2 --plan "$work/garbage.json"
# A worker's own refusal (the launcher checks the checkpoint directory's existence, not
# whether rank 0 can create it): exit 2, not the failure code.
touch "$work/a-file"
bad_input "a checkpoint directory under a file" "--checkpoint-dir: cannot create" --steps 2 \
  --checkpoint-dir "$work/a-file/ckpt"

# --- --max-restarts 1 ----------------------------------------------------------------------
"$burst" train "${common[@]}" --steps 24 --save-params "$work/reference.pt" > "$work/reference.out" 2>&1 ||
  fail "the uninterrupted run failed: $(tail -n 2 "$work/reference.out")"
start restarted --steps 24 --checkpoint-dir "$work/restart.ckpt" --checkpoint-every 4 --max-restarts 1 \
  --save-params "$work/restarted.pt"
if wait_for_step restarted 10; then
  kill -KILL "$(worker_pid 1)"
  wait "$launcher"
  rc=$?
  checks=$((checks + 1))
  if [ "$rc" -eq 0 ] && grep -q "restarting all workers from the latest checkpoint (restart 1 of 1)" "$work/restarted.err" &&
     grep -q "resumed from step" "$work/restarted.out"; then
    echo "ok: restarted once: $(grep "restarting" "$work/restarted.err" | cut -c 1-160)"
  else
    fail "the restarted run: exit $rc; $(tail -n 3 "$work/restarted.err")"
  fi
  checks=$((checks + 1))
  if "$python" "$here/compare_params.py" "$work/reference.pt" "$work/restarted.pt" 1e-5 > "$work/compare.out"; then
    echo "ok: restarted run equals the uninterrupted one: $(cat "$work/compare.out")"
  else
    fail "restarted run: $(cat "$work/compare.out")"
  fi
else
  fail "the restarted run never reached step 10: $(tail -n 2 "$work/restarted.err")"
fi

if [ "$failures" -gt 0 ]; then
  echo "$failures failures in $checks checks"
  exit 1
fi
echo "all $checks fault checks passed"
