#!/usr/bin/env bash
# Usage: plan_smoke.sh BURST_BINARY EXAMPLE_CLUSTER_FILE
#
# `burst plan` end to end. Good input: VGG-16 on 8 built-in A100s at global batch 32 as a
# table and as JSON (the summary agrees with itself), data parallelism, no amplification
# limit, a cluster file, -o then --plan reproducing the prediction, --svg pictures that
# parse as XML, and --sweep as a table, JSON and a picture. Bad input (bad numbers, bad
# combinations, bad plan files) must be refused with exit 2 and one "burst: error:" line.
# Exits 1 listing every failed check.
set -u

# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
cli_setup "$0 BURST_BINARY EXAMPLE_CLUSTER_FILE" 2 "$@"
example=$2

vgg=(plan --model vgg16 --device a100 --devices 8 --global-batch 32)

# --- one plan: table, plan file and picture --------------------------------------------------
if quiet table "${vgg[@]}" -o "$work/vgg.plan.json" --svg "$work/vgg.svg"; then
  for text in "burst plan (amplification limit 2" "for vgg16: global batch 32 on a100x8 (8 a100 devices)" \
              "fwd end" "bwd end" "features.0" "classifier.6" "predicted iteration time:" \
              "data parallel on 8 devices:" "one device:" "device-seconds per iteration:" \
              "mean amplification:" "idle device-seconds per iteration:" "devices used:" \
              "wrote the plan to $work/vgg.plan.json"; do
    contains table "$text"
  done
  py_check "the plan file" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "burst.plan" and d["model"] == "vgg16" and d["strategy"] == "burst", d["strategy"]
assert d["global_batch"] == 32 and d["devices"] == 8 and len(d["layers"]) == 42, len(d["layers"])
' "$work/vgg.plan.json"
  py_check "the --svg picture" '
import sys, xml.etree.ElementTree as ET
text = open(sys.argv[1]).read()
assert text.startswith("<svg"), text[:40]
root = ET.fromstring(text)
ns = "{http://www.w3.org/2000/svg}"
rects = root.findall(f".//{ns}rect")
bars = [r for r in rects if r.get("class") == "bar"]
assert len(bars) == 42, "%d bars" % len(bars)
for kind in ("forward", "backward", "allreduce"):
    assert any(r.get("class") == kind for r in rects), "no " + kind
assert "idle (free for a background job)" in text
' "$work/vgg.svg"
fi

# --- JSON: the keys, and the summary agrees with itself --------------------------------------
check_report() {  # NAME EXPECTED_STRATEGY EXPECTED_LIMIT(python literal)
  py_check "burst plan --json ($1)" '
import json, math, sys
d = json.load(open(sys.argv[1]))
for key in ("iteration_time_ms", "device_seconds", "idle_device_seconds", "speedup_vs_dp",
            "speedup_vs_one_device", "mean_amplification", "model", "devices", "global_batch",
            "strategy", "amplification_limit", "layers"):
    assert key in d, "missing key " + key
assert d["model"] == "vgg16" and d["devices"] == 8 and d["global_batch"] == 32, d["model"]
assert d["strategy"] == sys.argv[2], d["strategy"]
assert d["amplification_limit"] == eval(sys.argv[3]), d["amplification_limit"]
# The burst planner may raise its limit (never below the one asked for) and states its estimate.
used, asked = d["amplification_limit_used"], d["amplification_limit"]
if d["strategy"] == "burst":
    assert (used is None) if asked is None else (used is None or used >= asked), (asked, used)
    assert d["planner_predicted_ms"] > 0, d["planner_predicted_ms"]
else:
    assert used is None and d["planner_predicted_ms"] is None, (used, d["planner_predicted_ms"])
t = d["iteration_time_ms"]
assert t > 0 and math.isclose(d["speedup_vs_dp"], d["data_parallel_ms"] / t, rel_tol=1e-9)
assert math.isclose(d["speedup_vs_one_device"], d["one_device_ms"] / t, rel_tol=1e-9)
assert math.isclose(d["idle_device_seconds"], 8 * t / 1e3 - d["device_seconds"], rel_tol=1e-9, abs_tol=1e-12)
assert len(d["layers"]) == 42 and d["layers"][1]["name"] == "features.0", len(d["layers"])
for layer in d["layers"]:
    for key in ("devices", "per_device_batch", "forward_ms", "backward_ms", "transfer_ms", "sync_ms",
                "amplification", "forward_end_ms", "backward_end_ms"):
        assert key in layer, "layer without " + key
    assert 1 <= layer["devices"] <= 8 and layer["backward_end_ms"] <= t + 1e-9, layer
assert d["devices_used"] == max(layer["devices"] for layer in d["layers"])
' "$work/$1.out" "$2" "$3"
}
quiet json "${vgg[@]}" --json && check_report json burst 2
quiet dp "${vgg[@]}" --strategy dp --json && {
  check_report dp dp None
  py_check "data parallel is its own baseline" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["speedup_vs_dp"] == 1 and d["devices_used"] == 8, d["speedup_vs_dp"]
' "$work/dp.out"
}
quiet unlimited "${vgg[@]}" --amplification inf --json && check_report unlimited burst None
quiet limit_1_5 "${vgg[@]}" --amplification 1.5 --json && check_report limit_1_5 burst 1.5

