#!/usr/bin/env python3
"""PyTorch peer of bench_time_to_target: the same recipe, the same records.

MLP 784-512-512-10 (ReLU) on Fashion-MNIST (the same .gz files, scaled to [0, 1] and
standardised with the training set's mean and std, as dlsweep-train does with
`standardize: true`), batch 256, SGD
momentum 0.9 with PyTorch's default initialisation, LR 0.1, cosine decay per step over the
run, evaluation on the 10k test images every 0.25 epoch. Writes JSON lines like
dlsweep-train's metrics.jsonl: a "log" record when training starts and an "eval" record per
evaluation, each with wall_s counted from this script's first statement (before importing torch).
"""
import time

T0 = time.perf_counter()

import argparse  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402


def idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=float, default=6)
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cpu", help="cpu or cuda (data, model and evaluation on the GPU)")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--cuda-graphs", action="store_true", help="cuda: replay the step as a CUDA graph")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    out = open(a.out, "w")

    def record(kind, **kw):
        out.write(json.dumps({"kind": kind, "wall_s": time.perf_counter() - T0, **kw}) + "\n")
        out.flush()

    d = a.data_dir
    xtr = torch.from_numpy(idx(os.path.join(d, "train-images-idx3-ubyte.gz")).reshape(-1, 784).astype(np.float32) / 255)
    ytr = torch.from_numpy(idx(os.path.join(d, "train-labels-idx1-ubyte.gz")).astype(np.int64))
    xte = torch.from_numpy(idx(os.path.join(d, "t10k-images-idx3-ubyte.gz")).reshape(-1, 784).astype(np.float32) / 255)
    yte = torch.from_numpy(idx(os.path.join(d, "t10k-labels-idx1-ubyte.gz")).astype(np.int64))
    mean, std = xtr.mean().item(), xtr.std().item()
    xtr, xte = (xtr - mean) / std, (xte - mean) / std
    dev = torch.device(a.device)
    xtr, ytr, xte, yte = xtr.to(dev), ytr.to(dev), xte.to(dev), yte.to(dev)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    batch, n = a.batch, xtr.shape[0]
    steps_per_epoch = n // batch
    total = int(a.epochs * steps_per_epoch)
    every = max(1, int(0.25 * steps_per_epoch))
    record("log", text="pytorch: training starts")
    g = torch.Generator().manual_seed(1)
    step = 0
    train_s, t_mark = 0.0, time.perf_counter()
    while step < total:
        perm = torch.randperm(n, generator=g).to(dev)
        for i in range(steps_per_epoch):
            if step >= total:
                break
            for grp in opt.param_groups:
                grp["lr"] = 0.1 * 0.5 * (1 + math.cos(math.pi * step / total))
            idxs = perm[i * batch:(i + 1) * batch]
            opt.zero_grad(set_to_none=True)
            loss_fn(model(xtr[idxs]), ytr[idxs]).backward()
            opt.step()
            step += 1
            if step % every == 0 or step == total:
                if dev.type == "cuda":
                    torch.cuda.synchronize()
                train_s += time.perf_counter() - t_mark
                with torch.no_grad():
                    acc = (model(xte).argmax(1) == yte).float().mean().item()
                record("eval", epoch=step / steps_per_epoch, step=step,
                       metrics={"val_acc": acc, "samples_per_s": step * batch / train_s})
                t_mark = time.perf_counter()


if __name__ == "__main__":
    main()
