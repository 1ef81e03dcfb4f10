#!/usr/bin/env bash
# The results table of docs/cluster-sim.md: FIFO, Tiresias and burst's three policies under
# burst's own job model (V100s, 4 per node for the Pollux workloads), average JCT, makespan
# and utilisation, on the 8 Pollux workloads (64 GPUs) and one week of the Philly trace (days
# 28-35) at 256 and 2048 GPUs (8 per node), with the published Pollux and Tiresias figures
# (their simulator, measured tables on T4s) beside for context. Last, the best burst policy's
# average JCT against Tiresias's, per row and on the workloads' mean.
# Usage: bench/cluster_results.sh [path/to/burst]
set -euo pipefail
burst=${1:-build/release/apps/burst/burst}
data=data/pollux-traces
policies=fifo,tiresias,burst-scale,burst-multiplex,burst
published_pollux=(2089 3323 2188 2721 2674 2446 3616 2952)
published_tiresias=(2474 5145 3876 3280 3501 3470 5480 5080)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

row() {  # NAME JSON [PUBLISHED_POLLUX PUBLISHED_TIRESIAS]
  python3 - "$@" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
published = sys.argv[3:5]
d = json.load(open(path))
by = {p["policy"]: p for p in d["policies"]}
cells = []
for policy in ("fifo", "tiresias", "burst-scale", "burst-multiplex", "burst"):
    p = by[policy]
    cells.append(f'{p["avg_jct_s"]:.0f} / {p["makespan_s"] / 3600:.1f} / {100 * p["utilisation"]:.0f}%')
best = min(by[p]["avg_jct_s"] for p in ("burst-scale", "burst-multiplex", "burst"))
ratio = by["tiresias"]["avg_jct_s"] / best
context = f"{published[0]} / {published[1]}" if published else "-"
print(f"| {name} | " + " | ".join(cells) + f" | {ratio:.2f}x | {context} |")
PY
}

printf '| trace (GPUs) | fifo | tiresias | burst-scale | burst-multiplex | burst | Tiresias / best burst (avg JCT) | published Pollux / Tiresias avg JCT (s) |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for w in 1 2 3 4 5 6 7 8; do
  "$burst" cluster-sim --trace "$data/workloads/workload-$w.csv" --policy "$policies" --json > "$out/w$w.json" 2> /dev/null
  row "workload-$w (64)" "$out/w$w.json" "${published_pollux[$((w - 1))]}" "${published_tiresias[$((w - 1))]}"
done
for gpus in 256 2048; do
  "$burst" cluster-sim --trace "$data/philly.csv" --from-day 28 --days 7 --devices "$gpus" --gpus-per-node 8 \
    --policy "$policies" --json > "$out/philly$gpus.json" 2> /dev/null
  row "Philly days 28-35 ($gpus)" "$out/philly$gpus.json"
done
python3 - "$out" <<'PY'
import json, sys
tiresias = best = 0
for w in range(1, 9):
    by = {p["policy"]: p for p in json.load(open(f"{sys.argv[1]}/w{w}.json"))["policies"]}
    tiresias += by["tiresias"]["avg_jct_s"]
    best += min(by[p]["avg_jct_s"] for p in ("burst-scale", "burst-multiplex", "burst"))
print(f"\nworkloads' mean average JCT: tiresias {tiresias / 8:.0f} s, best burst policy {best / 8:.0f} s: {tiresias / best:.2f}x lower")
PY
echo "cells: average JCT (s) / makespan (h) / utilisation (GPU-time held)"