# --- -o then --plan: the loaded plan predicts the same iteration -----------------------------
if [ -s "$work/vgg.plan.json" ] && quiet loaded plan --model vgg16 --device a100 --devices 8 \
     --plan "$work/vgg.plan.json" --json; then
  py_check "--plan of the -o file" '
import json, math, sys
planned, loaded = (json.load(open(p)) for p in sys.argv[1:3])
assert loaded["plan_file"] == sys.argv[3] and loaded["amplification_limit"] is None
assert math.isclose(planned["iteration_time_ms"], loaded["iteration_time_ms"], rel_tol=1e-12), \
    (planned["iteration_time_ms"], loaded["iteration_time_ms"])
assert [l["devices"] for l in planned["layers"]] == [l["devices"] for l in loaded["layers"]]
' "$work/json.out" "$work/loaded.out" "$work/vgg.plan.json"
  # Without --devices the plan's own device count is used.
  quiet loaded_table plan --model vgg16 --device a100 --plan "$work/vgg.plan.json" &&
    contains loaded_table "plan file $work/vgg.plan.json (strategy burst) for vgg16: global batch 32 on a100x8"
fi

# --- a cluster file ---------------------------------------------------------------------------
quiet cluster plan --model vgg16 --cluster "$example" --global-batch 32 &&
  contains cluster "for vgg16: global batch 32 on lab-2x8-a100 (16 a100 devices)"

# --- the strong-scaling sweep -----------------------------------------------------------------
if quiet sweep "${vgg[@]}" --sweep --svg "$work/sweep.svg"; then
  contains sweep "device counts: every count from 1 to 8"
  checks=$((checks + 1))
  rows=$(grep -cE '^ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+x ' "$work/sweep.out")
  [ "$rows" -eq 8 ] || fail "burst plan --sweep printed $rows rows, expected 8 (devices 1..8)"
  py_check "the --sweep --svg picture" '
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
assert len(root.findall(f".//{ns}polyline")) == 2 and len(root.findall(f".//{ns}circle")) == 16
' "$work/sweep.svg"
fi
quiet sweep_json plan --model vgg16 --device a100 --devices 20 --global-batch 32 --sweep --json &&
  py_check "burst plan --sweep --json" '
import json, sys
d = json.load(open(sys.argv[1]))
assert [r["devices"] for r in d] == list(range(1, 17)) + [20], [r["devices"] for r in d]
one = d[0]
assert one["dp_iteration_time_ms"] == one["burst_iteration_time_ms"] and one["speedup_vs_dp"] == 1, one
for r in d:
    assert r["burst_devices_used"] <= r["devices"] and r["burst_idle_device_seconds"] >= -1e-12, r
' "$work/sweep_json.out"

