#!/usr/bin/env bash
# Configures and builds one flavour of burst with CMake + Ninja (+ ccache when present).
#   scripts/build.sh release   -> build/release   (optimised; what users run)
#   scripts/build.sh sanitize  -> build/sanitize  (ASan + UBSan, libtorch-free parts only)
set -euo pipefail
cd "$(dirname "$0")/.."

flavour="${1:-release}"
case "$flavour" in
  release) flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  # -g1: line tables only, enough for the sanitizers' stack traces, and quicker to build.
  sanitize) flags=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DBURST_SANITIZE=ON -DBURST_WITH_TORCH=OFF) ;;
  *) echo "usage: scripts/build.sh [release|sanitize]" >&2; exit 2 ;;
esac

# Unity builds (CMake compiles a target's sources a few at a time as one file) parse the
# heavy headers (libtorch, nlohmann/json, CLI11) once per batch rather than once per file:
# a cold build takes about half as long. Plain `cmake` without it builds file by file.
# libtorch comes from the PyPI torch in .venv (scripts/setup.sh): CMake finds it through
# torch.utils.cmake_prefix_path. The sanitizer build has no libtorch parts and skips it.
if [ "$flavour" = release ]; then
  flags+=("-DCMAKE_PREFIX_PATH=$(.venv/bin/python -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')")
fi

cmake -S . -B "build/$flavour" -G Ninja -DCMAKE_UNITY_BUILD=ON "${flags[@]}" >/dev/null
ninja -C "build/$flavour" --quiet
