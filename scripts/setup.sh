#!/usr/bin/env bash
# Installs what burst needs to build, test and compare against, from Debian 12's archive.
# Idempotent: prints nothing and changes nothing when every package is present.
set -euo pipefail

packages=(
  cmake g++ ninja-build ccache pkg-config           # build
  libfmt-dev nlohmann-json3-dev libcli11-dev        # formatting, JSON, command line
  libgtest-dev libgmock-dev libbenchmark-dev        # tests and benchmarks
  zlib1g-dev                                        # gzip-compressed IDX datasets (lib/data)
  libonnx-dev libprotobuf-dev                       # ONNX import (lib/graph/src/onnx)
  libtorch-dev libgloo-dev                          # runtime and profiler (libtorch, c10d Gloo)
  libopenblas0-openmp                               # fast BLAS for torch (reference BLAS is ~16x slower)
  python3-torch python3-torchvision                 # the peers burst is checked against
  python3-onnx                                      # reads exported weights in tests/onnx
  dataset-fashion-mnist                             # real training data (IDX files)
  graphviz                                          # docs/images/libraries.svg (scripts/library_picture.sh)
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "burst setup: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
