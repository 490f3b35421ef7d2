#!/usr/bin/python3
"""The Optuna side of bench_bookkeeping: N trials x R reports, no compute, in-process,
with SQLite storage on disk (Optuna's RDBStorage), the same space and values as
bookkeeping_trial.cpp. Prints one line: "optuna <trials> <seconds> <trials/s>".

usage: /usr/bin/python3 optuna_bookkeeping.py TRIALS REPORTS DB_FILE"""
import sys
import time

import optuna


def main():
    trials, reports, db = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = f"sqlite:///{db}"
    start = time.perf_counter()
    study = optuna.create_study(study_name="bookkeeping", storage=storage, direction="minimize",
                                sampler=optuna.samplers.RandomSampler(seed=1))
    for _ in range(trials):
        t = study.ask()
        x = t.suggest_float("x", 0.0, 1.0)
        t.suggest_float("lr", 1e-4, 1.0, log=True)
        loss = 0.0
        for i in range(reports):
            loss = (x - 0.3) ** 2 + 1.0 / (i + 2)
            t.report(loss, i + 1)
        study.tell(t, loss)
    elapsed = time.perf_counter() - start
    print(f"optuna {trials} {elapsed:.3f} {trials / elapsed:.2f}")


if __name__ == "__main__":
    main()
