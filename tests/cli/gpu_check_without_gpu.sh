#!/usr/bin/env bash
# scripts/gpu-check.sh on a machine without a GPU: one line saying so, exit 0, nothing built.
# Skipped (77) where a GPU is present: there the script is the check itself.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -gt 0 ]; then
  echo "SKIP: this machine has a GPU (run scripts/gpu-check.sh itself)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
output=$("$root/scripts/gpu-check.sh" "$work/out" 2>&1)
status=$?
[ "$status" -eq 0 ] || { echo "FAIL: exit $status: $output"; exit 1; }
[ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ] || { echo "FAIL: more than one line: $output"; exit 1; }
case $output in *"no GPU"*) ;; *) echo "FAIL: does not say 'no GPU': $output"; exit 1 ;; esac
[ ! -e "$work/out" ] || { echo "FAIL: it made $work/out without a GPU"; exit 1; }
echo "ok: $output"
