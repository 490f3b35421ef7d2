#!/usr/bin/env bash
# plan_validation.sh — does `dlsweep plan` predict multi-rank time to target? Runs a 1-rank
# sweep of the MLP 256-128 on Fashion-MNIST (batch 64..4096, two LRs per batch, target 0.85),
# then 2-rank trials (real MPI ranks under mpirun) of three of its configurations, and asks
# bench_plan_validation to predict each 2-rank time to target from the 1-rank trials (the
# batch-size model, the 1-rank step-time model, the trajectory) and compare with what the
# 2-rank trials measured. About 20-25 minutes on 2 cores.
#
# usage: bench/plan_validation.sh BIN_DIR WORK_DIR     (BIN_DIR holds dlsweep, dlsweep-train,
#                                                     bench_plan_validation)
set -euo pipefail
bin=${1:?usage: plan_validation.sh BIN_DIR WORK_DIR}
work=${2:?usage: plan_validation.sh BIN_DIR WORK_DIR}
bin=$(cd "$bin" && pwd)
mkdir -p "$work"
cd "$work"
study() {  # study NAME RANKS MAX_CONCURRENT BATCHES LRS [EPOCHS]
  cat <<YAML
name: $1
backend: {kind: local, max_concurrent: $3}
trial:
  trainer: {model: mlp, hidden: [256, 128], dataset: fashion-mnist, epochs: ${6:-6}, eval_every: 0.25, decay: constant, threads: 1}
  ranks: $2
objective: {metric: val_acc, mode: max, target: 0.85}
search: {algorithm: grid, seed: 1}
space:
  batch_size: $4
  base_lr: $5
fixed: {base_batch: 128, lr_rule: sqrt, momentum: 0.9, nesterov: true, warmup_epochs: 0.5, warmup_start: zero, seed: 1}
YAML
}
study plan-1rank 1 2 "[64, 128, 256, 512, 1024, 2048, 4096]" "[0.05, 0.1]" > one.yaml
# 2 epochs: these three reach the target within 1.8 epochs on 1 rank, and with a constant LR
# the trajectory up to the target does not depend on the number of epochs.
study plan-2rank2 2 1 "[128, 256, 512]" "[0.05]" 2 > two.yaml
# A study already in sweep.db is not run again (re-running the script only re-analyses).
"$bin/dlsweep" --db sweep.db status plan-1rank >/dev/null 2>&1 || "$bin/dlsweep" --db sweep.db submit one.yaml
"$bin/dlsweep" --db sweep.db status plan-2rank2 >/dev/null 2>&1 || "$bin/dlsweep" --db sweep.db submit two.yaml
"$bin/dlsweep" --db sweep.db best plan-1rank --explain
"$bin/dlsweep" --db sweep.db plan plan-1rank --ranks 1,2,8,64
"$bin/bench_plan_validation" --db sweep.db --one plan-1rank --two plan-2rank2
