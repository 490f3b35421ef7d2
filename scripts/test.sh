#!/usr/bin/env bash
# test.sh — the test command: install dependencies, build, run every test through ctest, then
# build and test the other build variants (scripts/test-variants.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j"${DLSWEEP_TEST_JOBS:-2}" --timeout 900
# The other documented build variants (orchestrator only, trainer only), each built and tested
# (about 11 minutes on 2 cores).
scripts/test-variants.sh
