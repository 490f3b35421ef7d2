#!/usr/bin/env bash
# adaptive_lr_below_base.sh — is it the LR below the base batch that keeps `batch_ramp:
# adaptive` from the sweep's best time at 1 rank? (issue 41 (b); docs/trainer.md, "One run
# instead of a sweep?"). Per workload, one study of 8 adaptive runs, one at a time, 1 rank, the
# race's settings (bench/adaptive_vs_sweep.sh: start 128, base_lr 0.1 at base_batch 128,
# Nesterov, warmup 0.5 from zero, range up to 4096): adaptive_min_batch 64 (below the base
# batch, where AdaScale's gain falls under 1) or 128 (Pollux's bound: never below the base
# batch), x adaptive_lr adascale or rule (lr_rule sqrt), x seeds 1 and 2. Prints each run's
# time and samples to the target and its mean batch.
#
# usage: bench/adaptive_lr_below_base.sh BIN_DIR WORK_DIR [--workloads mlp,cnn]
# About 6 minutes on 2 cores (MLP ~10 s a run, CNN ~35 s).
set -euo pipefail
usage="usage: adaptive_lr_below_base.sh BIN_DIR WORK_DIR [--workloads mlp,cnn]"
bin=${1:?$usage}
work=${2:?$usage}
shift 2
workloads=mlp,cnn
while [ $# -gt 0 ]; do
  case "$1" in
    --workloads) workloads=$2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift 2
done
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/bench/race_settings.sh"  # race_workload, race_trainer, race_fixed: the race's settings
bin=$(cd "$bin" && pwd)
mkdir -p "$work"
cd "$work"
export PATH="$bin:$PATH" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for w in ${workloads//,/ }; do
  case "$w" in mlp|cnn) ;; *) echo "unknown workload $w (mlp, cnn)" >&2; exit 2 ;; esac
  tr=$(race_trainer "$w")
  target=$(race_workload "$w" | cut -d'|' -f5)
  {
    cat <<YAML
name: lrx-$w
backend: {kind: local, max_concurrent: 1}
trial:
  ranks: 1
  trainer: $tr
objective: {metric: val_acc, mode: max, target: $target}
search: {algorithm: grid, seed: 1}
YAML
    race_fixed
    cat <<YAML
  batch_size: 128
  warmup_epochs: 0.5
  lr_rule: sqrt
  batch_ramp: adaptive
  adaptive_max_batch: 4096
  adaptive_every: 50
space:
  seed: [1, 2]
  adaptive_min_batch: [64, 128]
  adaptive_lr: [adascale, rule]
YAML
  } > "lrx-$w.yaml"
  dlsweep --db lrx.db status "lrx-$w" > /dev/null 2>&1 || dlsweep --db lrx.db submit "lrx-$w.yaml" > "lrx-$w.log" 2>&1
  dlsweep --db lrx.db results "lrx-$w" --format json > "lrx-$w.json"
  python3 - "$w" "lrx-$w.json" <<'PY'
import json, sys
w, rows = sys.argv[1], json.load(open(sys.argv[2]))
print(f"{w}: adaptive_min_batch adaptive_lr seed | time to target s | samples to target | mean batch")
for t in sorted(rows, key=lambda t: (t["params"]["adaptive_min_batch"], t["params"]["adaptive_lr"], t["params"]["seed"])):
    p = t["params"]
    f = lambda v, fmt: "-" if v is None else format(float(v), fmt)
    print(f"  {p['adaptive_min_batch']:>4} {p['adaptive_lr']:9} {p['seed']} | {f(t.get('time_to_target_s'), '.2f')} | "
          f"{f(t.get('samples_to_target'), '.0f')} | {f(t.get('batch_mean'), '.0f')}")
PY
done
