#!/usr/bin/env bash
# Usage: sim_smoke.sh BURST_BINARY
#
# `burst sim` end to end. Good input: VGG-16 on 8 built-in A100s as a table and as JSON
# (throughputs add up, one entry per device), with a background job (slower or equal
# foreground, background samples), a Chrome trace that parses and shows every lane, a plan
# file from `burst plan -o` (the simulator reports the planner's prediction beside its own),
# data parallelism agreeing with the planner's evaluator, the same output twice
# (determinism), idle intervals, and a sweep as a table, JSON and SVG. Bad input must be
# refused with exit 2 and one "burst: error:" line. Exits 1 listing every failed check.
set -u

# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
cli_setup "$0 BURST_BINARY" 1 "$@"

vgg=(sim --model vgg16 --device a100 --devices 8 --global-batch 32)
# On 16 devices the burst plan leaves devices idle: room for a background job.
vgg16=(sim --model vgg16 --device a100 --devices 16 --global-batch 32)

# --- one plan: table and JSON -----------------------------------------------------------------
if quiet table "${vgg[@]}"; then
  for text in "simulated burst plan (amplification limit" "for vgg16: global batch 32 on a100x8" \
              "BatchNorm sync" "iteration time" "planner's evaluator:" "foreground" "cluster throughput" \
              "useful fraction" "Per device, ms per step"; do
    contains table "$text"
  done
fi
if quiet json "${vgg[@]}" --json; then
  py_check "the JSON report" '
import json, sys
d = json.load(open(sys.argv[1]))
for key in ("iteration_time_ms", "foreground_samples_per_s", "background_samples_per_s", "cluster_throughput",
            "useful_fraction", "busy_fraction", "evaluator_iteration_time_ms"):
    assert isinstance(d[key], (int, float)), key
assert d["iteration_time_ms"] > 0 and d["background_samples_per_s"] == 0
assert abs(d["foreground_samples_per_s"] - 32 / d["iteration_time_ms"] * 1e3) < 1e-6 * d["foreground_samples_per_s"]
assert d["cluster_throughput"] == d["foreground_samples_per_s"]
assert 0 < d["useful_fraction"] <= 1 and 0 < d["busy_fraction"] <= 1
assert len(d["per_device"]) == 8 and d["background"] is None
for device in d["per_device"]:
    assert abs(device["foreground_ms"] + device["background_ms"] + device["idle_ms"] - d["iteration_time_ms"]) < 1e-6
' "$work/json.out"
fi

# --- a background job, a trace, determinism ---------------------------------------------------
if quiet background "${vgg16[@]}" --background resnet50:4 --json --trace "$work/trace.json" --trace-ranks 4; then
  py_check "the report with a background job" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["background"]["model"] == "resnet50" and d["background"]["per_device_batch"] == 4
assert d["background"]["policy"] == "fit"
assert d["background_samples_per_s"] > 0
assert d["foreground_slowdown"] >= 1 - 1e-9
assert abs(d["cluster_throughput"] - d["foreground_samples_per_s"] - d["background_samples_per_s"]) < 1e-6 * d["cluster_throughput"]
' "$work/background.out"
  py_check "the Chrome trace" '
import json, sys
d = json.load(open(sys.argv[1]))
events = d["traceEvents"]
slices = [e for e in events if e["ph"] == "X"]
assert slices and all(e["dur"] >= 0 for e in slices)
assert {e["pid"] for e in slices} <= {0, 1, 2, 3}, "ranks beyond --trace-ranks"
lanes = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
assert lanes == {"compute", "background", "send", "receive", "collectives"}, lanes
assert any(e["name"].startswith("background ") for e in slices), "no background kernel"
assert any(e["name"].endswith("gradient all-reduce") for e in slices), "no all-reduce"
assert d["otherData"]["ranks_shown"] == 4
' "$work/trace.json"
fi
if quiet again "${vgg16[@]}" --background resnet50:4 --json; then
  checks=$((checks + 1))
  cmp -s "$work/background.out" "$work/again.out" || fail "two runs of the same simulation differ"
fi
if quiet greedy "${vgg16[@]}" --background resnet50:4 --background-policy greedy --json; then
  py_check "the greedy background policy" '
import json, sys
fit, greedy = (json.load(open(p)) for p in sys.argv[1:])
assert greedy["background"]["policy"] == "greedy"
assert greedy["background_samples_per_s"] >= fit["background_samples_per_s"]
assert greedy["foreground_slowdown"] >= fit["foreground_slowdown"] - 1e-9
' "$work/background.out" "$work/greedy.out"
fi

# --- plan files, data parallelism and the evaluator ------------------------------------------
if quiet make_plan plan --model inception_v3 --device a100 --devices 16 --global-batch 64 -o "$work/plan.json" --json &&
   quiet from_plan sim --model inception_v3 --device a100 --plan "$work/plan.json" --json --intervals; then
  py_check "a plan file simulated" '
import json, sys
planned, simulated = (json.load(open(p)) for p in sys.argv[1:])
assert simulated["devices"] == 16 and simulated["plan_source"].startswith("plan file")
assert abs(simulated["evaluator_iteration_time_ms"] - planned["iteration_time_ms"]) < 1e-9 * planned["iteration_time_ms"]
assert all("idle_intervals_ms" in device for device in simulated["per_device"])
for device in simulated["per_device"]:
    idle = sum(end - start for start, end in device["idle_intervals_ms"])
    assert abs(idle - device["idle_ms"]) < 1e-6 * max(1, simulated["iteration_time_ms"]), (idle, device["idle_ms"])
