#!/usr/bin/env bash
# optuna_examples_wall.sh — wall time of the four objectives of the shape of Optuna's official
# examples (python/tests/examples_shapes/: a torch classifier with median pruning, a
# two-objective torch classifier under NSGA-II, a cross-validated classifier returned once, a
# constrained quadratic), each swept N trials one at a time in the same invocation by:
#   optuna     the shape as written, as the official example runs it: one `python3` process,
#              study.optimize with an in-memory storage (the examples' default), its sampler
#              (TPE seed 0 / NSGA-II seed 0) and pruner (MedianPruner);
#   warm       `dlsweep submit` of the shape with the import changed alone, local backend,
#              max_concurrent 1, keep_imported: true (issue 43 item 3);
#   cold       the same without keep_imported: a process per trial.
# Each wall time is from the command's start to its end (interpreter start and imports
# included on both sides). It prints the times and dlsweep/optuna for each; the goal is <= 1.3.
#
# Usage: bench/optuna_examples_wall.sh BUILD_BIN_DIR WORK_DIR [--trials N] [--repeat R]
#   e.g. bench/optuna_examples_wall.sh build/bin /tmp/oew --trials 30
# Needs python3-optuna and python3-torch (scripts/install-deps.sh --bench). R repeats (default
# 1) report the median of each.
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n '2,18p' "$0"; exit 2; }
bin=$(cd "$1" && pwd) work=$2
shift 2
trials=30 repeat=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --trials) trials=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    *) echo "optuna_examples_wall: unknown option $1" >&2; exit 2 ;;
  esac
done
py=/usr/bin/python3
"$py" -c 'import optuna, torch' 2>/dev/null || {
  echo "optuna_examples_wall: needs python3-optuna and python3-torch (scripts/install-deps.sh --bench)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
shapes=$root/python/tests/examples_shapes
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1

# shape | metric(s) | dlsweep objective/search/pruner lines (\n between) | Optuna create_study arguments
cases=(
  "torch_pruning.py|acc|objective: {metric: acc, mode: max, rank_by: final}\nsearch: {algorithm: tpe, trials: $trials, seed: 0}\npruner: {kind: median, by: step, startup_trials: 5, warmup: 1}|direction='maximize', sampler=optuna.samplers.TPESampler(seed=0), pruner=optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=1)"
  "torch_two_objectives.py|acc,weights|objective: [{metric: acc, mode: max, rank_by: final}, {metric: weights, mode: min, rank_by: final}]\nsearch: {algorithm: nsga2, trials: $trials, seed: 0, population_size: 10}|directions=['maximize', 'minimize'], sampler=optuna.samplers.NSGAIISampler(seed=0, population_size=10)"
  "linear_classifier_cv.py|cv_acc|objective: {metric: cv_acc, mode: max, rank_by: final}\nsearch: {algorithm: tpe, trials: $trials, seed: 0}|direction='maximize', sampler=optuna.samplers.TPESampler(seed=0)"
  "quadratic_constraint.py|value|objective: {metric: value, mode: min, rank_by: final}\nsearch: {algorithm: tpe, trials: $trials, seed: 0}|direction='minimize', sampler=optuna.samplers.TPESampler(seed=0, constraints_func=lambda t: t.user_attrs['constraint'])"
)

now() { date +%s.%N; }
results=$work/results.tsv
: > "$results"
for ((r = 1; r <= repeat; r++)); do
  for c in "${cases[@]}"; do
    IFS='|' read -r shape metric study create <<< "$c"
    name=${shape%.py}
    d=$work/$r/$name
    mkdir -p "$d/optuna" "$d/warm" "$d/cold"
    # Optuna, as the example runs.
    cp "$shapes/$shape" "$d/optuna/objective.py"
    cat > "$d/optuna/run.py" <<PYEOF
import optuna, objective
optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.create_study($create)
study.optimize(objective.objective, n_trials=$trials)
PYEOF
    t0=$(now)
    (cd "$d/optuna" && "$py" -W ignore run.py) > "$d/optuna/log" 2>&1
    t1=$(now)
    echo -e "$r\t$name\toptuna\t$(echo "$t1 - $t0" | bc)" >> "$results"
    # dlsweep, the import changed alone; warm and cold.
    for mode in warm cold; do
      sed 's/^import optuna$/import dlsweep_optuna as optuna/' "$shapes/$shape" > "$d/$mode/objective.py"
      keep=$([[ $mode == warm ]] && echo ", keep_imported: true" || true)
      { echo "name: $name-$mode"
        echo "backend: {kind: local, max_concurrent: 1$keep}"
        echo "trial:"
        echo "  command: [$py, -m, dlsweep_optuna, \"{study_dir}/objective.py:objective\", --metric, \"$metric\"]"
        echo "  env: {PYTHONPATH: \"$root/python\", OMP_NUM_THREADS: \"1\"}"
        [[ $name == quadratic_constraint ]] && echo "constraints: [{metric: constraint_0, max: 0}, {metric: constraint_1, max: 0}]"
        printf '%b\n' "$study"
        echo "runs_dir: runs"
      } > "$d/$mode/study.yaml"
      t0=$(now)
      (cd "$d/$mode" && "$bin/dlsweep" --db sweep.db submit study.yaml) > "$d/$mode/log" 2>&1 || {
        echo "optuna_examples_wall: dlsweep failed on $name ($mode); see $d/$mode/log" >&2; tail -5 "$d/$mode/log" >&2; exit 1; }
      t1=$(now)
      echo -e "$r\t$name\t$mode\t$(echo "$t1 - $t0" | bc)" >> "$results"
    done
  done
done
"$py" - "$results" "$trials" <<'PYEOF'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
t = {}
for _, name, who, s in rows:
    t.setdefault(name, {}).setdefault(who, []).append(float(s))
print(f"{sys.argv[2]} trials each, one at a time; wall seconds (median of {len(next(iter(t.values()))['optuna'])})")
print(f"{'objective':<24}{'optuna':>8}{'warm':>8}{'cold':>8}{'warm/optuna':>13}{'cold/optuna':>13}")
for name, w in t.items():
    m = {k: statistics.median(v) for k, v in w.items()}
    print(f"{name:<24}{m['optuna']:8.1f}{m['warm']:8.1f}{m['cold']:8.1f}{m['warm'] / m['optuna']:13.2f}{m['cold'] / m['optuna']:13.2f}")
PYEOF
