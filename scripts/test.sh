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
# The sanitizer variant shares no object with the default build (its flags differ), so it
# compiles beside the default build's tests, at the lowest CPU priority (nice 19: the tests
# keep the CPU they use; the build takes what they leave while they wait on Slurm, Python and
# the trainer's processes); test-variants.sh below runs its tests. Its log: build-sanitize.log.
DLSWEEP_VARIANT_BUILD_ONLY=1 nice -n 19 scripts/test-variants.sh sanitize > build-sanitize.log 2>&1 &
sanitize_build=$!
rc=0
ctest --test-dir build --output-on-failure -j"${DLSWEEP_TEST_JOBS:-2}" --timeout 900 || rc=$?
t3=$SECONDS
bg=0
wait "$sanitize_build" || bg=$?
if [[ $bg -ne 0 ]]; then
  cat build-sanitize.log
  echo "test.sh: the sanitizer variant's build failed (exit $bg; its log is above)" >&2
fi
[[ $rc -eq 0 ]] || exit "$rc"
[[ $bg -eq 0 ]] || exit "$bg"
echo "test.sh: the sanitizer variant's build, beside the tests: $(grep -h 'built in' build-sanitize.log || true)"
t4=$SECONDS
# The other documented build variants (trainer only, orchestrator only, sanitizers, MPICH),
# each built and tested.
scripts/test-variants.sh
echo "test.sh: packages $((t1 - t0)) s, default build $((t2 - t1)) s, its tests $((t3 - t2)) s," \
  "then waited $((t4 - t3)) s for the sanitizer build, variants $((SECONDS - t4)) s"
