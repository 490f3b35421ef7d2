#!/usr/bin/env bash
# optuna_side_by_side.sh — one Optuna-style objective, run by Optuna and by dlsweep on the same
# machine in the same invocation (issue 29, "Done when"). The objective is
# examples/optuna/objective.py (an MLP with conditional layers by suggest_*, per-epoch reports,
# the median pruner, checkpoint/resume), written the way optuna-examples'
# pytorch/pytorch_checkpoint.py is:
#   optuna   the file with its one dlsweep line put back (`import optuna`) and Optuna's own
#            per-trial checkpoint directory (pytorch_checkpoint/<number>/), run by Debian's
#            python3-optuna: TPESampler(seed=0), MedianPruner(n_startup_trials=5,
#            n_warmup_steps=2), an SQLite storage, N trials, 2 at a time (n_jobs=2);
#   dlsweep  examples/optuna/study.yaml as shipped (tpe seed 0, the median pruner with
#            startup_trials 5 and warmup 2, objective.rank_by final, 2 at a time), N trials,
#            through `dlsweep submit` (a process per trial, every report in SQLite).
# It prints best value, trials complete/pruned/failed and wall time of each, and the ratio.
# Values differ by sampler draws (two TPE implementations), not by the objective.
#
# Usage: bench/optuna_side_by_side.sh BUILD_BIN_DIR WORK_DIR [--trials N] [--epochs E] [--seeds A-B]
#   e.g. bench/optuna_side_by_side.sh build/bin /tmp/optuna-side --trials 20 --epochs 10 --seeds 0-9
# --seeds runs both once per seed (TPESampler(seed=s) and the study's `seed: s`) and prints
# each seed's row and the medians. Optuna's wall time is its study.optimize alone (imports
# excluded); dlsweep's is the whole `dlsweep submit`.
# Needs python3-optuna and python3-torch (scripts/install-deps.sh --bench).
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n '2,22p' "$0"; exit 2; }
bin=$(cd "$1" && pwd) work=$2
shift 2
trials=20 epochs=10 seeds=0-0
while [[ $# -gt 0 ]]; do
  case $1 in
    --trials) trials=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    *) echo "optuna_side_by_side: unknown option $1" >&2; exit 2 ;;
  esac
done
py=/usr/bin/python3
"$py" -c 'import optuna, torch' 2>/dev/null || {
  echo "optuna_side_by_side: needs python3-optuna and python3-torch (scripts/install-deps.sh --bench)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
[[ $seeds =~ ^([0-9]+)-([0-9]+)$ ]] || { echo "optuna_side_by_side: --seeds A-B (e.g. 0-9)" >&2; exit 2; }
first=${BASH_REMATCH[1]} last=${BASH_REMATCH[2]}
rm -rf "$work"
export OMP_NUM_THREADS=1 EPOCHS=$epochs
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
top=$work
for ((seed = first; seed <= last; seed++)); do
work=$top/seed-$seed
mkdir -p "$work/optuna" "$work/dlsweep"

# --- Optuna: the objective as Optuna's example has it.
sed -e 's/^import dlsweep_optuna as optuna.*/import optuna/' -e '/^import dlsweep_trial$/d' \
    -e 's/^import math$/import math\nimport pathlib/' \
    -e 's|checkpoint_path = dlsweep_trial.checkpoint_dir() / "model.pt"|checkpoint_path = pathlib.Path("pytorch_checkpoint", str(trial.number), "model.pt"); checkpoint_path.parent.mkdir(parents=True, exist_ok=True)|' \
    "$root/examples/optuna/objective.py" > "$work/optuna/objective.py"
grep -q '^import optuna$' "$work/optuna/objective.py" && ! grep -q dlsweep_trial "$work/optuna/objective.py" || {
  echo "optuna_side_by_side: examples/optuna/objective.py changed shape; update the sed lines" >&2; exit 1; }
(cd "$work/optuna" && "$py" - "$trials" "$seed" > result.json) <<'EOF'
import json, sys, time
import optuna, torch
import objective
torch.set_num_threads(1)
optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.create_study(direction="maximize", study_name="optuna-mlp", storage="sqlite:///optuna.db",
                            sampler=optuna.samplers.TPESampler(seed=int(sys.argv[2])),
                            pruner=optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=2))
