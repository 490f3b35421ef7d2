#!/usr/bin/env bash
# test-variants.sh — the documented build variants besides the default one, each configured,
# built and tested in a build folder of its own (scripts/test.sh runs it after the default
# build's tests; measured on 2 cores: see docs/getting-started.md, "Build variants"). With
# ccache (scripts/lib/ccache.sh) the trainer-only and orchestrator-only builds reuse the
# default build's objects: what they test is that they configure, compile what differs and
# link without the other half's packages.
#   build-trainer-only/   -DDLSWEEP_TRAINER_ONLY=ON: common/, trainer/ and their tests (the
#                         GPU-host build; with nvcc present its CUDA kernels compile too)
#   build-orchestrator/   -DDLSWEEP_TRAINER=OFF: the orchestrator alone, no oneDNN/MPI/CUDA
#                         looked for; its suites that run in seconds (the long ones -- the
#                         local Slurm cluster, the Python library, Chromium, fuzz_smoke,
#                         pytorch_ddp_* -- run the same code as in the default build, which
#                         runs them; `DLSWEEP_VARIANTS_FULL=1` runs them here too)
#   build-sanitize/       AddressSanitizer + UndefinedBehaviorSanitizer (-DDLSWEEP_TRAINER=OFF,
#                         -O0 -g1: the fastest compile): only the engine's suite and the unit suites of what it
#                         keeps in memory (test_common, test_db, test_study, test_engine) are
#                         built and run; any report fails the test (halt_on_error, no recover).
#                         test_search is left out: pure arithmetic, and 3-4 minutes under the
#                         sanitizers on 2 cores
#   (MPICH, non-root)     tests/install/trainer_build_test.sh: the trainer-only build with
#                         MPICH, as nobody into a temporary $HOME/.local, and its 1-vs-2-rank test
# The CUDA compile where nvcc exists is part of the default build (cmake/DlsweepCuda.cmake
# turns it on when nvcc, cuDNN and NCCL are found).
# Usage: test-variants.sh [trainer-only] [orchestrator] [sanitize] [mpich] — the variants named
# (default: all four, in that order). DLSWEEP_VARIANT_BUILD_ONLY=1 configures and builds them
# without running their tests (scripts/test.sh builds the sanitizer variant that way beside the
# default build's tests, then runs this script for all: its build is then up to date).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ccache.sh
wanted=("$@")
[[ ${#wanted[@]} -gt 0 ]] || wanted=(trainer-only orchestrator sanitize mpich)
want() { local w; for w in "${wanted[@]}"; do [[ $w == "$1" ]] && return 0; done; return 1; }
for w in "${wanted[@]}"; do
  case $w in trainer-only | orchestrator | sanitize | mpich) ;;
    *) echo "test-variants: unknown variant '$w' (trainer-only, orchestrator, sanitize, mpich)" >&2; exit 2 ;;
  esac
done
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
jobs=${DLSWEEP_JOBS:-2}
targets=()  # set around a variant call: build only these targets (empty: everything)
variant() {  # variant DIR CTEST_ARGS... -- CMAKE_ARGS...
  local dir=$1; shift
  local ctest_args=()
  while [[ $1 != -- ]]; do ctest_args+=("$1"); shift; done
  shift
  local t0=$SECONDS
  echo "test-variants: $dir ($*)"
  cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DDLSWEEP_BUILD_BENCH=OFF "${cache_args[@]}" "$@" > "$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; exit 1; }
  cmake --build "$dir" -j"$jobs" ${targets[@]+--target "${targets[@]}"}
  local t1=$SECONDS
  if [[ ${DLSWEEP_VARIANT_BUILD_ONLY:-0} == 1 ]]; then
    echo "test-variants: $dir built in $((t1 - t0)) s (its tests not run: DLSWEEP_VARIANT_BUILD_ONLY)"
    return
  fi
  ctest --test-dir "$dir" --output-on-failure -j"${DLSWEEP_TEST_JOBS:-2}" --timeout 900 "${ctest_args[@]}"
  echo "test-variants: $dir built in $((t1 - t0)) s, tested in $((SECONDS - t1)) s"
}
want trainer-only && variant build-trainer-only -- -DDLSWEEP_TRAINER_ONLY=ON
long='^(fuzz_smoke|pytorch_ddp_.*)$'
[[ ${DLSWEEP_VARIANTS_FULL:-0} == 1 ]] ||
  long='^(fuzz_smoke|pytorch_ddp_.*|test_slurm|slurm_local_script|python_.*|test_report_chromium)$'
want orchestrator && variant build-orchestrator -E "$long" -- -DDLSWEEP_TRAINER=OFF
# The sanitizers over the engine and the unit suites below it: a walk through a freed node, an
# overflow, a misaligned or out-of-range value fails the run where it happens. Freed memory is
# filled (max_free_fill_size): a std::map walked through a node freed under it reads the node
# inside libstdc++, which ASan does not instrument; filled, the walk crashes where it happens.
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
targets=(test_common test_db test_study test_engine)
want sanitize && ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:max_free_fill_size=4096} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  variant build-sanitize -R '^test_(common|db|study|engine)$' -- -DDLSWEEP_TRAINER=OFF \
  -DCMAKE_CXX_FLAGS="$sanitize" -DCMAKE_CXX_FLAGS_RELEASE="-O0 -g1" -DCMAKE_EXE_LINKER_FLAGS="$sanitize"
targets=()
# dlsweep-train with MPICH, built as a cluster user builds it: not root, into $HOME/.local,
# the MPI chosen by MPI_CXX_COMPILER; then the 1-vs-2-rank test under MPICH's mpirun (Open
# MPI's is the trainer-only variant above), and (as root) its 2-rank trial on a real one-host
# Slurm cluster with srun --mpi=pmi2, driven by the default build's dlsweep. Exit 77: SKIPPED.
if want mpich; then
  t0=$SECONDS
  rc=0
  bin=
  [[ -x build/bin/dlsweep ]] && bin=$PWD/build/bin/dlsweep
  DLSWEEP_BIN=$bin tests/install/trainer_build_test.sh . mpich || rc=$?
  [[ $rc -eq 0 || $rc -eq 77 ]] || exit "$rc"
  echo "test-variants: trainer with MPICH (non-root) in $((SECONDS - t0)) s"
fi