# --- the limit kept strictly: on 8 A100s vgg16 is then slower than data parallel ----------------
if quiet strict "${vgg[@]}" --strict-amplification --json; then
  py_check "--strict-amplification keeps the limit" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["amplification_limit_used"] == 2, d["amplification_limit_used"]
assert d["speedup_vs_dp"] < 1, d["speedup_vs_dp"]
' "$work/strict.out"
fi

# --- bad numbers and combinations ---------------------------------------------------------------
refused "dp with --strict-amplification" "${vgg[@]}" --strategy dp --strict-amplification
refused "an unknown BatchNorm mode" "${vgg[@]}" --batchnorm other
refused "ZeRO stage 4" "${vgg[@]}" --zero 4
contains_error "--zero must be between 0 and 3, got 4"
refused "fp8 on an A100" "${vgg[@]}" --precision fp8
contains_error "device 'a100' has no fp8 units"
refused "an unknown precision" "${vgg[@]}" --precision fp4
refused "an unknown recompute" "${vgg[@]}" --recompute some
ok "bf16, full recomputation and ZeRO 2" "${vgg[@]}" --precision bf16 --recompute full --zero 2
gpt64=(plan --model gpt2:layers=2,width=256,heads=64,seq=16,vocab=64,positions=16 --device a100 --devices 8 --global-batch 16 --strategy 3d)
ok "a 3-D plan, searched" "${gpt64[@]}"
ok "a 3-D plan, pinned" "${gpt64[@]}" --tensor-parallel 2 --pipeline-stages 2 --micro-batch-size 2 --zero 1 --recompute selective
refused "a tensor-parallel size that does not divide the heads" "${gpt64[@]}" --tensor-parallel 3
contains_error "--tensor-parallel 3 does not divide the 64 heads of 'transformer.h.0.attn'"
refused "a micro-batch size that does not divide the batch share" "${gpt64[@]}" --tensor-parallel 2 --pipeline-stages 1 --micro-batch-size 3
contains_error "--micro-batch-size 3 does not divide the batch share 4"
refused "a negative exemption threshold" "${vgg[@]}" --amplification-exempt-ms -1
refused "a NaN exemption threshold" "${vgg[@]}" --amplification-exempt-ms nan
refused "an exemption threshold with dp" "${vgg[@]}" --strategy dp --amplification-exempt-ms 0.3

# --- memory (docs/cost-model.md, "Memory") ---------------------------------------------------
resnet=(plan --model resnet50 --device a100 --devices 16 --global-batch 32)
if quiet memory "${resnet[@]}"; then
  contains memory "peak memory per device:"
  contains memory "of 40.0 GB per a100 (optimizer sgd, precision tf32, recompute none, ZeRO 0)"
fi
# At 0.7 GB per device the burst plan (976 MB on rank 0) does not fit; data parallel (506 MB) does.
if quiet fallback "${resnet[@]}" --device-memory 0.7; then
  contains fallback "data-parallel plan for resnet50"
  contains fallback "the burst plan does not fit: rank 0 needs"
  contains fallback "; data parallel instead"
fi
refused "a plan that fits nowhere" "${resnet[@]}" --device-memory 0.4
# The sweep says which plans fit: at 0.4 GB neither resnet50 plan fits on 1 device.
if quiet sweep_memory plan --model resnet50 --device a100 --devices 4 --global-batch 32 --sweep --json \
     --device-memory 0.4; then
  py_check "the sweep flags plans over capacity" '