t0 = time.monotonic()
study.optimize(objective.objective, n_trials=int(sys.argv[1]), n_jobs=2)
wall = time.monotonic() - t0
S = optuna.trial.TrialState
count = lambda s: sum(t.state == s for t in study.trials)
print(json.dumps({"best": study.best_value, "complete": count(S.COMPLETE), "pruned": count(S.PRUNED),
                  "failed": count(S.FAIL), "wall_s": wall}))
EOF

# --- dlsweep: the shipped study, N trials.
cp "$root/examples/optuna/objective.py" "$root/examples/optuna/study.yaml" "$work/dlsweep/"
# The same interpreter as Optuna's run (the python3 first on PATH may lack torch).
sed -i -e "s/trials: 20, seed: 0/trials: $trials, seed: $seed/" -e "s/EPOCHS: \"10\"/EPOCHS: \"$epochs\"/" \
    -e "s|command: \[python3,|command: [$py,|" "$work/dlsweep/study.yaml"
grep -q "command: \[$py," "$work/dlsweep/study.yaml" && grep -q "seed: $seed}" "$work/dlsweep/study.yaml" || {
  echo "optuna_side_by_side: examples/optuna/study.yaml changed shape; update the sed lines" >&2; exit 1; }
t0=$(date +%s.%N)
(cd "$work/dlsweep" && "$bin/dlsweep" --db sweep.db submit study.yaml > submit.log 2>&1) || true
t1=$(date +%s.%N)
(cd "$work/dlsweep" && "$bin/dlsweep" --db sweep.db results optuna-mlp --format json > results.json)
echo "$t0 $t1" > "$work/dlsweep/wall"
done
"$py" - "$top" <<'EOF'
import json, pathlib, statistics, sys
top = pathlib.Path(sys.argv[1])
runs = []
for d in sorted(top.glob("seed-*"), key=lambda p: int(p.name.split("-")[1])):
    o = json.load(open(d / "optuna" / "result.json"))
    rows = json.load(open(d / "dlsweep" / "results.json"))
    rows = rows["rows"] if isinstance(rows, dict) and "rows" in rows else rows
    states = [r["state"] for r in rows]
    vals = [r["value"] for r in rows if r["state"] == "COMPLETE" and r.get("value") is not None]
    t0, t1 = map(float, (d / "dlsweep" / "wall").read_text().split())
    runs.append((d.name.split("-")[1], o, {"best": max(vals) if vals else float("nan"),
                 "complete": states.count("COMPLETE"), "pruned": states.count("PRUNED"),
                 "failed": states.count("FAILED"), "wall_s": t1 - t0}))
print(f"{'seed':>4} {'':8} {'best accuracy':>13} {'complete':>8} {'pruned':>6} {'failed':>6} {'wall s':>7}")
for seed, o, d in runs:
    for name, r in (("optuna", o), ("dlsweep", d)):
        print(f"{seed:>4} {name:8} {r['best']:13.4f} {r['complete']:8d} {r['pruned']:6d} {r['failed']:6d} {r['wall_s']:7.1f}")
if len(runs) > 1:
    print("median")
    for name, k in (("optuna", 1), ("dlsweep", 2)):
        m = lambda key: statistics.median(r[k][key] for r in runs)
        print(f"{'':>4} {name:8} {m('best'):13.4f} {m('complete'):8.1f} {m('pruned'):6.1f} {m('failed'):6.1f} "
              f"{m('wall_s'):7.1f}")
ratios = [d["wall_s"] / o["wall_s"] for _, o, d in runs]
print(f"wall time dlsweep / optuna: median {statistics.median(ratios):.2f} (per seed: {', '.join(f'{r:.2f}' for r in ratios)})")
EOF
