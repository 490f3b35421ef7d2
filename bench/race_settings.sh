# race_settings.sh — the settings the batch-size benchmarks share (sourced by
# adaptive_vs_sweep.sh, branch_race.sh and adaptive_lr_below_base.sh), so that their arms train
# the same workloads the same way.
#   race_workload W   -> "MODEL_YAML|EPOCHS|TRAIN|TEST|TARGET" (TRAIN/TEST 0: the whole set)
#   race_trainer W    -> the trial.trainer map at those defaults (eval every 0.25 epoch,
#                        constant decay, 1 thread)
#   race_fixed        -> `fixed:` and the hyperparameters every arm shares (base LR 0.1 at base
#                        batch 128, Nesterov momentum 0.9, warmup from zero, B_simple every 10)
race_workload() {
  case "$1" in
    mlp) echo "model: mlp, hidden: [256, 128], dataset: fashion-mnist|10|0|10000|0.87" ;;
    cnn) echo "model: cnn, dataset: fashion-mnist|3|12000|2000|0.85" ;;
    resnet8) echo "model: resnet8, dataset: cifar10, data_dir: ${DLSWEEP_CIFAR10_DIR:-/usr/share/datasets/cifar-10}|4|10000|2000|0.45" ;;
    *) echo "unknown workload $1 (mlp, cnn, resnet8)" >&2; return 2 ;;
  esac
}

race_trainer() {
  local model epochs train test target subset=""
  IFS='|' read -r model epochs train test target <<< "$(race_workload "$1")" || return 2
  [ -n "$model" ] || return 2
  [ "$train" != 0 ] && subset+=", train_subset: $train"
  [ "$test" != 0 ] && subset+=", test_subset: $test"
  echo "{$model, epochs: $epochs, eval_every: 0.25, decay: constant, threads: 1$subset}"
}

race_fixed() {
  cat <<'YAML'
fixed:
  base_batch: 128
  base_lr: 0.1
  momentum: 0.9
  nesterov: true
  warmup_start: zero
  noise_scale_every: 10
YAML
}
