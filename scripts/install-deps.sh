#!/usr/bin/env bash
# install-deps.sh — installs every Debian package dlsweep needs to build, test and run.
# Idempotent: packages already present are left alone; safe to run twice. Needs root (or
# sudo). Set DLSWEEP_SKIP_APT=1 to skip (e.g. on a machine managed by someone else).
# --bench also installs the peers the benchmarks compare against in the same run: Debian's
# python3-torch with OpenBLAS's OpenMP build (bench_trainer_throughput), python3-optuna
# (bench_search_quality, bench_bookkeeping) and python3-cmaes (Optuna's CmaEsSampler, the
# "optuna 3.1 cmaes" row of bench_search_quality).
set -euo pipefail

PACKAGES=(
  # build (ccache: the build variants scripts/test.sh builds reuse the default build's objects)
  build-essential cmake ninja-build pkg-config ccache
  # libraries
  libsqlite3-dev sqlite3 libboost-dev libboost-system-dev libdnnl-dev nlohmann-json3-dev
  libyaml-cpp-dev catch2 libcli11-dev libfmt-dev libspdlog-dev libkainjow-mustache-dev
  zlib1g-dev
  # search: the gp and cmaes samplers (linear algebra; L-BFGS-B for the kernel fit and the acquisition)
  libeigen3-dev liblbfgspp-dev
  # the charting library inlined into `dlsweep report` pages
  libjs-chart.js
  # oneDNN's CMake config asks for OpenCL even for CPU-only use
  ocl-icd-opencl-dev opencl-c-headers
  # MPI (data-parallel trials); MPICH too for the trainer's MPICH build test (Open MPI stays
  # the default mpirun/mpicxx: its alternatives' priority is higher)
  openmpi-bin libopenmpi-dev libmpich-dev
  # Slurm: the backend's libslurm driver, and the real single-host cluster the tests start
  slurmctld slurmd slurm-client munge libslurm-dev libpmix-dev
  # ... and its accounting, for a site's per-user submit limit (slurm-local.sh --max-submit-jobs):
  # MariaDB's server and client binaries only (the -core packages), never the mariadb-server
  # package, whose postinst starts a system service and fails the install where it cannot
  slurmdbd mariadb-server-core mariadb-client-core
  # data
  dataset-fashion-mnist
  # tests (clang + libFuzzer: the fuzz targets in fuzz/, built by the ctest `fuzz_smoke`)
  python3 clang libclang-rt-14-dev
  # tests under load: scripts/ctest-under-load.sh (ctest -j2 beside `stress --cpu 1`)
  stress
  # tests of the Python trial library (python/; ctest python_trial; python3-optuna for the
  # median/percentile pruner parity test against Optuna) and of the PyTorch DDP example
  # (examples/pytorch/; ctest pytorch_ddp_local and pytorch_ddp_slurm: torchrun, gloo)
  python3-pytest python3-torch python3-optuna
  # tests: `dlsweep report` pages opened in headless Chromium, driven by a node script
  chromium nodejs
  # tests: a real FUSE filesystem (statfs type FUSE) for --db off the local disk (e2e db_placement)
  bindfs
  # tests: the release tarball run by a non-root user in a root holding nothing else (ctest
  # install_tarball: bwrap's user namespace, a static busybox as the shell)
  bubblewrap busybox-static
  # the user guide as a site: docs/ built by `mkdocs build --strict` (ctest docs_site)
  mkdocs mkdocs-material
)

if [[ "${1:-}" == --bench ]]; then
  # python3-cmaes: Optuna 3.1's CmaEsSampler runs on it (bench_search_quality's optuna cmaes row);
  # Debian's python3-optuna depends on it today, named here because the bench needs it
  PACKAGES+=(python3-torch libopenblas0-openmp python3-optuna python3-cmaes)
fi

if [[ "${DLSWEEP_SKIP_APT:-0}" == 1 ]]; then
  echo "install-deps: DLSWEEP_SKIP_APT=1, skipping apt" >&2
  exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
