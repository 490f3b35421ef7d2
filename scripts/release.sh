#!/usr/bin/env bash
# release.sh — builds the release tarball dlsweep-<version>-linux-x86_64.tar.gz: the
# orchestrator with every library it loads (glibc's included) behind a launcher script, the
# Slurm batch template, the Python trial library and the docs (docs/slurm.md, "Installing on
# a cluster"; the layout is packaging/CMakeLists.txt's `release` install component). It runs on
# any x86-64 Linux with kernel >= 3.2 and /bin/sh, as any user, from wherever it is unpacked.
# The last line it prints is the tarball's path.
#
#   scripts/release.sh [--build-dir DIR] [--out DIR]
#
# --build-dir: a configured build to take the binary from (default: build/, configured
# orchestrator-only if it does not exist yet); only the target dlsweep-portable is built
# (main.cpp and the Slurm driver registry on top of the build's libraries). --out: where the
# tarball goes (default: DIR/release).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
out=
while [[ $# -gt 0 ]]; do
  case $1 in
    --build-dir) build=${2:?--build-dir needs a directory}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "release: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $(uname -m) == x86_64 ]] || { echo "release: builds the linux-x86_64 tarball, this machine is $(uname -m)" >&2; exit 1; }
[[ -n $out ]] || out=$build/release

if [[ ! -f $build/CMakeCache.txt ]]; then
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DDLSWEEP_TRAINER=OFF \
    -DDLSWEEP_BUILD_TESTS=OFF -DDLSWEEP_BUILD_BENCH=OFF >&2
fi
if grep -q '^DLSWEEP_TRAINER_ONLY:BOOL=ON' "$build/CMakeCache.txt"; then
  echo "release: $build is a trainer-only build (no orchestrator); use another --build-dir" >&2
  exit 2
fi
cmake --build "$build" --target dlsweep-portable -j"${DLSWEEP_JOBS:-2}" >&2

mkdir -p "$out"
stage=$(mktemp -d "$out/stage.XXXXXX")
trap 'rm -rf -- "$stage"' EXIT
cmake --install "$build" --component release --strip --prefix "$stage/tree" >&2
# The staged tree, run through its own launcher and loader, names its version.
version=$("$stage/tree/bin/dlsweep" --version) ||
  { echo "release: the staged dlsweep does not run: $stage/tree/bin/dlsweep --version failed" >&2; exit 1; }
version=${version#dlsweep }
[[ $version =~ ^[0-9A-Za-z.+~-]+$ ]] || { echo "release: unexpected version '$version'" >&2; exit 1; }
name=dlsweep-$version
mv "$stage/tree" "$stage/$name"
tarball=$out/$name-linux-x86_64.tar.gz
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner -czf "$tarball.tmp" "$name"
mv -f "$tarball.tmp" "$tarball"
echo "release: $(du -k "$tarball" | cut -f1) KiB, $(tar -tzf "$tarball" | wc -l) entries" >&2
realpath "$tarball"
