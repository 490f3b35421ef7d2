"""The shape of Optuna's pytorch example with pruning: an MLP classifier whose width, depth and
learning rate are suggested, trained for a few epochs on synthetic data (fixed seed), reporting
its validation accuracy per epoch and raising TrialPruned when should_prune() says so."""
import torch

import optuna

EPOCHS = 5


def data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(600, 8, generator=g)
    teacher = torch.randn(8, 3, generator=g)
    y = torch.argmax(torch.tanh(x @ teacher) + 0.3 * torch.randn(600, 3, generator=g), dim=1)
    return x[:400], y[:400], x[400:], y[400:]


def objective(trial):
    torch.set_num_threads(1)
    torch.manual_seed(trial.number)
    n_layers = trial.suggest_int("n_layers", 1, 2)
    layers, width = [], 8
    for i in range(n_layers):
        units = trial.suggest_int(f"n_units_l{i}", 2, 32, log=True)
        layers += [torch.nn.Linear(width, units), torch.nn.ReLU()]
        width = units
    model = torch.nn.Sequential(*layers, torch.nn.Linear(width, 3))
    lr = trial.suggest_float("lr", 1e-4, 1.0, log=True)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    xt, yt, xv, yv = data()
    for epoch in range(EPOCHS):
        for b in range(0, len(xt), 50):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xt[b:b + 50]), yt[b:b + 50]).backward()
            opt.step()
        with torch.no_grad():
            accuracy = (model(xv).argmax(dim=1) == yv).sum().item() / len(yv)
        trial.report(accuracy, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return accuracy
