#!/usr/bin/env bash
# ctest entry `python_trial`: the dlsweep_trial pytest suite under Debian's python3 (the
# `python3` on PATH may be another interpreter without pytest). Exit 77 (SKIPPED in ctest)
# when pytest is missing: install python3-pytest (scripts/install-deps.sh does).
set -euo pipefail
py=${DLSWEEP_PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
if ! "$py" -c 'import pytest' 2>/dev/null; then
  echo "SKIP: $py has no pytest (apt-get install python3-pytest)"
  exit 77
fi
if [[ ${1:-} == --require ]]; then
  if ! "$py" -c "import $2" 2>/dev/null; then
    echo "SKIP: $py has no $2 (apt-get install python3-$2)"
    exit 77
  fi
  shift 2
fi
export PYTHONDONTWRITEBYTECODE=1  # leave no __pycache__ in the source tree
if [[ $# -gt 0 && ${!#} != -* && -f ${!#} ]]; then  # a test file given: run just that
  exec "$py" -m pytest -q -p no:cacheprovider "$@"
fi
exec "$py" -m pytest -q -p no:cacheprovider "$here" "$@"