' "$work/make_plan.out" "$work/from_plan.out"
fi
if quiet dp sim --model vgg16 --device a100 --devices 8 --global-batch 32 --strategy dp --json; then
  py_check "data parallelism agrees with the evaluator" '
import json, sys
d = json.load(open(sys.argv[1]))
assert abs(d["iteration_time_ms"] - d["evaluator_iteration_time_ms"]) < 1e-9 * d["iteration_time_ms"], d
' "$work/dp.out"
fi

# --- sweep ---------------------------------------------------------------------------------------
if ok sweep sim --model vgg16 --device a100 --devices 64 --global-batch 32 --sweep --batchnorm local \
     --background vgg16:8 --svg "$work/sweep.svg"; then
  for text in "simulated strong scaling of vgg16 at global batch 32" "BatchNorm local" "burst+bg cluster" \
              "dp+bg cluster" "gain" "wrote the scaling curves to"; do
    contains sweep "$text"
  done
  py_check "the sweep picture" '
import sys, xml.etree.ElementTree as ET
root = ET.fromstring(open(sys.argv[1]).read())
ns = "{http://www.w3.org/2000/svg}"
lines = root.findall(f".//{ns}polyline")
# iteration time: dp, burst, burst + background; throughput: those and dp + background
assert len(lines) == 7, "%d lines" % len(lines)
assert len(root.findall(f".//{ns}circle")) == 7 * 7, "one point per device count and line"
' "$work/sweep.svg"
fi
if ok sweep_json sim --model vgg16 --device a100 --devices 64 --global-batch 32 --sweep --json; then
  py_check "the sweep JSON" '
import json, sys
d = json.load(open(sys.argv[1]))
assert [p["devices"] for p in d["points"]] == [1, 2, 4, 8, 16, 32, 64]
assert all(p["burst_iteration_time_ms"] > 0 and p["dp_iteration_time_ms"] > 0 for p in d["points"])
' "$work/sweep_json.out"
fi

# --- a co-located profile: layers on two or more devices of a node take its times --------------
# The A100 profile with every time doubled, as if a node's devices slowed each other 2x, and
# the same marked as a CPU profile.
py_check "doubled profiles" '
import json, sys
d = json.load(open(sys.argv[1]))
for e in d["entries"]:
    for k in list(e):
        if k.endswith("_ms"):
            e[k] *= 2
json.dump(d, open(sys.argv[2], "w"))
d["device"] = "cpu"
json.dump(d, open(sys.argv[3], "w"))
' "$(dirname "$0")/../../data/profiles/a100.json" "$work/doubled.json" "$work/doubled-cpu.json"
# Data parallel on 8 A100s of one node: every layer shares the node, so the forward and
# backward double; the update (not in the profile) stays.
if quiet co_alone "${vgg[@]}" --strategy dp --json && quiet co_doubled "${vgg[@]}" --strategy dp --json --co-located-profile "$work/doubled.json"; then
  py_check "data parallel on one node takes the co-located times" '
import json, sys
alone = json.load(open(sys.argv[1]))["per_device"][0]["foreground_ms"]
doubled = json.load(open(sys.argv[2]))["per_device"][0]["foreground_ms"]
assert 1.8 * alone < doubled < 2 * alone, (alone, doubled)
' "$work/co_alone.out" "$work/co_doubled.out"
fi
refused "a co-located profile of another device" "${vgg[@]}" --co-located-profile "$work/doubled-cpu.json"
refused "a missing co-located profile" "${vgg[@]}" --co-located-profile "$work/no-such-profile.json"

# --- bad input --------------------------------------------------------------------------------
refused "a bucket of 0 MiB" "${vgg[@]}" --bucket-mb 0
refused "a negative bucket" "${vgg[@]}" --bucket-mb -1
refused "a NaN bucket" "${vgg[@]}" --bucket-mb nan
refused "global batch 0" "${vgg[@]/32/0}"
refused "devices 0" sim --model vgg16 --device a100 --devices 0 --global-batch 32
refused "background batch 0" "${vgg[@]}" --background vgg16:0
refused "unknown background model" "${vgg[@]}" --background no_such_model:8
refused "background without a model" "${vgg[@]}" --background :8
refused "negative shard overhead" "${vgg[@]}" --shard-overhead-ms -1
refused "nan shard overhead" "${vgg[@]}" --shard-overhead-ms nan
refused "unknown BatchNorm mode" "${vgg[@]}" --batchnorm sometimes
refused "unknown background policy" "${vgg[@]}" --background vgg16 --background-policy eager
refused "--svg without --sweep" "${vgg[@]}" --svg "$work/x.svg"
refused "--sweep with --trace" "${vgg[@]}" --sweep --trace "$work/x.json"
refused "--plan with --strategy" sim --model vgg16 --device a100 --plan "$work/plan.json" --strategy dp
refused "--trace-ranks 0" "${vgg[@]}" --trace "$work/x.json" --trace-ranks 0
refused "missing plan file" sim --model vgg16 --device a100 --plan "$work/no-such-plan.json"
refused "plan for another model" sim --model vgg16 --device a100 --plan "$work/plan.json"
refused "no device or cluster" sim --model vgg16 --devices 8 --global-batch 32
refused "empty background" "${vgg[@]}" --background ""

finish "burst sim checks passed"
