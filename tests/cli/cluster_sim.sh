#!/usr/bin/env bash
# Usage: cluster_sim.sh BURST_BINARY POLLUX_DATA_DIR
#
# `burst cluster-sim` (docs/cluster-sim.md): a Pollux workload under every policy with the
# measured-table job model (table, JSON with the reported fields, SVG), the published
# Tiresias figure of workload 1 within 10%, and bad input refused with one line and exit 2:
# a malformed trace line (file and line), a job asking for more GPUs than the cluster has
# (or skipped, with --skip-oversized), an unknown application, an unknown policy.
set -u

# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
cli_setup "$0 BURST_BINARY POLLUX_DATA_DIR" 2 "$@"
data=$2
workload="$data/workloads/workload-1.csv"
tables="$data/applications"

quiet all cluster-sim --trace "$workload" --applications "$tables" \
  --policy fifo,tiresias,burst-scale,burst-multiplex,burst --json --svg "$work/cluster.svg"
py_check "every policy reports JCT, makespan, utilisation and throughput; Tiresias near the published figure" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["job_model"] == "measured" and d["gpus"] == 64 and d["nodes"] == 16, d
assert [p["policy"] for p in d["policies"]] == ["fifo", "tiresias", "burst-scale", "burst-multiplex", "burst"]
for p in d["policies"]:
    for key in ("avg_jct_s", "p99_jct_s", "makespan_s", "utilisation", "throughput"):
        assert p[key] > 0, (p["policy"], key)
    assert p["jobs_done"] == 160 and 0 < p["utilisation"] <= 1, p
    assert p["energy_j"] is None  # the measured tables have no power model
tiresias = d["policies"][1]["avg_jct_s"]
assert abs(tiresias / 2474 - 1) < 0.10, tiresias  # the published Tiresias figure of workload 1
svg = open(sys.argv[2]).read()
assert svg.startswith("<svg") and svg.count("<polyline") == 10 and "JCT distribution" in svg
' "$work/all.out" "$work/cluster.svg"

quiet one cluster-sim --trace "$workload" --applications "$tables" --policy fifo --events "$work/events.csv"
py_check "--events lists every job's arrival, start and finish" '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
by = {}
for row in rows:
    by.setdefault(row["job"], []).append(row["event"])
assert len(by) == 160, len(by)
assert all(e[0] == "arrival" and e[1] == "start" and e[-1] == "finish" for e in by.values()), by
assert {r["policy"] for r in rows} == {"fifo"}
' "$work/events.csv"
contains one "fifo "
contains one "16 nodes x 4"

header="name,time,application,num_replicas,batch_size"
# burst's own job model on a cluster of two kinds (planner and evaluator per job shape).
printf '%s\na,0,cifar10,4,512\nb,10,imagenet,4,256\nc,20,ncf,1,32768\n' "$header" > "$work/three.csv"
ok mixed cluster-sim --trace "$work/three.csv" --devices v100:4,a100:4 --policy tiresias,burst --json
py_check "burst's job model plans every job and reports energy on two kinds" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["job_model"] == "burst" and d["device"] == "v100+a100" and d["gpus"] == 8, d
for p in d["policies"]:
    assert p["jobs_done"] == 3 and p["avg_jct_s"] > 0 and p["energy_j"] > 0, p
' "$work/mixed.out"

printf '%s\na,5,cifar10,6,2048\nb,x,cifar10,1,1\n' "$header" > "$work/bad.csv"
refused "malformed number" cluster-sim --trace "$work/bad.csv" --applications "$tables"
contains_error "$work/bad.csv:3: time must be a number in [0, 1000000000], got 'x'"
printf '%s\na,5,cifar10,6\n' "$header" > "$work/short.csv"
refused "short line" cluster-sim --trace "$work/short.csv" --applications "$tables"
contains_error "$work/short.csv:2: expected 5 fields"
printf '%s\na,5,resnet9000,2,128\n' "$header" > "$work/app.csv"
refused "unknown application" cluster-sim --trace "$work/app.csv" --applications "$tables"
contains_error "$work/app.csv:2: unknown application 'resnet9000' (known: bert, cifar10, deepspeech2, imagenet, ncf, yolov3)"
printf '%s\na,5,cifar10,128,4096\nb,6,ncf,1,32768\n' "$header" > "$work/big.csv"
refused "oversized job" cluster-sim --trace "$work/big.csv" --applications "$tables"
contains_error "$work/big.csv:2: job 'a' asks for 128 GPUs, the cluster has 64 (--skip-oversized leaves such jobs out)"
quiet skipped cluster-sim --trace "$work/big.csv" --applications "$tables" --skip-oversized --json
py_check "--skip-oversized leaves the job out and counts it" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["skipped_oversized"] == 1 and d["jobs_done"] == 1, d
' "$work/skipped.out"
# An application the tables have and burst's job model does not map: named with its line.
mkdir -p "$work/apps/toy"
printf 'placement,local_bsz,step_time,sync_time\n1,8,0.1,0\n' > "$work/apps/toy/placements.csv"
printf 'progress,iteration,metric,grad_sqr,grad_var\n10,10,0.5,1,1\n' > "$work/apps/toy/validation-8.csv"
printf '%s\na,0,toy,1,8\n' "$header" > "$work/toy.csv"
quiet toy cluster-sim --trace "$work/toy.csv" --applications "$work/apps"
contains toy "tiresias"
refused "no burst model" cluster-sim --trace "$work/toy.csv" --applications "$work/apps" --job-model burst
contains_error "$work/toy.csv:2: application 'toy' has no model in burst's job model"
refused "unknown policy" cluster-sim --trace "$workload" --policy lottery
contains_error "unknown policy 'lottery' (policies: fifo, tiresias, burst-scale, burst-multiplex, burst)"
refused "unknown job model" cluster-sim --trace "$workload" --job-model magic
contains_error "--job-model must be measured or burst, got 'magic'"
refused "no GPUs" cluster-sim --trace "$workload" --devices 0
refused "no tables" cluster-sim --trace "$workload" --applications "$work/nothing"
contains_error "'$work/nothing' is not a folder"
printf 'a,b\n1,2\n' > "$work/notrace.csv"
refused "not a trace" cluster-sim --trace "$work/notrace.csv"
contains_error "$work/notrace.csv:1: not a job trace"
finish "cluster-sim checks passed"
