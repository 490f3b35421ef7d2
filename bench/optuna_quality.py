#!/usr/bin/python3
"""Optuna's TPESampler (or, with --cmaes, its CmaEsSampler) on the search-quality benchmark's
functions (bench/search_functions.hpp has the same definitions). Prints one JSON object:
{function: [[regret at each checkpoint] per seed]}. Run by bench_search_quality; needs Debian's
python3-optuna (use /usr/bin/python3), and python3-cmaes for --cmaes.

usage: optuna_quality.py [--fixed-logpdf | --cmaes] [--first-seed K] SEEDS TRIALS CHECKPOINT...

Seeds K..K+SEEDS-1 (K = 1 unless given); a second run with other seeds shows how much the
same algorithm's results move between seed sets.

--fixed-logpdf: Optuna 3.1's truncated-normal log density leaves out -log(scale)
(optuna#5109, fixed upstream by #5110 in Optuna 3.5), so its Parzen mixtures are not
normalised densities and wide kernels weigh more than the paper's estimator. With this flag
the same Optuna runs with that one line fixed, i.e. the density current Optuna uses.

--cmaes: CmaEsSampler(seed=seed) with Optuna 3.1's defaults (one random startup trial, then
CMA-ES from the centre of the space with sigma0 = a sixth of the narrowest range (log ranges
for log-scaled parameters), no restarts; the `cmaes` package does the update). CMA-ES has no categorical parameters: Optuna leaves them
out of its search space and draws them with its independent sampler, RandomSampler(seed) by
default, on every trial. The schedule function's `lr_rule` (linear/sqrt) is such a parameter:
under --cmaes it is drawn at random throughout, so the schedule figures measure CMA-ES on three
numeric parameters plus a coin toss. Each such parameter is named on stderr (Optuna's own
per-trial warning is silenced: it would print 100 lines per seed).
"""
import json
import math
import random
import sys

import optuna

optuna.logging.set_verbosity(optuna.logging.WARNING)


def schedule(p):
    lr, bs, w, sq = p["base_lr"], p["batch_size"], p["warmup_epochs"], p["lr_rule"] == "sqrt"
    k = bs / 256.0
    eff = lr * (math.sqrt(k) if sq else k)
    best_eff = 0.1 * math.sqrt(k)
    lr_term = math.log10(eff / best_eff) ** 2
    need = 1.5 * math.log2(k) / 8.0 * 5.0
    warm = 0.01 * max(0.0, need - w) ** 2 + 0.002 * w
    return lr_term + warm + 0.02 * math.log2(k)


def schedule_params(t):
    return {"base_lr": t.suggest_float("base_lr", 1e-4, 10, log=True),
            "batch_size": t.suggest_int("batch_size", 256, 65536, log=True),
            "warmup_epochs": t.suggest_float("warmup_epochs", 0, 10),
            "lr_rule": t.suggest_categorical("lr_rule", ["linear", "sqrt"])}


def branin(p):
    x1, x2 = p["x1"], p["x2"]
    b, c, t = 5.1 / (4 * math.pi ** 2), 5 / math.pi, 1 / (8 * math.pi)
    return (x2 - b * x1 * x1 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


def branin_params(t):
    return {"x1": t.suggest_float("x1", -5, 10), "x2": t.suggest_float("x2", 0, 15)}


ALPHA = [1.0, 1.2, 3.0, 3.2]
A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
P = [[0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886], [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
     [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650], [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381]]


def hartmann6(p):
    x = [p["x%d" % j] for j in range(6)]
    return -sum(ALPHA[i] * math.exp(-sum(A[i][j] * (x[j] - P[i][j]) ** 2 for j in range(6))) for i in range(4))


def hartmann_params(t):
    return {"x%d" % j: t.suggest_float("x%d" % j, 0, 1) for j in range(6)}


FUNCTIONS = {  # name: (params, f, optimum, noise sd)
    "schedule": (schedule_params, schedule, 0.0, 0.02),
    "branin": (branin_params, branin, 0.397887, 0.0),
    "hartmann6": (hartmann_params, hartmann6, -3.322368, 0.0),
}


def make_sampler(kind, seed):
    if kind == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed)  # Optuna 3.1's defaults
    return optuna.samplers.TPESampler(seed=seed)


def independent_params(study):
    """The parameters the sampler left to its independent sampler in the last trial: those
    outside its relative search space (for CmaEsSampler, the categorical ones)."""
    last = study.trials[-1]
    relative = study.sampler.infer_relative_search_space(study, last)
    return sorted(set(last.params) - set(relative))


def run(name, seed, trials, checkpoints, kind="tpe", note=False):
    params_of, f, optimum, noise = FUNCTIONS[name]
    rng = random.Random(seed * 7919 + 17)
    study = optuna.create_study(direction="minimize", sampler=make_sampler(kind, seed))
    best_noisy, best_true, out = math.inf, math.inf, []
    for n in range(1, trials + 1):
        t = study.ask()
        p = params_of(t)
        true = f(p)
        noisy = true + (rng.gauss(0, noise) if noise > 0 else 0.0)
        study.tell(t, noisy)
        if noisy < best_noisy:  # the trial a user would pick
            best_noisy, best_true = noisy, true
        if n in checkpoints:
            out.append(best_true - optimum)
    if note:  # once per function: what the sampler did not search itself
        left = independent_params(study)
        if left:
            print("optuna_quality.py: on %s, %s draws %s with its independent sampler (%s)"
                  % (name, type(study.sampler).__name__, ", ".join(left),
                     type(study.sampler._independent_sampler).__name__), file=sys.stderr)
    return out


def fix_logpdf():
    import numpy as np
    from optuna.samplers._tpe import _truncnorm

    unnormalised = _truncnorm.logpdf

    def logpdf(x, a, b, loc=0, scale=1):
        return unnormalised(x, a, b, loc, scale) - np.log(scale)

    _truncnorm.logpdf = logpdf


def main():
    args = sys.argv[1:]
    first, kind, fixed = 1, "tpe", False
    while args and args[0].startswith("--"):
        if args[0] == "--fixed-logpdf":
            fixed = True
            args = args[1:]
        elif args[0] == "--cmaes":
            kind = "cmaes"
            args = args[1:]
        elif args[0] == "--first-seed" and len(args) > 1:
            first = int(args[1])
            args = args[2:]
        else:
            sys.exit(__doc__)
    if fixed and kind == "cmaes" or len(args) < 2:  # the fix is TPE's density
        sys.exit(__doc__)
    if fixed:
        fix_logpdf()
    if kind == "cmaes":  # the per-trial independent-sampling warning; named once per function instead
        optuna.logging.set_verbosity(optuna.logging.ERROR)
    seeds, trials = int(args[0]), int(args[1])
    checkpoints = [int(c) for c in args[2:]]
    result = {name: [run(name, s, trials, checkpoints, kind, note=kind == "cmaes" and s == first)
                     for s in range(first, first + seeds)] for name in FUNCTIONS}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
