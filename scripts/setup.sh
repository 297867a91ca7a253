#!/usr/bin/env bash
# Installs what bine-cc needs on Debian 12 (when missing) and builds it into build/: the
# targets given as arguments (the main job builds only what it runs, issue 44), else all.
# usage: setup.sh [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(cmake g++ gfortran make python3 time nlohmann-json3-dev libcli11-dev doctest-dev libopenmpi-dev openmpi-bin librsvg2-bin
  libclang-14-dev libclang-cpp14-dev llvm-14-dev clang-14 libclang-rt-14-dev libglpk-dev libboost-dev libsimgrid-dev libz3-dev)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if [ $# -gt 0 ]; then
  cmake --build build -j "$(nproc)" --target "$@"
else
  cmake --build build -j "$(nproc)"
fi
