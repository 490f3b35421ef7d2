#!/usr/bin/env bash
# fetch-trainer-debs.sh DIR — download (not install) the Debian 12 packages that a trainer-only
# build of dlsweep-train needs (-DDLSWEEP_TRAINER_ONLY=ON: oneDNN, nlohmann-json, fmt,
# zlib, Catch2, CLI11, OpenCL headers for oneDNN's CMake config) into DIR, for a host that
# has CUDA, CMake and a compiler but no access to Debian's packages.
# On that host, unpack them into a prefix (never into /):
#   mkdir -p /opt/dlsweep-deps && for f in DIR/*.deb; do dpkg-deb -x "$f" /opt/dlsweep-deps; done
#   export CMAKE_PREFIX_PATH=/opt/dlsweep-deps/usr LD_LIBRARY_PATH=/opt/dlsweep-deps/usr/lib/x86_64-linux-gnu
#   cmake -S . -B build-gpu -DDLSWEEP_TRAINER_ONLY=ON -DDLSWEEP_CUDA=ON ...
# About 10 MB in all.
set -euo pipefail
dir=${1:?usage: fetch-trainer-debs.sh DIR}
mkdir -p "$dir"
cd "$dir"
pkgs=(libdnnl2 libdnnl-dev nlohmann-json3-dev libfmt9 libfmt-dev zlib1g-dev catch2 libcli11-dev
      ocl-icd-opencl-dev ocl-icd-libopencl1 opencl-c-headers opencl-clhpp-headers)
apt-get download "${pkgs[@]}" >/dev/null 2>&1 || { apt-get update -qq && apt-get download "${pkgs[@]}"; }
ls -1 "$PWD"/*.deb
du -sh "$PWD"
