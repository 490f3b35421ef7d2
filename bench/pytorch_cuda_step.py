#!/usr/bin/env python3
"""PyTorch peer of bench_cuda_step: the same MLP 784-512-512-10 (ReLU) training step on the GPU.

One step = forward, softmax cross-entropy (mean), backward, SGD momentum 0.9, weight decay
5e-4 (fused), eager mode, synthetic data already on the device. Per precision (fp32: TF32
off; tf32: TF32 matmuls allowed) and batch: 20 warm-up steps, then the best of 3 repetitions
of `steps` steps timed with CUDA events. Prints "pytorch PREC BATCH SAMPLES_PER_S" lines.
"""
import argparse

import torch
from torch import nn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", default="64,256,1024,4096")
    ap.add_argument("--steps", type=int, default=300)
    a = ap.parse_args()
    dev = torch.device("cuda")
    for prec in ("fp32", "tf32"):
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        for n in [int(b) for b in a.batches.split(",") if b]:
            torch.manual_seed(1)
            model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                  nn.Linear(512, 10)).to(dev)
            opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4, fused=True)
            x = torch.rand(n, 784, device=dev)
            y = torch.randint(0, 10, (n,), device=dev)
            loss_fn = nn.CrossEntropyLoss()

            def step():
                opt.zero_grad(set_to_none=True)
                loss_fn(model(x), y).backward()
                opt.step()

            for _ in range(20):
                step()
            torch.cuda.synchronize()
            best = 0.0
            for _ in range(3):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(a.steps):
                    step()
                e.record()
                e.synchronize()
                best = max(best, a.steps * n / (s.elapsed_time(e) / 1e3))
            print(f"pytorch {prec} {n} {best:.1f}", flush=True)


if __name__ == "__main__":
    main()
