#!/usr/bin/env bash
# Usage: energy.sh BURST_BINARY ZEUS_TRACE_DIR
#
# Energy end to end (docs/energy.md): `burst plan` and `burst sim` report joules per
# iteration, per sample and per device (--json: energy_j, energy_j_per_sample, energy.devices);
# --objective energy lowers clocks within --max-slowdown and writes them in the plan file,
# which evaluates to the same step; --pareto prints the frontier and --svg draws it; a sim
# trace has power tracks; a background job reports the cluster's samples per joule;
# `burst power-fit` reproduces the fit. And the refusals, each exit 2 with one line: a power
# cap below idle or above the board maximum, a negative --max-slowdown, an unknown objective.
set -u

# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
cli_setup "$0 BURST_BINARY ZEUS_TRACE_DIR" 2 "$@"
zeus=$2

quiet plan plan --model vgg16 --devices 8 --device a100 --global-batch 32 --json
py_check "burst plan --json reports energy per iteration, sample and device" '
import json, sys
d = json.load(open(sys.argv[1]))
e = d["energy"]
assert d["energy_j"] > 0 and abs(d["energy_j_per_sample"] * 32 - d["energy_j"]) < 1e-9 * d["energy_j"], d["energy_j"]
assert len(e["devices"]) == 8 and abs(sum(x["energy_j"] for x in e["devices"]) - d["energy_j"]) < 1e-6 * d["energy_j"], e
# every device draws at least its idle power (55 W for an a100) over the step
assert all(x["energy_j"] >= 55 * d["iteration_time_ms"] / 1e3 * (1 - 1e-9) for x in e["devices"]), e
assert d["objective"]["objective"] == "time"
' "$work/plan.out"

quiet energy plan --model vgg16 --devices 8 --device a100 --global-batch 32 --objective energy --max-slowdown 0.05 --json -o "$work/clocked.json"
py_check "--objective energy keeps the bound and spends no more energy" '
import json, sys
d = json.load(open(sys.argv[1]))
o = d["objective"]
assert o["time_s"] <= o["full_clock_time_s"] * 1.05 * (1 + 1e-9) and o["energy_j"] <= o["full_clock_energy_j"], o
assert abs(d["iteration_time_ms"] - o["time_s"] * 1e3) < 1e-6 * d["iteration_time_ms"], (d["iteration_time_ms"], o)
assert abs(d["energy_j"] - o["energy_j"]) < 1e-6 * d["energy_j"], (d["energy_j"], o)
' "$work/energy.out"
quiet replay plan --model vgg16 --devices 8 --device a100 --plan "$work/clocked.json" --json
py_check "the plan file keeps its clocks" '
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert abs(a["energy_j"] - b["energy_j"]) < 1e-6 * a["energy_j"] and abs(a["iteration_time_ms"] - b["iteration_time_ms"]) < 1e-9 * a["iteration_time_ms"]
' "$work/energy.out" "$work/replay.out"

quiet pareto plan --model resnet50 --devices 16 --device a100 --global-batch 128 --strategy dp --pareto --svg "$work/frontier.svg"
contains pareto "time-energy frontier"
checks=$((checks + 1))
grep -q "least energy" "$work/frontier.svg" || fail "the frontier picture lacks its least-energy end"

quiet capped sim --model resnet50 --devices 4 --device v100 --global-batch 64 --power-cap 150 --json
quiet uncapped sim --model resnet50 --devices 4 --device v100 --global-batch 64 --json
py_check "a power cap slows the step and lowers its power" '
import json, sys
c = json.load(open(sys.argv[1])); u = json.load(open(sys.argv[2]))
assert c["iteration_time_ms"] > u["iteration_time_ms"], (c["iteration_time_ms"], u["iteration_time_ms"])
assert c["power_cap_w"] == 150 and u["power_cap_w"] is None
power = lambda d: d["energy_j"] / (d["iteration_time_ms"] / 1e3) / d["devices"]
assert power(c) < power(u) and power(c) <= 150 * 1.3, (power(c), power(u))  # communication adds above the cap
' "$work/capped.out" "$work/uncapped.out"

quiet trace sim --model vgg16 --devices 4 --device a100 --global-batch 32 --trace "$work/trace.json"
py_check "the sim trace has a power track per device" '
import json, sys
t = json.load(open(sys.argv[1]))["traceEvents"]
pids = {e["pid"] for e in t if e.get("ph") == "C" and e["name"] == "power"}
assert pids == {0, 1, 2, 3}, pids
' "$work/trace.json"

quiet background sim --model vgg16 --devices 8 --device a100 --global-batch 32 --background resnet50:8
contains background "filling idle time"

quiet fit power-fit "$zeus"
contains fit "rtx6000"

refused "a power cap below idle power" plan --model vgg16 --devices 8 --device a100 --global-batch 32 --power-cap 20
contains_error "idle power 55 W"
refused "a power cap above the board maximum" sim --model vgg16 --devices 8 --device a100 --global-batch 32 --power-cap 900
contains_error "board maximum 400 W"
refused "a negative power cap" plan --model vgg16 --devices 8 --device a100 --global-batch 32 --power-cap -5
refused "a negative --max-slowdown" plan --model vgg16 --devices 8 --device a100 --global-batch 32 --objective energy --max-slowdown -0.1
refused "an unknown objective" plan --model vgg16 --devices 8 --device a100 --global-batch 32 --objective speed
contains_error "--objective must be time or energy"
python3 -c '
import json, sys
p = json.load(open(sys.argv[1])); p["version"] = 5; p["rank_clocks_mhz"] = [5000] * p["devices"]
json.dump(p, open(sys.argv[2], "w"))
' "$work/clocked.json" "$work/bad_clock.json"
refused "a plan with a clock out of range" plan --model vgg16 --devices 8 --device a100 --plan "$work/bad_clock.json"
finish "energy checks"
