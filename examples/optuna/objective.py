"""An Optuna objective, written the way optuna-examples' pytorch/pytorch_checkpoint.py is — an MLP
whose layers exist only when the script asks for them (define-by-run), per-epoch reports, the
pruner, checkpoint and resume — run by dlsweep. The one dlsweep line is the import (and
checkpoint_dir(), where Optuna's example builds its own per-trial directory).

    python3 -m dlsweep_optuna examples/optuna/objective.py:objective --metric accuracy   # one trial by hand
    dlsweep submit examples/optuna/study.yaml                                              # the sweep

The data is synthetic (two interleaved spirals, generated from a fixed seed): no download, a few
seconds per trial on a CPU. EPOCHS (default 10) sets the epochs per trial.
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

import dlsweep_optuna as optuna  # was: import optuna
import dlsweep_trial

EPOCHS = int(os.environ.get("EPOCHS", "10"))
BATCHSIZE = 64
N_TRAIN, N_VALID = 1024, 256


def get_data():
    g = torch.Generator().manual_seed(0)
    n = N_TRAIN + N_VALID
    t = torch.rand(n, generator=g) * 3 * math.pi
    label = torch.randint(0, 2, (n,), generator=g)
    sign = label.float() * 2 - 1
    x = torch.stack([sign * t * torch.cos(t), sign * t * torch.sin(t)], 1) / 10
    x = x + 0.05 * torch.randn(n, 2, generator=g)
    return (x[:N_TRAIN], label[:N_TRAIN]), (x[N_TRAIN:], label[N_TRAIN:])


def define_model(trial):
    # We optimize the number of layers, hidden units and dropout ratio in each layer.
    n_layers = trial.suggest_int("n_layers", 1, 3)
    layers = []
    in_features = 2
    for i in range(n_layers):
        out_features = trial.suggest_int(f"n_units_l{i}", 4, 128, log=True)
        layers.append(nn.Linear(in_features, out_features))
        layers.append(nn.ReLU())
        p = trial.suggest_float(f"dropout_l{i}", 0.0, 0.5)
        layers.append(nn.Dropout(p))
        in_features = out_features
    layers.append(nn.Linear(in_features, 2))
    layers.append(nn.LogSoftmax(dim=1))
    return nn.Sequential(*layers)


def objective(trial):
    torch.manual_seed(trial.number)
    model = define_model(trial)
    optimizer_name = trial.suggest_categorical("optimizer", ["Adam", "RMSprop", "SGD"])
    lr = trial.suggest_float("lr", 1e-5, 1e-1, log=True)
    optimizer = getattr(torch.optim, optimizer_name)(model.parameters(), lr=lr)

    # Optuna's example: os.path.join("pytorch_checkpoint", str(trial.number)). dlsweep gives each
    # trial a directory that outlives its retries and requeues.
    checkpoint_path = dlsweep_trial.checkpoint_dir() / "model.pt"
    start, accuracy = 0, 0.0
    if checkpoint_path.exists():
        checkpoint = torch.load(checkpoint_path)
        model.load_state_dict(checkpoint["model_state_dict"])
        optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
        start = checkpoint["epoch"] + 1
        accuracy = checkpoint["accuracy"]

    (x_train, y_train), (x_valid, y_valid) = get_data()
    for epoch in range(start, EPOCHS):
        model.train()
        perm = torch.randperm(N_TRAIN, generator=torch.Generator().manual_seed(epoch))
        for b in range(0, N_TRAIN, BATCHSIZE):
            idx = perm[b:b + BATCHSIZE]
            optimizer.zero_grad()
            loss = F.nll_loss(model(x_train[idx]), y_train[idx])
            loss.backward()
            optimizer.step()

        model.eval()
        with torch.no_grad():
            accuracy = (model(x_valid).argmax(1) == y_valid).float().mean().item()

        torch.save({"epoch": epoch, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": optimizer.state_dict(), "accuracy": accuracy},
                   str(checkpoint_path) + ".tmp")
        os.replace(str(checkpoint_path) + ".tmp", checkpoint_path)

        trial.report(accuracy, epoch)

        # Handle pruning based on the intermediate value.
        if trial.should_prune():
            raise optuna.TrialPruned()

    return accuracy
