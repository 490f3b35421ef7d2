# ccache.sh — sourced by build.sh and test-variants.sh: with Debian's ccache present, compiles go
# through it, so the variants scripts/test.sh builds after the default build (orchestrator only,
# trainer only) reuse the default build's objects instead of compiling them again (on 2 cores the
# second compile of the orchestrator alone took 7-19 minutes). Build folders sit one level under
# the source root (build/, build-orchestrator/, ...): ninja compiles from the build folder, and
# with base_dir set ccache hashes paths relative to it, so equal depths give equal hashes.
# Sets cache_args (CMake arguments; empty without ccache). DLSWEEP_CCACHE=0 turns it off.
cache_args=()
if [[ ${DLSWEEP_CCACHE:-1} != 0 ]] && command -v ccache > /dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  export CCACHE_DIR=${CCACHE_DIR:-$PWD/.cache/ccache}
  export CCACHE_NOHASHDIR=1
  cache_args=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
              -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
