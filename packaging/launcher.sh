#!/bin/sh
# dlsweep — the release tarball's launcher (packaging/CMakeLists.txt): runs the real binary,
# libexec/dlsweep/dlsweep, under the glibc loader and libraries bundled in lib/, so that it
# needs nothing from this machine but a kernel and /bin/sh. No LD_LIBRARY_PATH is set for the
# programs dlsweep starts: trials and sbatch run with the host's own
# libraries. DLSWEEP_LAUNCHER tells dlsweep the command to run itself again (--as-job) and
# where share/dlsweep is (/proc/self/exe names the loader).
self=$(readlink -f -- "$0" 2> /dev/null) || self=
if [ -z "$self" ]; then  # no readlink -f: the physical directory of $0 (a link to it is not followed)
  case $0 in */*) dir=${0%/*} ;; *) dir=. ;; esac
  dir=$(cd -P -- "$dir" && pwd -P) || { echo "dlsweep: cannot find the directory of $0" >&2; exit 127; }
  self=$dir/${0##*/}
fi
prefix=${self%/*}
prefix=${prefix%/*}
DLSWEEP_LAUNCHER=$self
export DLSWEEP_LAUNCHER
exec "$prefix/lib/ld-linux-x86-64.so.2" --library-path "$prefix/lib" --argv0 "$0" \
  "$prefix/libexec/dlsweep/dlsweep" "$@"
