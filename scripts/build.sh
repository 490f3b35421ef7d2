#!/usr/bin/env bash
# build.sh — configures and builds dlsweep in ./build (Release, Ninja if present, -j2).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ccache.sh
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "${cache_args[@]}" "$@"
fi
cmake --build build -j"${DLSWEEP_JOBS:-2}"
