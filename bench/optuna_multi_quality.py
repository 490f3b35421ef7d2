#!/usr/bin/python3
"""Optuna's NSGAIISampler and multi-objective TPESampler on the multi-objective benchmark's
functions (bench/multi_objective_quality.cpp has the same definitions). Prints one JSON
object: {function: {sampler: [[[f1, f2] per trial] per seed]}}; the C++ side computes the
hypervolumes, with the same reference points as for dlsweep's samplers. Needs Debian's
python3-optuna (3.1; use /usr/bin/python3).

usage: optuna_multi_quality.py SEEDS TRIALS [FIRST_SEED]
"""
import json
import math
import sys

import optuna

optuna.logging.set_verbosity(optuna.logging.WARNING)

ZDT_DIMS = 10


def zdt(t, second):
    x = [t.suggest_float(f"x{i}", 0, 1) for i in range(ZDT_DIMS)]
    g = 1 + 9 * sum(x[1:]) / (ZDT_DIMS - 1)
    f1 = x[0]
    h = 1 - (f1 / g) ** 2 if second else 1 - math.sqrt(f1 / g)
    return f1, g * h


def schedule2(t):
    lr = t.suggest_float("base_lr", 1e-4, 10, log=True)
    bs = t.suggest_int("batch_size", 256, 65536, log=True)
    w = t.suggest_float("warmup_epochs", 0, 10)
    sq = t.suggest_categorical("lr_rule", ["linear", "sqrt"]) == "sqrt"
    k = bs / 256.0
    eff = lr * (math.sqrt(k) if sq else k)
    best_eff = 0.1 * math.sqrt(k)
    lr_term = math.log10(eff / best_eff) ** 2
    need = 1.5 * math.log2(k) / 8.0 * 5.0
    warm = 0.01 * max(0.0, need - w) ** 2 + 0.002 * w
    loss = lr_term + warm + 0.02 * math.log2(k)
    time = math.sqrt(1.0 / k) + 0.02 * w
    return loss, time


FUNCTIONS = {"zdt1": lambda t: zdt(t, False), "zdt2": lambda t: zdt(t, True), "schedule2": schedule2}


def main():
    seeds, trials = int(sys.argv[1]), int(sys.argv[2])
    first = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    # NSGA-II's crossover (dlsweep's `search.crossover` names), with Optuna's default parameters.
    kind = sys.argv[4] if len(sys.argv) > 4 else "uniform"
    crossovers = {"uniform": optuna.samplers.nsgaii.UniformCrossover,
                  "blx_alpha": optuna.samplers.nsgaii.BLXAlphaCrossover,
                  "sbx": optuna.samplers.nsgaii.SBXCrossover,
                  "vsbx": optuna.samplers.nsgaii.VSBXCrossover,
                  "undx": optuna.samplers.nsgaii.UNDXCrossover,
                  "spx": optuna.samplers.nsgaii.SPXCrossover}
    crossover = crossovers[kind]
    out = {}
    for name, f in FUNCTIONS.items():
        out[name] = {}
        for label, make in (("optuna 3.1 nsga2", lambda s: optuna.samplers.NSGAIISampler(seed=s, crossover=crossover())),
                            ("optuna 3.1 tpe", lambda s: optuna.samplers.TPESampler(seed=s))):
            runs = []
            for seed in range(first, first + seeds):
                study = optuna.create_study(directions=["minimize", "minimize"], sampler=make(seed))
                study.optimize(f, n_trials=trials)
                runs.append([list(t.values) for t in sorted(study.trials, key=lambda t: t.number)])
            out[name][label] = runs
    print(json.dumps(out))


if __name__ == "__main__":
    main()
