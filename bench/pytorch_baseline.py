#!/usr/bin/python3
"""PyTorch baseline for bench_trainer_throughput and scripts/gpu-trainer-check.sh: the same
models, the same training step, on the CPU or (--device cuda) on a GPU.

One training step = forward, softmax cross-entropy (mean over the batch), backward, SGD with
momentum 0.9 (PyTorch's form, as dlsweep-train's), on synthetic data held in memory (no data
loading in the timed region). Warm-up steps are excluded; the figure is the best of `reps`
repetitions of k steps. Prints one JSON object per (model, batch) on stdout.

Models (as in trainer/models/):
  mlp: 784-512-512-10, ReLU
  cnn: conv 5x5 32 pad 2 + ReLU, max pool 2, conv 5x5 64 pad 2 + ReLU, max pool 2,
       fc 1024 + ReLU, fc 10, on 1x28x28 inputs
  resnet8, resnet20: as trainer/models/resnet.cpp, on 3x32x32 inputs

Run it as Debian's interpreter with OpenBLAS's OpenMP build (Linear layers go through BLAS):
  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp OMP_NUM_THREADS=2 \\
      /usr/bin/python3 bench/pytorch_baseline.py --models mlp,cnn --batches 64,256 --threads 2
"""
import argparse
import json
import sys
import time


def resnet(nn, blocks):
    """trainer/models/resnet.cpp: conv3x3 16 + BN + ReLU; 3 stages (16, 32, 64 channels) of
    `blocks` basic blocks (conv-BN-ReLU-conv-BN, 1x1 conv + BN shortcut where the shape
    changes, add, ReLU); global average pool; fc 10. Convolutions without bias."""
    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.sc = None
            if stride != 1 or cin != cout:
                self.sc = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.b2(self.c2(nn.functional.relu(self.b1(self.c1(x)))))
            return nn.functional.relu(y + (self.sc(x) if self.sc is not None else x))

    layers = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
    cin = 16
    for stage in range(3):
        cout = 16 << stage
        for b in range(blocks):
            layers.append(Block(cin, cout, 2 if stage > 0 and b == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
    return nn.Sequential(*layers)


def build(name, nn):
    if name == "mlp":
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)), (784,)
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(3136, 1024), nn.ReLU(), nn.Linear(1024, 10)), (1, 28, 28)
    if name in ("resnet8", "resnet20"):
        return resnet(nn, 1 if name == "resnet8" else 3), (3, 32, 32)
    raise SystemExit(f"unknown model {name}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="mlp,cnn")
    ap.add_argument("--batches", default="64,256,1024,4096")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=2.0, help="target time per repetition set")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--device", default="cpu", help="cpu or cuda (synthetic data on the device)")
    ap.add_argument("--modes", default="eager",
                    help="cuda: comma-separated eager, tf32, amp_bf16, channels_last (each timed; one line each)")
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
    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    for name in args.models.split(","):
        for batch in [int(b) for b in args.batches.split(",")]:
            for mode in (args.modes.split(",") if dev.type == "cuda" else ["eager"]):
                torch.backends.cuda.matmul.allow_tf32 = mode != "eager"
                torch.backends.cudnn.allow_tf32 = mode != "eager"
                model, shape = build(name, nn)
                model = model.to(dev)
                x = torch.rand((batch,) + shape, device=dev)
                if mode == "channels_last" and len(shape) == 3:
                    model = model.to(memory_format=torch.channels_last)
                    x = x.contiguous(memory_format=torch.channels_last)
                opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
                loss_fn = nn.CrossEntropyLoss()
                y = torch.randint(0, 10, (batch,), device=dev)

                def step():
                    opt.zero_grad(set_to_none=True)
                    if mode == "amp_bf16":
                        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16):
                            loss = loss_fn(model(x), y)
                    else:
                        loss = loss_fn(model(x), y)
                    loss.backward()
                    opt.step()

                for _ in range(3):  # warm-up: allocator, oneDNN/cuDNN primitive caches, pages
                    step()
                sync()
                t0 = time.perf_counter()
                step()
                sync()
                probe = time.perf_counter() - t0
                k = max(2, int(args.seconds / args.reps / max(probe, 1e-6)))
                best = float("inf")
                for _ in range(args.reps):
                    t0 = time.perf_counter()
                    for _ in range(k):
                        step()
                    sync()
                    best = min(best, (time.perf_counter() - t0) / k)
                print(json.dumps({"model": name, "batch": batch, "mode": mode, "step_s": best,
                                  "samples_per_s": batch / best, "steps_per_rep": k}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
