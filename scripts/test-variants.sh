#!/usr/bin/env bash
# test-variants.sh — the documented build variants besides the default one, each configured,
# built and tested in a build folder of its own (scripts/test.sh runs it after the default
# build's tests; measured on 2 cores: see README "Build variants"):
#   build-trainer-only/   -DDLSWEEP_TRAINER_ONLY=ON: common/, trainer/ and their tests (the
#                         GPU-host build; with nvcc present its CUDA kernels compile too)
#   build-orchestrator/   -DDLSWEEP_TRAINER=OFF: the orchestrator alone, no oneDNN/MPI/CUDA
#                         looked for; every test of it except fuzz_smoke (it builds its own
#                         targets with clang, identical in every variant) and pytorch_ddp (it
#                         runs no trainer code: the default build's run covers it)
# The CUDA compile where nvcc exists is part of the default build (cmake/DlsweepCuda.cmake
# turns it on when nvcc, cuDNN and NCCL are found).
set -euo pipefail
cd "$(dirname "$0")/.."
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
jobs=${DLSWEEP_JOBS:-2}
variant() {  # variant DIR CTEST_ARGS... -- CMAKE_ARGS...
  local dir=$1; shift
  local ctest_args=()
  while [[ $1 != -- ]]; do ctest_args+=("$1"); shift; done
  shift
  local t0=$SECONDS
  echo "test-variants: $dir ($*)"
  cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DDLSWEEP_BUILD_BENCH=OFF "$@" > "$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; exit 1; }
  cmake --build "$dir" -j"$jobs"
  local t1=$SECONDS
  ctest --test-dir "$dir" --output-on-failure -j"${DLSWEEP_TEST_JOBS:-2}" --timeout 900 "${ctest_args[@]}"
  echo "test-variants: $dir built in $((t1 - t0)) s, tested in $((SECONDS - t1)) s"
}
mkdir -p build-variants
variant build-variants/trainer-only -- -DDLSWEEP_TRAINER_ONLY=ON
variant build-variants/orchestrator -E '^(fuzz_smoke|pytorch_ddp)$' -- -DDLSWEEP_TRAINER=OFF
