#!/usr/bin/env python3
"""A trial program speaking the dlsweep protocol: read params.json, append metrics.jsonl.

It stands in for your own training script (PyTorch, JAX, ...): SGD on a noisy quadratic,
so the sweep has something real to compare. docs/protocol.md, "The trial protocol", has the contract.
"""
import json, os, random, time

trial_dir = os.environ["DLSWEEP_TRIAL_DIR"]                       # set by dlsweep
p = json.load(open(os.path.join(trial_dir, "params.json")))       # resolved hyperparameters
metrics = os.path.join(trial_dir, "metrics.jsonl")
seq = sum(1 for _ in open(metrics)) if os.path.exists(metrics) else 0  # a requeued run continues seq
rng, w, t0 = random.Random(p.get("seed", 0)), 5.0, time.time()
with open(metrics, "a") as out:
    for step in range(1, p["steps"] + 1):
        w -= p["lr"] * (2 * w + rng.gauss(0, 1) / p["batch_size"] ** 0.5)  # noisy gradient of w^2
        if step % 10 == 0 or step == p["steps"]:
            kind = "final" if step == p["steps"] else "eval"
            out.write(json.dumps({"seq": seq, "kind": kind, "step": step, "epoch": step / p["steps"],
                                  "samples": step * p["batch_size"], "wall_s": time.time() - t0,
                                  "metrics": {"loss": w * w}}) + "\n")
            out.flush()
            seq += 1
