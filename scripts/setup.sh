#!/usr/bin/env bash
# Installs what burst needs to build, test and compare against: Debian 12's packages, then
# PyTorch and its companions from PyPI into .venv (scripts/python-requirements.txt, pinned),
# then the development tools into the same .venv (scripts/tool-requirements.txt, pinned).
# Idempotent: prints nothing and changes nothing when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake g++ ninja-build ccache pkg-config           # build
  libfmt-dev nlohmann-json3-dev libcli11-dev        # formatting, JSON, command line
  libgtest-dev libgmock-dev libbenchmark-dev        # tests and benchmarks
  zlib1g-dev                                        # gzip-compressed IDX datasets (lib/data)
  libstb-dev                                        # PNG and JPEG decoding (--dataset images:DIR)
  libonnx-dev libprotobuf-dev                       # ONNX import (lib/graph/src/onnx)
  libgloo-dev                                       # headers c10d's ProcessGroupGloo.hpp includes
  python3-venv                                      # .venv, where torch 2.x comes from PyPI
  dataset-fashion-mnist                             # real training data (IDX files)
  graphviz                                          # docs/images/libraries.svg (scripts/library_picture.sh)
  iproute2                                          # network namespaces (runtime.two_hosts)
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "burst setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The virtual environment is remade when the requirements change (the stamp holds the ones it
# was made from). A fresh clone makes it anew: about 3.5 GB from PyPI (torch's CUDA libraries
# are most of it), fetched again unless pip's cache holds the wheels.
requirements=scripts/python-requirements.txt
stamp=.venv/burst-requirements.txt
if ! cmp -s "$requirements" "$stamp" 2>/dev/null; then
  echo "burst setup: installing $(grep -v '^#' "$requirements" | tr '\n' ' ')into .venv (PyPI)" >&2
  rm -rf .venv
  /usr/bin/python3 -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
  cp "$requirements" "$stamp"
fi

# The development tools (scripts/tool-requirements.txt) go into the same .venv with their own
# stamp, so a change to that list installs them without remaking .venv; remaking .venv (above)
# removes the stamp, and they are installed again.
tool_requirements=scripts/tool-requirements.txt
tool_stamp=.venv/burst-tool-requirements.txt
if ! cmp -s "$tool_requirements" "$tool_stamp" 2>/dev/null; then
  echo "burst setup: installing $(grep -v '^#' "$tool_requirements" | tr '\n' ' ')into .venv (PyPI)" >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$tool_requirements" >&2
  cp "$tool_requirements" "$tool_stamp"
fi
