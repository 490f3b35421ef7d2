"""The shape of Optuna's constrained quadratic example: minimise a quadratic in x and y subject to
two constraints, feasible when both values are <= 0. Optuna reads them from the user attribute
"constraint" (the sampler's constraints_func); dlsweep from metrics c0 and c1 the trial reports
(the study file's `constraints:`), which the test adds as one line after set_user_attr."""
import optuna


def objective(trial):
    x = trial.suggest_float("x", -3, 3)
    y = trial.suggest_float("y", -3, 3)
    c0 = x + y - 1          # x + y <= 1
    c1 = 0.5 - x            # x >= 0.5
    trial.set_user_attr("constraint", (c0, c1))
    return (x - 2) ** 2 + (y + 1) ** 2
