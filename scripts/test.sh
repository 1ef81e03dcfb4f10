#!/usr/bin/env bash
# The whole test suite: set up, build Release and the sanitizer build, run ctest on both.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
jobs="$(nproc)"

scripts/build.sh release
echo "== ctest (release)"
(cd build/release && ctest --output-on-failure -j "$jobs")

# ASan + UBSan over the libtorch-free libraries and the CLI built on them. The torchvision
# comparison runs once, in release: it exercises Python, not our memory safety.
scripts/build.sh sanitize
echo "== ctest (ASan + UBSan)"
(cd build/sanitize && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure -j "$jobs" -LE torchvision)