import json, sys
rows = json.load(open(sys.argv[1]))
assert rows[0]["devices"] == 1 and not rows[0]["dp_fits"] and not rows[0]["burst_fits"], rows[0]
assert all(isinstance(r["dp_fits"], bool) and isinstance(r["burst_fits"], bool) for r in rows)
' "$work/sweep_memory.out"
fi
refused "an unknown optimizer" "${resnet[@]}" --optimizer lamb
refused "a device memory of 0" "${resnet[@]}" --device-memory 0
refused "adam with data parallel over capacity" "${resnet[@]}" --strategy dp --optimizer adam --device-memory 0.7
refused "global batch 0" "${vgg[@]:0:7}" --global-batch 0
refused "global batch -3" "${vgg[@]:0:7}" --global-batch -3
refused "global batch not a number" "${vgg[@]:0:7}" --global-batch many
refused "no global batch" "${vgg[@]:0:7}"
refused "devices 0" plan --model vgg16 --device a100 --devices 0 --global-batch 32
refused "devices -1" plan --model vgg16 --device a100 --devices -1 --global-batch 32
refused "no devices" plan --model vgg16 --device a100 --global-batch 32
refused "no device or cluster" plan --model vgg16 --devices 8 --global-batch 32
for bad in 0.5 0 -2 nan NaN abc inf5 "" " 2" 1e400 infinity; do
  refused "amplification '$bad'" "${vgg[@]}" --amplification "$bad"
done
refused "amplification with dp" "${vgg[@]}" --strategy dp --amplification 3
refused "unknown strategy" "${vgg[@]}" --strategy zigzag
refused "devices disagree with the cluster" plan --model vgg16 --cluster "$example" --devices 8 --global-batch 32
refused "--device and --cluster" plan --model vgg16 --cluster "$example" --device a100 --global-batch 32
refused "--sweep with --cluster" plan --model vgg16 --cluster "$example" --global-batch 32 --sweep
refused "--sweep with -o" "${vgg[@]}" --sweep -o "$work/never.json"
refused "unknown model" plan --model vgg17 --device a100 --devices 8 --global-batch 32

# --- bad plan files ------------------------------------------------------------------------------
if quiet dp4 plan --model vgg16 --device a100 --devices 4 --global-batch 16 --strategy dp -o "$work/dp4.json"; then
  "$python" - "$work" <<'PY'
import json, sys
work = sys.argv[1]
base = json.load(open(f"{work}/dp4.json"))
def write(name, change):
    plan = json.loads(json.dumps(base))
    change(plan)
    json.dump(plan, open(f"{work}/{name}.json", "w"))
write("uncovered", lambda p: p["layers"][3]["shards"][-1].__setitem__(2, 15))   # [12, 15) of 16
write("rank9", lambda p: p["layers"][5]["shards"][-1].__setitem__(0, 9))        # rank 9 of 4
write("no_shards", lambda p: p["layers"][2].__setitem__("shards", []))
write("renamed", lambda p: p["layers"][7].__setitem__("layer", "conv<&>"))
PY
  head -c 300 "$work/dp4.json" >"$work/truncated.json"
  plan4=(plan --model vgg16 --device a100 --devices 4 --plan)
  refused "plan for another model" plan --model resnet50 --device a100 --devices 4 --plan "$work/dp4.json"
  refused "plan leaving samples uncovered" "${plan4[@]}" "$work/uncovered.json"
  refused "plan naming rank 9 on 4 devices" "${plan4[@]}" "$work/rank9.json"
  refused "plan layer on no rank" "${plan4[@]}" "$work/no_shards.json"
  refused "plan layer renamed" "${plan4[@]}" "$work/renamed.json"
  refused "missing plan file" "${plan4[@]}" "$work/missing.json"
  refused "truncated plan JSON" "${plan4[@]}" "$work/truncated.json"
  refused "plan with another global batch" "${plan4[@]}" "$work/dp4.json" --global-batch 32
  refused "plan with --strategy" "${plan4[@]}" "$work/dp4.json" --strategy dp
  refused "plan with --sweep" "${plan4[@]}" "$work/dp4.json" --sweep
  # The refusals name the layer.
  refused "(name check)" "${plan4[@]}" "$work/rank9.json"
  checks=$((checks + 1))
  grep -qF "plan layer 'features.4': rank 9 is not in the cluster of 4 devices" "$work/stderr" ||
    fail "rank 9 refusal does not name the layer: $(head -c 200 "$work/stderr")"
fi

