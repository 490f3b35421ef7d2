#!/usr/bin/env bash
# trainer_build_test.sh SOURCE_DIR openmpi|mpich — dlsweep-train built from source the way a
# cluster user builds it (docs/slurm.md, "Installing on a cluster"): as a non-root user, with only a
# C++ compiler, CMake, oneDNN and the chosen MPI (selected through MPI_CXX_COMPILER, as a
# module's mpicxx would be), a trainer-only Release build installed into $HOME/.local; then
# the 1-vs-2-rank equivalence test (test_trainer "[mpi]") under that MPI's mpirun, first on
# PATH as a module puts it. Run as root, it builds as nobody with a fresh HOME.
# Exit 77 (SKIPPED) when that MPI's Debian wrappers are missing; DLSWEEP_JOBS: compile jobs;
# DLSWEEP_KEEP_TRAINER_BUILD=1 keeps the temporary HOME (with .local/bin/dlsweep-train);
# DLSWEEP_BIN=PATH/dlsweep adds the 2-rank Slurm trial (slurm_mpi_trial.sh; root only).
set -euo pipefail
skip() { echo "trainer_build_test: SKIPPED: $*"; exit 77; }
die() { echo "trainer_build_test: FAILED: $*" >&2; exit 1; }

if [[ ${1:-} == --unprivileged ]]; then
  src=$2 mpi=$3 mpicxx=$4 mpirun=$5 mpilib=$6
  cd "$HOME"
  mkdir -p mpi-bin
  # A script, not a link: MPICH's mpiexec finds hydra_pmi_proxy beside the path it was run as.
  printf '#!/bin/sh\nexec %q "$@"\n' "$mpirun" > mpi-bin/mpirun
  chmod +x mpi-bin/mpirun
  export PATH=$HOME/mpi-bin:$PATH
  gen=()
  command -v ninja > /dev/null && gen=(-G Ninja)
  t0=$SECONDS
  cmake -S "$src" -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DDLSWEEP_TRAINER_ONLY=ON \
    -DDLSWEEP_CUDA=OFF -DDLSWEEP_BUILD_BENCH=OFF -DDLSWEEP_FUZZ_SMOKE=OFF \
    -DCMAKE_INSTALL_PREFIX="$HOME/.local" -DMPI_CXX_COMPILER="$mpicxx" > configure.log 2>&1 ||
    { cat configure.log; die "configure with MPI_CXX_COMPILER=$mpicxx failed"; }
  cmake --build build -j"${DLSWEEP_JOBS:-2}" --target dlsweep-train test_trainer
  cmake --install build > install.log
  t1=$SECONDS
  exe=$HOME/.local/bin/dlsweep-train
  [[ -x $exe ]] || die "cmake --install did not put dlsweep-train into $HOME/.local/bin"
  LC_ALL=C readelf -d "$exe" | grep -q "Shared library: \[$mpilib" ||
    die "$exe does not link $mpilib (the $mpi library): $(LC_ALL=C readelf -d "$exe" | grep NEEDED)"
  build/bin/test_trainer --order decl "[mpi]" > mpi-test.log 2>&1 || { cat mpi-test.log; die "test_trainer [mpi] failed with $mpi"; }
  cat mpi-test.log
  # The case returns early (with a warning) where mpirun or the MPI build is missing: that is
  # not a pass here.
  grep -q "1 vs 2 ranks: max relative loss difference" mpi-test.log ||
    die "the 1-vs-2-rank equivalence case did not run with $mpi (see above)"
  echo "trainer_build_test: $mpi: built and installed in $((t1 - t0)) s, 1-vs-2-rank test in $((SECONDS - t1)) s (as uid $(id -u), into $HOME/.local)"
  exit 0
fi

src=$(realpath "${1:?usage: trainer_build_test.sh SOURCE_DIR openmpi|mpich}")
mpi=${2:?usage: trainer_build_test.sh SOURCE_DIR openmpi|mpich}
case $mpi in
  openmpi) mpicxx=/usr/bin/mpicxx.openmpi mpirun=/usr/bin/mpirun.openmpi mpilib=libmpi.so plugin=pmix ;;
  mpich) mpicxx=/usr/bin/mpicxx.mpich mpirun=/usr/bin/mpirun.mpich mpilib=libmpich.so plugin=pmi2 ;;
  *) die "unknown MPI '$mpi' (openmpi or mpich)" ;;
esac
[[ -x $mpicxx && -x $mpirun ]] || skip "$mpicxx or $mpirun missing (Debian: libopenmpi-dev / libmpich-dev)"

work=$(mktemp -d "${TMPDIR:-/tmp}/dlsweep-trainer-$mpi.XXXXXX")
if [[ -n ${DLSWEEP_KEEP_TRAINER_BUILD:-} ]]; then
  echo "trainer_build_test: DLSWEEP_KEEP_TRAINER_BUILD set: the build and its HOME stay in $work"
else
  trap 'rm -rf -- "$work"' EXIT
fi
mkdir "$work/home"
as_user=(env)
if [[ $(id -u) -eq 0 ]]; then
  command -v setpriv > /dev/null || skip "running as root and setpriv (util-linux) is missing to become nobody"
  chmod 0755 "$work"
  chown 65534:65534 "$work/home"
  as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/local/bin:/usr/bin:/bin
           ${DLSWEEP_JOBS:+DLSWEEP_JOBS=$DLSWEEP_JOBS})
fi
"${as_user[@]}" HOME="$work/home" TMPDIR="$work/home" bash "$(realpath "$0")" --unprivileged "$src" "$mpi" "$mpicxx" "$mpirun" "$mpilib"
# With DLSWEEP_BIN (a dlsweep to drive it) and root: the installed trainer's 2-rank trial on a
# real single-host Slurm cluster, `srun --mpi=pmix` (Open MPI) / `--mpi=pmi2` (MPICH).
if [[ -n ${DLSWEEP_BIN:-} ]]; then
  rc=0
  "$src/tests/install/slurm_mpi_trial.sh" "$DLSWEEP_BIN" "$work/home/.local/bin/dlsweep-train" "$plugin" || rc=$?
  [[ $rc -eq 0 || $rc -eq 77 ]] || die "the 2-rank Slurm trial with $mpi (srun --mpi=$plugin) failed"
fi
