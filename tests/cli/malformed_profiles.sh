#!/usr/bin/env bash
# Usage: malformed_profiles.sh BURST_BINARY CORPUS_DIR
#
# Feeds every CORPUS_DIR/*.json as a profile to `burst cost --profile FILE` and
# `burst devices --profile FILE`, plus bad paths and bad `burst cost/fit` command lines; each
# must be refused by the rule in refusal.sh. Exits 1 listing every input that broke it.
set -u

if [ $# -ne 2 ]; then
  echo "usage: $0 BURST_BINARY CORPUS_DIR" >&2
  exit 64
fi
burst=$1
corpus=$2
export LC_ALL=C
work=$(mktemp -d "${TMPDIR:-/tmp}/burst-malformed-profiles.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

# shellcheck source=refusal.sh
source "$(dirname "$0")/refusal.sh"

# --- the corpus -----------------------------------------------------------------------------
shopt -s nullglob
files=("$corpus"/*.json)
shopt -u nullglob
if [ ${#files[@]} -lt 15 ]; then
  echo "FAIL: only ${#files[@]} *.json files in $corpus (expected at least 15)"
  exit 1
fi
for file in "${files[@]}"; do
  refused "$(basename "$file")" cost --model fmnist_cnn --profile "$file"
  refused "$(basename "$file") (devices)" devices --profile "$file" --json
  refused "$(basename "$file") (fit)" fit --profile "$file"
done

# --- paths that are not profiles ------------------------------------------------------------
mkdir -p "$work/dir.json"
refused "nonexistent path" cost --model fmnist_cnn --profile "$work/does-not-exist.json"
refused "directory path" cost --model fmnist_cnn --profile "$work/dir.json"
refused "/dev/null" cost --model fmnist_cnn --profile /dev/null

# --- bad command lines ----------------------------------------------------------------------
refused "cpu without a profile" cost --model fmnist_cnn --device cpu
refused "unknown device" cost --model fmnist_cnn --device tpu
refused "no device, no profile" cost --model fmnist_cnn
refused "zero batch" cost --model vgg16 --device a100 --batch 0
refused "negative batch" cost --model vgg16 --device a100 --batch -2
refused "batch not a number" cost --model vgg16 --device a100 --batch many
refused "device for another profile" cost --model fmnist_cnn --device a100 --profile "${files[0]}"
refused "fit without a profile" fit
refused "fit with a zero batch" fit --profile "${files[0]}" --fit-batches 0,4
refused "unknown device listing" devices --device tpu

refusal_summary
