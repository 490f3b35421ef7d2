#!/usr/bin/env bash
# discovered_constraints.sh — do constraints steer the sampler when the parameters come from the
# objective's suggest_* (discovered) as when the study file declares them in `space:`? (issue 43)
# A constrained quadratic of the shape of Optuna's constrained example (written here): x in
# [-15, 30], y an int in [-15, 30], minimise x^2 + y, feasible when c0 = (x-5)^2 + y^2 - 25 <= 0
# and c1 = -(x-8)^2 - (y+3)^2 + 7.7 <= 0 (about 3% of the box). For each seed it runs
# `dlsweep submit` twice, one trial at a time (30 trials): the parameters discovered, then the
# same parameters declared in `space:`; with Debian's python3-optuna, Optuna 3.1 itself too
# (TPESampler(seed, constraints_func) or NSGAIISampler for nsga2). It prints the number of
# feasible trials among trials 10..29 of each, per seed and summed.
#
# Usage: bench/discovered_constraints.sh BUILD_BIN_DIR WORK_DIR [--algorithm tpe|gp|nsga2|cmaes|...] [--seeds N]
#   e.g. bench/discovered_constraints.sh build/bin /tmp/discovered --algorithm tpe --seeds 4
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n '2,13p' "$0"; exit 2; }
bin=$(cd "$1" && pwd) work=$2
shift 2
algorithm=tpe seeds=4
while [[ $# -gt 0 ]]; do
  case $1 in
    --algorithm) algorithm=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    *) echo "discovered_constraints: unknown option $1" >&2; exit 2 ;;
  esac
done
repo=$(cd "$(dirname "$0")/.." && pwd)
py=${DLSWEEP_PYTHON:-/usr/bin/python3}
mkdir -p "$work"
work=$(cd "$work" && pwd)

cat > "$work/objective.py" <<'EOF'
import dlsweep_optuna as optuna


def objective(trial):
    x = trial.suggest_float("x", -15, 30)
    y = trial.suggest_int("y", -15, 30)
    c0 = (x - 5) ** 2 + y ** 2 - 25
    c1 = -((x - 8) ** 2) - (y + 3) ** 2 + 7.7
    trial.set_user_attr("constraint", (c0, c1))
    return x * x + y
EOF

# dlsweep: one sweep; prints the feasible count among trials 10..29.
sweep() {  # MODE SEED
  local d="$work/$1-$algorithm-$2" space=""
  rm -rf "$d" && mkdir -p "$d"
  [[ $1 == declared ]] && space="space: {x: {uniform: [-15, 30]}, y: {int: [-15, 30]}}"
  cat > "$d/study.yaml" <<EOF
name: q
backend: {kind: local, max_concurrent: 1}
trial:
  command: [$py, -m, dlsweep_optuna, "$work/objective.py:objective"]
  env: {PYTHONPATH: "$repo/python", OMP_NUM_THREADS: "1"}
runs_dir: runs
objective: {metric: value, mode: min, rank_by: final}
constraints: [{metric: constraint_0, max: 0}, {metric: constraint_1, max: 0}]
search: {algorithm: $algorithm, trials: 30, seed: $2}
$space
EOF
  (cd "$d" && "$bin/dlsweep" --db "$d/sweep.db" submit "$d/study.yaml" > "$d/submit.log" 2>&1) ||
    { echo "discovered_constraints: dlsweep submit failed, see $d/submit.log" >&2; exit 1; }
  PYTHONPATH="$repo/python" "$py" - "$d/sweep.db" <<'EOF'
import sys, dlsweep_results
trials = sorted(dlsweep_results.load_study("q", storage=sys.argv[1]).trials, key=lambda t: t.number)
print(sum(1 for t in trials if 10 <= t.number < 30 and t.violation == 0))
EOF
}

optuna_count() {  # SEED
  PYTHONPATH="$repo/python" "$py" - "$work/objective.py" "$algorithm" "$1" <<'EOF'
import importlib.util, sys, warnings
warnings.filterwarnings("ignore")
import optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
source = open(sys.argv[1]).read().replace("import dlsweep_optuna as optuna\n", "import optuna\n")
ns = {}
exec(compile(source, sys.argv[1], "exec"), ns)
seed, cf = int(sys.argv[3]), (lambda t: t.user_attrs["constraint"])
if sys.argv[2] == "tpe":
    sampler = optuna.samplers.TPESampler(seed=seed, constraints_func=cf)
elif sys.argv[2] == "nsga2":
    sampler = optuna.samplers.NSGAIISampler(seed=seed, constraints_func=cf)
else:
    print("-"); sys.exit(0)
study = optuna.create_study(sampler=sampler, direction="minimize")
study.optimize(ns["objective"], n_trials=30)
print(sum(1 for t in study.trials[10:30] if all(c <= 0 for c in t.user_attrs["constraint"])))
EOF
}

have_optuna=0
"$py" -c 'import optuna' 2>/dev/null && have_optuna=1
printf '%-6s %-10s %-10s %-10s\n' seed discovered declared optuna
sd=0 sc=0 so=0
for ((s = 0; s < seeds; s++)); do
  a=$(sweep discovered "$s") b=$(sweep declared "$s") o=-
  [[ $have_optuna == 1 ]] && o=$(optuna_count "$s")
  printf '%-6s %-10s %-10s %-10s\n' "$s" "$a" "$b" "$o"
  sd=$((sd + a)) sc=$((sc + b))
  [[ $o =~ ^[0-9]+$ ]] && so=$((so + o))
done
printf '%-6s %-10s %-10s %-10s\n' sum "$sd" "$sc" "$([[ $have_optuna == 1 ]] && echo "$so" || echo -)"
