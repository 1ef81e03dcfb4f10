#!/usr/bin/env bash
# Mixed clusters (docs/heterogeneous.md): burst's plan against the three baselines the
# report prints beside it, on built-in clusters of two kinds.
#
# usage: bench/heterogeneous_results.sh [BURST (build/release/apps/burst/burst)] [REPEATS (3)]
#
# Rows: 8 A100 + 8 V100 (at the default precision and in FP16), 16 A100 + 16 A100-80GB, 8 H100 + 24 A100, each with vgg16 at global
# batch 64, resnet50 at 256 and gpt2 at 32. For each, `burst plan --json` (the burst planner:
# per-layer device counts drawn fastest kind first, each block of layers shared by speed)
# reports its iteration time and, evaluated alike, the best kind alone (the burst planner on
# that kind's devices), all devices split evenly (DDP) and all devices with one ratio per
# kind (Poplar/EasyScale). Columns: each time in ms, burst's speedup over each baseline, each
# kind's share of the samples, and the wall time of the whole command pinned to one core
# (taskset -c 0; median of REPEATS runs, planning and the baselines included).
set -euo pipefail
burst=${1:-build/release/apps/burst/burst}
repeats=${2:-3}
python3 - "$burst" "$repeats" <<'PY'
import json, statistics, subprocess, sys, time

burst, repeats = sys.argv[1], int(sys.argv[2])
# (cluster, --precision): the default is the fastest kind's (TF32 on A100/H100; a V100 has no
# TF32 and runs FP32); A100 + V100 again in FP16, which both run on tensor cores.
clusters = [("a100:8,v100:8", None), ("a100:8,v100:8", "fp16"), ("a100:16,a100-80gb:16", None),
            ("h100-sxm:8,a100:24", None)]
models = [("vgg16", 64), ("resnet50", 256), ("gpt2", 32)]
print("| cluster | precision | model | batch | burst ms | best kind alone ms | even split (DDP) ms | one ratio per kind ms "
      "| vs alone | vs even | vs one ratio | samples per kind | plan s (1 core) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for cluster, precision in clusters:
    for model, batch in models:
        command = ["taskset", "-c", "0", burst, "plan", "--model", model, "--devices", cluster,
                   "--global-batch", str(batch), "--json"] + (["--precision", precision] if precision else [])
        seconds, report = [], None
        for _ in range(repeats):
            start = time.perf_counter()
            out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            seconds.append(time.perf_counter() - start)
            report = json.loads(out)
        t = report["iteration_time_ms"]
        base = report["mixed"]["baselines"]
        alone, even, ratio = (base[k]["iteration_time_ms"] for k in ("one_kind_alone", "even_split", "one_ratio"))
        alone_name = base["one_kind_alone"]["name"].split(" (")[0]
        shares = ", ".join("%s %.0f%%" % (k["kind"], 100 * k["sample_share"]) for k in report["mixed"]["kinds"])
        print("| %s | %s | %s | %d | %.3f | %.3f (%s) | %.3f | %.3f | %.2fx | %.2fx | %.2fx | %s | %.2f |" % (
            cluster, precision or "default", model, batch, t, alone, alone_name, even, ratio, alone / t, even / t, ratio / t, shares,
            statistics.median(seconds)))
        sys.stdout.flush()
PY
