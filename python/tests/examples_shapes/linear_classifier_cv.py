"""The shape of Optuna's scikit-learn example, without scikit-learn: the classifier is a
categorical choice, each with its own regularisation strength, and the objective returns the
mean 3-fold cross-validated accuracy once (no reports). Ridge classification in closed form and
logistic regression by a few gradient steps, in numpy."""
import numpy as np

import optuna


def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(240, 6))
    y = (x @ rng.normal(size=6) + rng.normal(scale=1.5, size=240) > 0).astype(float)
    return x, y


def fit_ridge(x, y, alpha):
    a = x.T @ x + alpha * np.eye(x.shape[1])
    return np.linalg.solve(a, x.T @ (2 * y - 1))


def fit_logistic(x, y, c):
    w = np.zeros(x.shape[1])
    for _ in range(60):
        p = 1 / (1 + np.exp(-(x @ w)))
        w -= 0.5 * (x.T @ (p - y) / len(y) + w / (c * len(y)))
    return w


def objective(trial):
    classifier = trial.suggest_categorical("classifier", ["ridge", "logistic"])
    if classifier == "ridge":
        alpha = trial.suggest_float("ridge_alpha", 1e-2, 1e4, log=True)
        fit = lambda x, y: fit_ridge(x, y, alpha)  # noqa: E731
    else:
        c = trial.suggest_float("logistic_c", 1e-4, 1e2, log=True)
        fit = lambda x, y: fit_logistic(x, y, c)  # noqa: E731
    x, y = data()
    folds = np.array_split(np.arange(len(y)), 3)
    scores = []
    for k in range(3):
        train = np.concatenate([f for i, f in enumerate(folds) if i != k])
        w = fit(x[train], y[train])
        scores.append(float(np.mean((x[folds[k]] @ w > 0) == (y[folds[k]] > 0.5))))
    return sum(scores) / len(scores)
