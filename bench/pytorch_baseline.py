#!/usr/bin/python3
"""PyTorch CPU baseline for bench_trainer_throughput: the same models, the same training step.

One training step = forward, softmax cross-entropy (mean over the batch), backward, SGD with
momentum 0.9 (PyTorch's form, as dlsweep-train's), on synthetic data held in memory (no data
loading in the timed region). Warm-up steps are excluded; the figure is the best of `reps`
repetitions of k steps. Prints one JSON object per (model, batch) on stdout.

Models (as in trainer/models/):
  mlp: 784-512-512-10, ReLU
  cnn: conv 5x5 32 pad 2 + ReLU, max pool 2, conv 5x5 64 pad 2 + ReLU, max pool 2,
       fc 1024 + ReLU, fc 10, on 1x28x28 inputs

Run it as Debian's interpreter with OpenBLAS's OpenMP build (Linear layers go through BLAS):
  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp OMP_NUM_THREADS=2 \\
      /usr/bin/python3 bench/pytorch_baseline.py --models mlp,cnn --batches 64,256 --threads 2
"""
import argparse
import json
import sys
import time


def build(name, nn):
    if name == "mlp":
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)), (784,)
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(3136, 1024), nn.ReLU(), nn.Linear(1024, 10)), (1, 28, 28)
    raise SystemExit(f"unknown model {name}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="mlp,cnn")
    ap.add_argument("--batches", default="64,256,1024,4096")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=2.0, help="target time per repetition set")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    try:
        import torch
        import torch.nn as nn
    except Exception as e:  # reported by the C++ bench, which then skips the comparison
        print(json.dumps({"error": f"cannot import torch: {e}"}))
        return 0
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    info = {"torch": torch.__version__, "threads": torch.get_num_threads(),
            "mkldnn": bool(torch.backends.mkldnn.is_available())}
    print(json.dumps({"info": info}), flush=True)
    for name in args.models.split(","):
        for batch in [int(b) for b in args.batches.split(",")]:
            model, shape = build(name, nn)
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            loss_fn = nn.CrossEntropyLoss()
            x = torch.rand((batch,) + shape)
            y = torch.randint(0, 10, (batch,))

            def step():
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()

            for _ in range(3):  # warm-up: allocator, oneDNN primitive caches, pages
                step()
            t0 = time.perf_counter()
            step()
            probe = time.perf_counter() - t0
            k = max(2, int(args.seconds / args.reps / max(probe, 1e-6)))
            best = float("inf")
            for _ in range(args.reps):
                t0 = time.perf_counter()
                for _ in range(k):
                    step()
                best = min(best, (time.perf_counter() - t0) / k)
            print(json.dumps({"model": name, "batch": batch, "step_s": best, "samples_per_s": batch / best,
                              "steps_per_rep": k}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
