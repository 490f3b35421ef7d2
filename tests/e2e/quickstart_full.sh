#!/usr/bin/env bash
# The README's promise, checked whole: examples/quickstart.yaml runs unshortened on the
# real Fashion-MNIST and its best trial reaches >= 0.88 test accuracy.
# usage: quickstart_full.sh DLSWEEP_BIN DLSWEEP_TRAIN_BIN SOURCE_DIR
set -euo pipefail
dlsweep=$1; export DLSWEEP_TRAIN=$2; src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
start=$(date +%s)
"$dlsweep" --db q.db submit "$src/examples/quickstart.yaml"
elapsed=$(( $(date +%s) - start ))
best=$("$dlsweep" --db q.db query "SELECT MAX(best_value) FROM trial_summary" --format csv | tail -1)
"$dlsweep" --db q.db best fmnist-quickstart
echo "quickstart: best val_acc $best in ${elapsed}s"
awk -v b="$best" 'BEGIN { exit !(b >= 0.88) }' || { echo "FAIL: best val_acc $best < 0.88"; exit 1; }
