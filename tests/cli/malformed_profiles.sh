#!/usr/bin/env bash
# Usage: malformed_profiles.sh BURST_BINARY CORPUS_DIR
#
# Feeds every CORPUS_DIR/*.json as a profile to `burst cost --profile FILE` and
# `burst devices --profile FILE`, plus bad paths and bad `burst cost/fit` command lines; each
# must be refused by the refusal rule in common.sh. Exits 1 listing every input that broke it.
set -u

# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
cli_setup "$0 BURST_BINARY CORPUS_DIR" 2 "$@"
corpus=$2
corpus_files "$corpus" 15

# --- the corpus -----------------------------------------------------------------------------
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

finish "malformed inputs refused with exit 2 and one line"
