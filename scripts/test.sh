#!/usr/bin/env bash
# test.sh — the test command: install dependencies, build, run every test through ctest, then
# build and test the other build variants (scripts/test-variants.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
scripts/install-deps.sh
t1=$SECONDS
scripts/build.sh
t2=$SECONDS
ctest --test-dir build --output-on-failure -j"${DLSWEEP_TEST_JOBS:-2}" --timeout 900
t3=$SECONDS
# The other documented build variants (trainer only, orchestrator only, sanitizers, MPICH),
# each built and tested.
scripts/test-variants.sh
echo "test.sh: packages $((t1 - t0)) s, default build $((t2 - t1)) s, its tests $((t3 - t2)) s," \
  "variants $((SECONDS - t3)) s"
