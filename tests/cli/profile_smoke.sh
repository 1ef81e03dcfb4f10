#!/usr/bin/env bash
# Usage: profile_smoke.sh BURST_BINARY
#
# `burst profile` end to end on a tiny model file (fast on any CPU): writes a valid profile
# with every layer signature at every batch, resumes without measuring again, extends to a
# new batch, and the profile feeds `burst cost`; bad arguments are refused. Exits 1 listing
# every failed check.
set -u

# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
cli_setup "$0 BURST_BINARY" 1 "$@"

cat >"$work/tiny.json" <<'JSON'
{"format": "burst.model", "version": 1, "name": "tiny",
 "layers": [
  {"name": "image", "op": "input", "shape": [1, 8, 8]},
  {"name": "conv", "op": "conv2d", "inputs": ["image"], "out_channels": 4, "kernel": 3, "padding": 1},
  {"name": "relu", "op": "relu", "inputs": ["conv"]},
  {"name": "flat", "op": "flatten", "inputs": ["relu"]},
  {"name": "fc", "op": "linear", "inputs": ["flat"], "out_features": 10},
  {"name": "loss", "op": "softmax_cross_entropy", "inputs": ["fc"]}]}
JSON

# 6 layers, all of distinct signatures, at 2 batches: 12 entries.
ok first profile --model "$work/tiny.json" --batch-sizes 1,2 -o "$work/p.json" &&
  { checks=$((checks + 1)); grep -q "12 entries measured, 0 kept" "$work/first.err" ||
      fail "first run: expected '12 entries measured, 0 kept' in: $(tail -n 1 "$work/first.err")"; }
ok again profile --model "$work/tiny.json" --batch-sizes 1,2 -o "$work/p.json" &&
  { checks=$((checks + 1)); grep -q "0 entries measured, 12 kept" "$work/again.err" ||
      fail "resume: expected '0 entries measured, 12 kept' in: $(tail -n 1 "$work/again.err")"; }
ok extend profile --model "$work/tiny.json" --batch-sizes 1,2,4 -o "$work/p.json" &&
  { checks=$((checks + 1)); grep -q "6 entries measured, 12 kept" "$work/extend.err" ||
      fail "extend: expected '6 entries measured, 12 kept' in: $(tail -n 1 "$work/extend.err")"; }
checks=$((checks + 1))
"$python" - "$work/p.json" <<'PY' || fail "the profile is not what burst profile promises"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["format"] == "burst.profile" and p["device"] == "cpu", p["device"]
entries = p["entries"]
assert len(entries) == 18, len(entries)
assert sorted({e["batch"] for e in entries}) == [1, 2, 4]
for e in entries:
    if e["op"] != "input":
        assert e["forward_ms"] > 0 and e["backward_ms"] >= 0 and e["repetitions"] >= 1, e
PY
ok cost cost --model "$work/tiny.json" --profile "$work/p.json" --batch 2 --json &&
  { checks=$((checks + 1)); "$python" -c '
import json, sys
d = json.load(open(sys.argv[1]))
sources = {layer["source"] for layer in d["layers"]}
assert sources == {"measured"}, sources
' "$work/cost.out" || fail "burst cost on the profile did not use the measured entries"; }

# Tensor-split parts (docs/profiler.md, "Tensor splits"): fc (256 -> 10) takes a 2-way
# column and row split, not a 4-way column one: 2 more entries per batch, the old ones kept.
ok parts profile --model "$work/tiny.json" --batch-sizes 1,2,4 --tensor-parts 2,4 -o "$work/p.json" &&
  { checks=$((checks + 1)); grep -q "9 entries measured, 18 kept" "$work/parts.err" ||
      fail "parts: expected '9 entries measured, 18 kept' in: $(tail -n 1 "$work/parts.err")"; }
checks=$((checks + 1))
"$python" - "$work/p.json" <<'PY' || fail "the tensor-split parts are not what burst profile promises"
import json, sys
entries = json.load(open(sys.argv[1]))["entries"]
parts = sorted((e["split"]["kind"], e["split"]["parts"], e["batch"]) for e in entries if "split" in e)
expected = sorted((kind, parts, batch) for kind, parts in [("column", 2), ("row", 2), ("row", 4)] for batch in (1, 2, 4))
assert parts == expected, parts
PY
refused "a tensor split in one part" profile --model "$work/tiny.json" --batch-sizes 1 --tensor-parts 1 -o "$work/q.json"
refused "zero batch" profile --model "$work/tiny.json" --batch-sizes 0 -o "$work/q.json"
refused "unknown model" profile --model no_such_model --batch-sizes 1 -o "$work/q.json"
refused "other thread count" profile --model "$work/tiny.json" --batch-sizes 1 --threads 2 -o "$work/p.json"
refused "unwritable output" profile --model "$work/tiny.json" --batch-sizes 1 -o "$work/missing/q.json"
refused "no output" profile --model "$work/tiny.json" --batch-sizes 1

finish "profile checks passed"
