#!/usr/bin/env bash
# How well the analytic `cpu` model predicts batches it was not fitted on.
#
# For fmnist_cnn and vgg16 at 32x32 input: profile every layer on this machine at per-device
# batches 1, 2, 4, 8, 16, 32 (`burst profile`, one thread), fit the analytic model on
# batches {1, 4, 16} only, and print its error on the held-out batches {2, 8, 32}
# (median and mean of |predicted - measured| / measured over all layer entries, forward +
# backward). Target: median <= 20% for each model.
#
# Usage: bench/cpu_fit_accuracy.sh [BURST_BINARY] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
burst=${1:-build/release/apps/burst/burst}
out=${2:-build/bench}
mkdir -p "$out"

for model in fmnist_cnn vgg16:image_size=32; do
  file="$out/profile-${model//[:=]/_}.json"
  start=$(date +%s%N)
  "$burst" profile --model "$model" --batch-sizes 1,2,4,8,16,32 --threads 1 -o "$file" 2>/dev/null
  milliseconds=$(( ($(date +%s%N) - start) / 1000000 ))
  "$burst" fit --profile "$file" --fit-batches 1,4,16 --eval-batches 2,8,32 --json > "$file.fit.json"
  python3 - "$model" "$file.fit.json" "$milliseconds" <<'PY'
import json, sys
model, path, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]) / 1000
fit = json.load(open(path))
held, on = fit["held_out"], fit["fit"]
classes = ", ".join(f"{k} {100 * v['median_relative_error']:.1f}% ({v['entries']})"
                    for k, v in held["by_class"].items() if v["entries"])
verdict = "meets" if held["median_relative_error"] <= 0.20 else "MISSES"
print(f"{model}: profiled in {seconds:.1f} s; fitted on batches 1,4,16 ({on['entries']} entries, "
      f"median error {100 * on['median_relative_error']:.1f}%); held-out batches 2,8,32: "
      f"median {100 * held['median_relative_error']:.1f}%, mean {100 * held['mean_relative_error']:.1f}% "
      f"over {held['entries']} entries [{classes}] -> {verdict} the 20% target")
PY
done
