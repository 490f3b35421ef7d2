#!/usr/bin/env bash
# quickstart.sh — install dependencies, build, and run examples/quickstart.yaml on this
# machine (local backend, real Fashion-MNIST). Results land in ./dlsweep.db.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
export PATH="$PWD/build/bin:$PATH"
db="${DLSWEEP_DB:-$PWD/dlsweep.db}"
if dlsweep --db "$db" status fmnist-quickstart >/dev/null 2>&1; then
  echo "quickstart: study fmnist-quickstart already in $db — showing its results (delete $db to run it again)"
else
  dlsweep --db "$db" submit examples/quickstart.yaml
fi
dlsweep --db "$db" results fmnist-quickstart
dlsweep --db "$db" best fmnist-quickstart || true