# --- pipelines (docs/pipelines.md) ---------------------------------------------------------------
gpt=(plan --model "gpt2:layers=2,width=64,heads=2,seq=16,vocab=64" --device a100 --devices 4 --global-batch 16)
if quiet pipeline "${gpt[@]}" --strategy pipeline -o "$work/pipe.json"; then
  contains pipeline "pipeline:"
  contains pipeline "micro-batch"
  py_check "the pipeline plan file" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["version"] == 3 and d["strategy"] == "pipeline", (d["version"], d["strategy"])
p = d.get("pipeline")
assert p and p["schedule"] in ("gpipe", "1f1b") and 16 % p["micro_batches"] == 0, p
' "$work/pipe.json"
  # The plan file gives back the same prediction.
  if quiet pipe_json "${gpt[@]}" --strategy pipeline --json && quiet pipe_again "${gpt[@]:0:7}" --plan "$work/pipe.json" --json; then
    py_check "a pipeline plan file reproduces its prediction" '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["iteration_time_ms"] == b["iteration_time_ms"], (a["iteration_time_ms"], b["iteration_time_ms"])
assert a["pipeline"] == b["pipeline"] and a["pipeline"]["stages"][0]["ranks"], a["pipeline"]
' "$work/pipe_json.out" "$work/pipe_again.out"
  fi
fi
if quiet hybrid "${gpt[@]}" --strategy hybrid -o "$work/hybrid.json"; then
  contains hybrid "hybrid plan for gpt2"
  py_check "the hybrid plan file" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["strategy"] == "hybrid" and d["version"] == 3, d["strategy"]
' "$work/hybrid.json"
fi
if quiet auto "${gpt[@]}" --strategy auto --json; then
  py_check "auto keeps the fastest strategy it tried" '
import json, sys
d = json.load(open(sys.argv[1]))
tried = d["strategies_tried"]
assert [t["strategy"] for t in tried] == ["dp", "burst", "pipeline", "hybrid", "tensor", "3d"], tried
times = [t["iteration_time_ms"] for t in tried if t["iteration_time_ms"] is not None]
assert times and d["iteration_time_ms"] == min(times), (d["iteration_time_ms"], times)
' "$work/auto.out"
fi
# auto's effort bound: 67 layers x 4,096 devices is past what it gives the burst planner;
# burst and hybrid are listed as not searched, the rest still run.
if quiet auto_budget plan --model gpt2:layers=6,width=64,heads=4,seq=16,vocab=64 --device a100 --devices 4096 \
     --global-batch 4096 --strategy auto --json; then
  py_check "auto says what it did not search" '
import json, sys
tried = {t["strategy"]: t for t in json.load(open(sys.argv[1]))["strategies_tried"]}
for name in ("burst", "hybrid"):
    assert tried[name]["why_not"].startswith("not searched: 67 layers x 4096 devices"), tried[name]
