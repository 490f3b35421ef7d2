#!/usr/bin/env python3
"""A trial program for the serve tests: reports an eval record every `period` seconds until
the file `{gate_dir}/gate-{x}` exists, then a final record, and exits 0. It stands for a
real training run whose end the test decides (no sleep decides the outcome)."""
import json, os, time

trial_dir = os.environ["DLSWEEP_TRIAL_DIR"]
p = json.load(open(os.path.join(trial_dir, "params.json")))
gate = os.path.join(p["gate_dir"], "gate-%d" % p["x"])
seq, step, t0 = 0, 0, time.time()
with open(os.path.join(trial_dir, "metrics.jsonl"), "a") as out:
    def record(kind):
        global seq
        out.write(json.dumps({"seq": seq, "kind": kind, "step": step, "epoch": step / 1000.0,
                              "samples": step * p["batch_size"], "wall_s": time.time() - t0,
                              "metrics": {"loss": 1.0 / (1 + step), "samples_per_s": 1000.0}}) + "\n")
        out.flush()
        seq += 1
    while not os.path.exists(gate):
        step += 10
        record("eval")
        time.sleep(p["period"])
    step += 10
    record("final")
