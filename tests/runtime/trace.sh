#!/usr/bin/env bash
# Observability (issue 5, item 5): `burst train --trace FILE` writes one Chrome trace of all
# ranks that Perfetto opens, and rank 0's log lines carry every rank's compute/comm/idle ms.
#
# usage: trace.sh BURST PYTHON
# Two short runs of tests/runtime/vgg_like.json on 2 workers (3 steps, global batch 16): a
# data-parallel plan, and a mixed plan (convolutions on both ranks, the fully connected
# layers on rank 0 only), whose re-shards must show as recv/send events and rank 1's wait
# for rank 0's layers as idle. check_trace.py checks each file and log.
set -euo pipefail
burst=$1
python=$2
here=$(cd "$(dirname "$0")" && pwd)
model=$here/vgg_like.json
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

"$burst" train --model "$model" --global-batch 16 --steps 3 --nproc 2 --trace T.json > dp.log 2>&1 ||
  { cat dp.log; exit 1; }
cat dp.log
"$python" "$here/check_trace.py" T.json dp.log --ranks 2 --steps 3

"$burst" model show "$model" --json > model.json
"$python" - <<'PY'
import json
model = json.load(open("model.json"))
names = [layer["name"] for layer in model["layers"]]
split = names.index("flat")  # flat and after: rank 0 only
def shards(i):
    return [[0, 0, 8], [1, 8, 16]] if i < split else [[0, 0, 16]]
json.dump({"format": "burst.plan", "version": 1, "model": model["name"], "strategy": "hand",
           "global_batch": 16, "devices": 2,
           "layers": [{"layer": n, "shards": shards(i)} for i, n in enumerate(names)]},
          open("mixed.json", "w"))
PY
"$burst" train --model "$model" --plan mixed.json --steps 3 --nproc 2 --trace M.json > mixed.log 2>&1 ||
  { cat mixed.log; exit 1; }
cat mixed.log
"$python" "$here/check_trace.py" M.json mixed.log --ranks 2 --steps 3 --mixed
echo "trace: ok"
