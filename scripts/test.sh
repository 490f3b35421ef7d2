#!/usr/bin/env bash
# test.sh — the test command: install dependencies, build, run every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j"${DLSWEEP_TEST_JOBS:-2}" --timeout 900
