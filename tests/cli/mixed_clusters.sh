#!/usr/bin/env bash
# Usage: mixed_clusters.sh BURST_BINARY MIXED_CLUSTER_FILE A100_PROFILE
#
# Mixed clusters end to end (docs/heterogeneous.md): `burst cluster`, `burst plan` and
# `burst sim` on `--devices KIND:N,...` and on a version-2 cluster file, the per-kind report
# and the baselines (burst never slower than any), plan files that state each rank's kind,
# per-kind profiles; and the refusals, each exit 2 with one line: malformed --devices, a
# group of an unknown kind, a profile for a kind the cluster lacks, a layer that fits no
# kind's memory, a plan made for other kinds.
set -u

# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
cli_setup "$0 BURST_BINARY MIXED_CLUSTER_FILE A100_PROFILE" 3 "$@"
mixed_file=$2
a100_profile=$3

# --- burst cluster ----------------------------------------------------------------------------
quiet cluster_list cluster --devices a100:8,v100:8
contains cluster_list "cluster a100x8+v100x8: 16 devices in 2 groups"
contains cluster_list "group 1: 8 v100 on 1 node of 8 (ranks 8-15)"
quiet cluster_file cluster --cluster "$mixed_file" --json
py_check "burst cluster --json keeps the groups" '
import json, sys
d = json.load(open(sys.argv[1]))
c = d["cluster"]
assert c["version"] == 2 and [g["device"] for g in c["groups"]] == ["a100", "v100"], c
assert c["groups"][1]["memory_gib"] == 32 and d["devices"] == 16, c
' "$work/cluster_file.out"

# --- burst plan: per kind, baselines, plan files ------------------------------------------------
quiet plan plan --model vgg16 --devices h100-sxm:8,a100:24 --global-batch 64 --json -o "$work/plan.json"
py_check "burst plan --json on a mixed cluster" '
import json, sys
d = json.load(open(sys.argv[1]))
m = d["mixed"]
assert [k["kind"] for k in m["kinds"]] == ["h100-sxm", "a100"] and [k["devices"] for k in m["kinds"]] == [8, 24], m
assert abs(sum(k["sample_share"] for k in m["kinds"]) - 1) < 1e-9, m
t = d["iteration_time_ms"]
for key in ("one_kind_alone", "even_split", "one_ratio"):
    assert t <= m["baselines"][key]["iteration_time_ms"] * (1 + 1e-9), (key, t, m["baselines"][key])
' "$work/plan.out"
py_check "the plan file states each rank's kind" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["version"] == 4 and d["rank_kinds"] == ["h100-sxm"] * 8 + ["a100"] * 24, d.get("rank_kinds")
' "$work/plan.json"
quiet replan plan --model vgg16 --devices h100-sxm:8,a100:24 --plan "$work/plan.json" --json
quiet sim sim --model vgg16 --devices h100-sxm:8,a100:24 --plan "$work/plan.json" --json
py_check "the plan file evaluates and simulates to the planned time" '
import json, sys
planned = json.load(open(sys.argv[1]))["iteration_time_ms"]
replanned = json.load(open(sys.argv[2]))["iteration_time_ms"]
sim = json.load(open(sys.argv[3]))
assert abs(planned - replanned) < 1e-9 * planned, (planned, replanned)
assert abs(sim["iteration_time_ms"] - planned) < 1e-6 * planned, (sim["iteration_time_ms"], planned)
assert [k["kind"] for k in sim["mixed"]["kinds"]] == ["h100-sxm", "a100"], sim["mixed"]
' "$work/plan.out" "$work/replan.out" "$work/sim.out"
quiet plan_file plan --model resnet50 --cluster "$mixed_file" --global-batch 64
contains plan_file "(8 a100 + 8 v100)"
contains plan_file "all 16 devices, one ratio per kind:"
quiet profiled plan --model vgg16 --devices a100:2,v100:1 --global-batch 12 --profile "a100=$a100_profile" --strategy auto
contains profiled "strategies tried:"

# --- refusals ----------------------------------------------------------------------------------
sed 's/"device": "v100"/"device": "tpu-v9"/' "$mixed_file" > "$work/unknown_kind.json"
refused "a group of an unknown kind" plan --model vgg16 --cluster "$work/unknown_kind.json" --global-batch 64
refused "malformed --devices" plan --model vgg16 --devices a100:8,x --global-batch 64
refused "--devices with a zero count" plan --model vgg16 --devices a100:8,v100:0 --global-batch 64
refused "--devices of an unknown kind" plan --model vgg16 --devices a100:8,tpu:8 --global-batch 64
refused "--devices list with --device" plan --model vgg16 --devices a100:8,v100:8 --device a100 --global-batch 64
refused "--devices list with --cluster" plan --model vgg16 --devices a100:8,v100:8 --cluster "$mixed_file" --global-batch 64
refused "a profile for a kind the cluster lacks" plan --model vgg16 --devices a100:8,v100:8 --global-batch 64 \
  --profile "h100-sxm=$a100_profile"
refused "a bare profile on a mixed cluster" plan --model vgg16 --devices a100:8,v100:8 --global-batch 64 --profile "$a100_profile"
refused "a profile of another kind" plan --model vgg16 --devices a100:8,v100:8 --global-batch 64 --profile "v100=$a100_profile"
refused "two profiles for one kind" plan --model vgg16 --devices a100:8,v100:8 --global-batch 64 \
  --profile "a100=$a100_profile" --profile "a100=$a100_profile"
refused "a layer that fits no kind's memory" plan --model gpt2:layers=1,width=16384,heads=32,vocab=1000000 \
  --devices a100:8,a100-80gb:8 --global-batch 8
grep -qF "layer 'transformer.wte'" "$work/stderr" && grep -qF "a100 40.0 GB, a100-80gb 80.0 GB" "$work/stderr" ||
  fail "the memory refusal names the layer and the kinds: $(cat "$work/stderr")"
refused "a plan made for other kinds" plan --model vgg16 --devices a100:24,h100-sxm:8 --plan "$work/plan.json"
refused "--sweep on a mixed cluster" plan --model vgg16 --devices a100:8,v100:8 --global-batch 64 --sweep
refused "burst cluster: malformed list" cluster --devices a100:8,,v100:8
refused "burst sim: malformed list" sim --model vgg16 --devices a100:8:v100 --global-batch 64

finish "checks of mixed clusters passed"
