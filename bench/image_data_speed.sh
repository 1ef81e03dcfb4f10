#!/usr/bin/env bash
# Data speed: the step time of fmnist_cnn on 2 workers (global batch 64) reading
# Fashion-MNIST as a PNG class folder (--dataset images:DIR, each image decoded when read,
# loaded ahead of the step) against the same run on the in-memory IDX arrays
# (--dataset fashion-mnist). Runs alternate, REPEATS of each; each run's figure is the mean
# ms/iter of its log lines after step 1 (steps 2-300). Prints every run, the medians, their
# ratio, and the longest data wait the runs logged.
#
# usage: bench/image_data_speed.sh BURST [REPEATS]     (REPEATS: 5)
set -euo pipefail
burst=$1
repeats=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$root/scripts/fashion_mnist_images.py" "$work/images" >/dev/null
common=(--model fmnist_cnn --global-batch 64 --steps 300 --nproc 2 --lr 0.05 --momentum 0.9 --seed 1 --log-every 50)

run() {  # KIND DATASET: prints "mean-ms-per-iter longest-data-ms"
  "$burst" train "${common[@]}" --dataset "$2" > "$work/$1.log" 2>&1 || { tail -n 3 "$work/$1.log" >&2; exit 1; }
  awk '/^step/ && $2 > 1 { for (i = 1; i < NF; i++) { if ($(i+1) == "ms/iter") { sum += $i; n++ }
                                                     if ($i == "data") { d = $(i+1); if (d > dmax) dmax = d } } }
       END { printf "%.3f %.3f\n", sum / n, dmax }' "$work/$1.log"
}

images=()
memory=()
for r in $(seq 1 "$repeats"); do
  read -r m md <<< "$(run memory fashion-mnist)"
  read -r i id <<< "$(run images "images:$work/images/train")"
  echo "run $r: in memory $m ms/iter (data wait up to $md ms), image folder $i ms/iter (data wait up to $id ms)"
  memory+=("$m")
  images+=("$i")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mm=$(median "${memory[@]}")
mi=$(median "${images[@]}")
echo "median ms/iter: in memory $mm (range $(printf '%s\n' "${memory[@]}" | sort -g | head -n1)-$(printf '%s\n' "${memory[@]}" | sort -g | tail -n1)), image folder $mi (range $(printf '%s\n' "${images[@]}" | sort -g | head -n1)-$(printf '%s\n' "${images[@]}" | sort -g | tail -n1))"
awk -v a="$mi" -v b="$mm" 'BEGIN { printf "image folder / in memory: %.3f\n", a / b }'