assert tried["3d"]["iteration_time_ms"] is not None, tried["3d"]
' "$work/auto_budget.out"
fi
if quiet pipe_dp plan --model fmnist_cnn --device a100 --devices 2 --global-batch 16 --strategy dp -o "$work/cnn.json" &&
   quiet gpt_dp "${gpt[@]}" --strategy dp -o "$work/gpt_dp.json"; then
  "$python" - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def write(base, name, pipeline):
    """The data-parallel plan `base` with `pipeline`; shards re-split over one micro-batch."""
    plan = json.load(open(f"{work}/{base}.json"))
    plan["version"], plan["pipeline"] = 2, pipeline
    m = pipeline["micro_batches"]
    micro = plan["global_batch"] // m if m >= 1 and plan["global_batch"] % m == 0 else plan["global_batch"]
    for layer in plan["layers"]:
        n = len(layer["shards"])
        layer["shards"] = [[s[0], i * micro // n, (i + 1) * micro // n] for i, s in enumerate(layer["shards"])]
    json.dump(plan, open(f"{work}/{name}.json", "w"))
write("gpt_dp", "micro3", {"micro_batches": 3})
write("gpt_dp", "micro0", {"micro_batches": 0})
write("gpt_dp", "branch", {"micro_batches": 2, "stage_starts": ["transformer.h.0.mlp.c_fc"]})
write("gpt_dp", "schedule", {"micro_batches": 2, "schedule": "zero-bubble"})
write("gpt_dp", "unknown_start", {"micro_batches": 2, "stage_starts": ["transformer.h.9.ln_1"]})
write("gpt_dp", "shared_ranks", {"micro_batches": 2, "stage_starts": ["transformer.h.1.ln_1"]})
write("cnn", "batchnorm", {"micro_batches": 2})
PY
  gpt4=("${gpt[@]:0:7}" --plan)
  refused "micro-batches not dividing the batch" "${gpt4[@]}" "$work/micro3.json"
  refused "zero micro-batches" "${gpt4[@]}" "$work/micro0.json"
  refused "a stage boundary inside a branch" "${gpt4[@]}" "$work/branch.json"
  refused "an unknown schedule" "${gpt4[@]}" "$work/schedule.json"
  refused "a stage start that is no layer" "${gpt4[@]}" "$work/unknown_start.json"
  refused "two stages on the same ranks" "${gpt4[@]}" "$work/shared_ranks.json"
  refused "BatchNorm under micro-batches" plan --model fmnist_cnn --device a100 --devices 2 --plan "$work/batchnorm.json"
fi

# Tensor splits (docs/tensor-parallel.md): the tensor planner's plan file, its report's MFU,
# and the refusals of splits that cannot be, each one line naming the layer.
tiny=(--model "gpt2:layers=2,width=64,heads=4,seq=16,vocab=64" --device a100)
if quiet tensor plan "${tiny[@]}" --devices 8 --global-batch 2 --strategy tensor --json -o "$work/tensor.json"; then
  py_check "the tensor plan splits attention by heads and the MLP column then row" '
import json, sys
d, plan = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert plan["version"] == 3 and plan["strategy"] == "tensor", (plan["version"], plan["strategy"])
splits = {l["layer"]: l.get("split", {}).get("kind") for l in plan["layers"]}
assert splits["transformer.h.0.attn"] == "heads" and splits["transformer.h.0.mlp.c_fc"] == "column", splits
assert splits["transformer.h.0.mlp.act"] == "features" and splits["transformer.h.0.mlp.c_proj"] == "row", splits
assert splits["lm_head"] is None, splits
assert 0 < d["mfu"] < 1 and d["peak_tflops"] == 156, (d["mfu"], d["peak_tflops"])
' "$work/tensor.out" "$work/tensor.json"
  quiet tensor_sim sim "${tiny[@]}" --plan "$work/tensor.json"
  contains tensor_sim "iteration"
  quiet tensor_program program --model "gpt2:layers=2,width=64,heads=4,seq=16,vocab=64" --plan "$work/tensor.json" --rank 1
  contains tensor_program "TP_ALLREDUCE_F0  transformer.h.0.attn ranks"
  "$python" - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def write(name, layer, kind, parts):
    plan = json.load(open(f"{work}/tensor.json"))
    for entry in plan["layers"]:
        if entry["layer"] == layer:
            entry["split"] = {"kind": kind, "parts": parts}
            if parts != 2:
                entry["shards"] = [[r, 0, plan["global_batch"]] for r in range(parts)]
    json.dump(plan, open(f"{work}/{name}.json", "w"))
write("heads3", "transformer.h.0.attn", "heads", 3)
write("whole_features", "transformer.h.0.ln_2", "features", 2)
write("no_split", "transformer.h.0.ln_1", "column", 2)
PY
  tiny8=(plan "${tiny[@]}" --devices 8 --plan)
  refused "3-way heads on 4 heads" "${tiny8[@]}" "$work/heads3.json"
  contains_error "transformer.h.0.attn"
  refused "a layer that needs whole features kept split" "${tiny8[@]}" "$work/whole_features.json"
  contains_error "transformer.h.0.ln_2"
  refused "a tensor split of an op that takes none" "${tiny8[@]}" "$work/no_split.json"
  contains_error "transformer.h.0.ln_1"
fi

finish "burst plan checks passed"
