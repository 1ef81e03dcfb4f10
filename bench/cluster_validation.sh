#!/usr/bin/env bash
# The validation table of docs/cluster-sim.md: Tiresias under the measured-table job model
# on the 8 Pollux workloads (16 nodes x 4 GPUs, 60 s rounds, 30 s restarts), burst's average
# JCT against the published simulator's (data/pollux-traces/README.md), per workload and on
# the mean.
# Usage: bench/cluster_validation.sh [path/to/burst]
set -euo pipefail
burst=${1:-build/release/apps/burst/burst}
data=data/pollux-traces
published=(2474 5145 3876 3280 3501 3470 5480 5080)
printf '| workload | burst avg JCT (s) | published (s) | difference |\n|---|---|---|---|\n'
ours_sum=0
for w in 1 2 3 4 5 6 7 8; do
  ours=$("$burst" cluster-sim --trace "$data/workloads/workload-$w.csv" --applications "$data/applications" \
    --policy tiresias --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["avg_jct_s"])')
  theirs=${published[$((w - 1))]}
  ours_sum=$(python3 -c "print($ours_sum + $ours)")
  python3 -c "print(f'| {$w} | {$ours:.0f} | {$theirs} | {100 * ($ours / $theirs - 1):+.1f}% |')"
done
theirs_list=$(IFS=,; echo "${published[*]}")
python3 -c "o = $ours_sum / 8; t = sum([$theirs_list]) / 8; print(f'| mean | {o:.0f} | {t:.0f} | {100 * (o / t - 1):+.1f}% |')"
