"""The shape of Optuna's multi-objective pytorch example: a classifier whose size is suggested,
returning two values, its validation accuracy (maximise) and its number of weights (minimise)."""
import torch

import optuna


def objective(trial):
    torch.set_num_threads(1)
    torch.manual_seed(trial.number)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(500, 6, generator=g)
    y = (x[:, 0] * x[:, 1] + x[:, 2] > 0).long()
    units = trial.suggest_int("n_units", 1, 32, log=True)
    dropout = trial.suggest_float("dropout", 0.0, 0.5)
    model = torch.nn.Sequential(torch.nn.Linear(6, units), torch.nn.ReLU(), torch.nn.Dropout(dropout),
                                torch.nn.Linear(units, 2))
    opt = torch.optim.Adam(model.parameters(), lr=trial.suggest_float("lr", 1e-3, 1e-1, log=True))
    for _ in range(3):
        for b in range(0, 400, 50):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x[b:b + 50]), y[b:b + 50]).backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(x[400:]).argmax(dim=1) == y[400:]).sum().item() / 100
    n_weights = sum(p.numel() for p in model.parameters())
    return accuracy, n_weights
