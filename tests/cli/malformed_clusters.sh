#!/usr/bin/env bash
# Usage: malformed_clusters.sh BURST_BINARY CORPUS_DIR
#
# Feeds every CORPUS_DIR/*.json to `burst cluster --cluster FILE` (and again with --json),
# plus bad paths and bad `burst cluster` command lines. Each must be refused the same way:
# exit code exactly 2, nothing on stdout, and exactly one non-empty line on stderr starting
# with "burst: error: " (no sanitizer report, no abort), within 20 seconds. Exits 1 listing
# every input that broke the rule.
set -u

# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
cli_setup "$0 BURST_BINARY CORPUS_DIR" 2 "$@"
corpus=$2
corpus_files "$corpus" 15

# --- the corpus -----------------------------------------------------------------------------
for file in "${files[@]}"; do
  refused "$(basename "$file")" cluster --cluster "$file"
  refused "$(basename "$file") (--json)" cluster --cluster "$file" --json
done

# --- paths that are not cluster files -------------------------------------------------------
mkdir -p "$work/dir.json"
refused "nonexistent path" cluster --cluster "$work/does-not-exist.json"
refused "directory path" cluster --cluster "$work"
refused "directory named *.json" cluster --cluster "$work/dir.json"
refused "/dev/null" cluster --cluster /dev/null
refused "empty path" cluster --cluster ""

# --- built-in clusters with bad arguments ---------------------------------------------------
refused "unknown kind" cluster --device tpu --devices 8
refused "empty kind" cluster --device "" --devices 8
refused "upper-case kind" cluster --device A100 --devices 8
refused "zero devices" cluster --device a100 --devices 0
refused "negative devices" cluster --device a100 --devices -8
refused "too many devices" cluster --device a100 --devices 1000001
refused "devices beyond int64" cluster --device a100 --devices 99999999999999999999
refused "devices not a number" cluster --device a100 --devices eight
refused "devices a fraction" cluster --device a100 --devices 2.5

# --- bad command lines ----------------------------------------------------------------------
refused "no options" cluster
refused "--device without --devices" cluster --device a100
refused "--devices without --device" cluster --devices 8
refused "--device and --cluster" cluster --device a100 --devices 8 --cluster "${files[0]}"
refused "--cluster without a value" cluster --cluster
refused "--devices without a value" cluster --device a100 --devices
refused "unknown option" cluster --device a100 --devices 8 --frobnicate
refused "extra argument" cluster --device a100 --devices 8 extra
refused "json only" cluster --json

finish "malformed inputs refused with exit 2 and one line"
