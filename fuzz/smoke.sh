#!/usr/bin/env bash
# smoke.sh — the ctest `fuzz_smoke`: builds the libFuzzer targets of fuzz/ with clang in a
# separate build directory and runs each briefly over its committed corpus (plus a scratch
# directory for what it finds, so the committed corpus is never written). Fails on any
# crash, leak, sanitizer report or timeout. Exits 77 (reported SKIPPED by ctest) when
# clang++ or libFuzzer is missing, so a missing tool never passes silently.
#   usage: fuzz/smoke.sh BUILD_DIR [SECONDS_PER_TARGET]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:?usage: smoke.sh BUILD_DIR [SECONDS_PER_TARGET]}
seconds=${2:-10}
targets=(study metrics_line checkpoint slurm_parse)

cxx=${DLSWEEP_FUZZ_CXX:-$(command -v clang++ || true)}
if [[ -z "$cxx" ]]; then
  echo "fuzz_smoke: SKIPPED: clang++ not found (scripts/install-deps.sh installs clang libclang-rt-14-dev)"
  exit 77
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' >"$probe/p.cpp"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" 2>"$probe/err"; then
  echo "fuzz_smoke: SKIPPED: $cxx cannot link libFuzzer (install libclang-rt-14-dev):"
  cat "$probe/err"
  exit 77
fi

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
mkdir -p "$build"
cmake -S "$here" -B "$build" "${generator[@]}" -DCMAKE_CXX_COMPILER="$cxx" "${launcher[@]}" >"$build/configure.log" 2>&1 \
  || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j2

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for t in "${targets[@]}"; do
  scratch="$probe/new-$t"
  mkdir -p "$scratch"
  dict=()
  [[ -f "$here/$t.dict" ]] && dict=(-dict="$here/$t.dict")
  echo "== fuzz_$t: ${seconds}s over fuzz/corpus/$t"
  if ! (cd "$probe" && "$build/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
          -print_final_stats=1 "${dict[@]}" "$scratch" "$here/corpus/$t" 2>&1 | tail -n 25); then
    echo "fuzz_smoke: fuzz_$t FAILED (the input is kept in $build/failures/)"
    mkdir -p "$build/failures" && cp "$probe"/crash-* "$probe"/leak-* "$probe"/timeout-* "$probe"/oom-* \
      "$build/failures/" 2>/dev/null || true
    status=1
  fi
done
exit $status
