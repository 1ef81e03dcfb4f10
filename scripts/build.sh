#!/usr/bin/env bash
# Configures and builds one flavour of burst with CMake + Ninja (+ ccache when present).
#   scripts/build.sh release   -> build/release   (optimised; what users run)
#   scripts/build.sh sanitize  -> build/sanitize  (ASan + UBSan, libtorch-free parts only)
set -euo pipefail
cd "$(dirname "$0")/.."

flavour="${1:-release}"
case "$flavour" in
  release) flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  sanitize) flags=(-DCMAKE_BUILD_TYPE=Debug -DBURST_SANITIZE=ON -DBURST_WITH_TORCH=OFF) ;;
  *) echo "usage: scripts/build.sh [release|sanitize]" >&2; exit 2 ;;
esac

cmake -S . -B "build/$flavour" -G Ninja "${flags[@]}" >/dev/null
ninja -C "build/$flavour" --quiet
