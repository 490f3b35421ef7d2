#!/usr/bin/env bash
# prune_latency.sh — how long after a trial writes a hopeless report does dlsweep ask it to
# stop? Each trial of a local study writes one eval record below a threshold pruner's bound,
# notes the time of the write, then polls control.json every millisecond and notes when the
# stop request appears. The same study runs twice in this invocation: with the orchestrator's
# inotify watch on the trial files (the default) and with DLSWEEP_NO_INOTIFY=1 (its 0.5 s
# tick only, what dlsweep did before). Prints the decision latency of each (median, p90,
# max over the trials, in ms) and their ratio.
#
# Then (part 2, below) the time should_stop() adds after each report(), now that it answers
# for that report.
#
# usage: bench/prune_latency.sh BIN_DIR WORK_DIR [TRIALS]   (about 30 s for 16 trials)
set -euo pipefail
bin=${1:?usage: prune_latency.sh BIN_DIR WORK_DIR [TRIALS]}
work=${2:?usage: prune_latency.sh BIN_DIR WORK_DIR [TRIALS]}
trials=${3:-16}
bin=$(cd "$bin" && pwd)
lib=$(cd "$(dirname "$0")/../python" && pwd)  # dlsweep_trial, for part 2
rm -rf "$work"
mkdir -p "$work"
cd "$work"
cat > trial.py <<'PY'
import json, os, time
d = os.environ["DLSWEEP_TRIAL_DIR"]
time.sleep(0.2)  # let the orchestrator settle after the launch
with open(os.path.join(d, "metrics.jsonl"), "a") as out:
    out.write(json.dumps({"seq": 0, "kind": "eval", "step": 1, "epoch": 1, "samples": 1, "wall_s": 0.2,
                          "metrics": {"val_acc": 0.01}}) + "\n")
    out.flush()
    wrote = time.time()
control = os.path.join(d, "control.json")
seen = None
while time.time() - wrote < 5:
    if os.path.exists(control):
        seen = time.time()
        break
    time.sleep(0.001)
with open(os.path.join(d, "latency.txt"), "w") as f:
    f.write("%f\n" % ((seen - wrote) if seen else -1))
PY
for mode in inotify tick; do
  cat > "$mode.yaml" <<YAML
name: latency-$mode
backend: {kind: local, max_concurrent: 2}
trial:
  command: [python3, "{study_dir}/trial.py"]
objective: {metric: val_acc, mode: max}
search: {algorithm: random, trials: $trials}
space: {x: {uniform: [0, 1]}}
pruner: {kind: threshold, lower: 0.5, by: step}
runs_dir: $work/runs-$mode
YAML
  if [[ $mode == tick ]]; then
    DLSWEEP_NO_INOTIFY=1 "$bin/dlsweep" --db "$work/sweep.db" submit "$mode.yaml" > "$mode.log" 2>&1 || true
  else
    "$bin/dlsweep" --db "$work/sweep.db" submit "$mode.yaml" > "$mode.log" 2>&1 || true
  fi
done
python3 - "$work" <<'PY'
import glob, os, statistics, sys
work = sys.argv[1]
res = {}
for mode in ("inotify", "tick"):
    xs = sorted(float(open(f).read()) * 1000 for f in glob.glob(os.path.join(work, f"runs-{mode}", "*", "trial-*", "latency.txt")))
    missed = sum(1 for x in xs if x < 0)
    xs = [x for x in xs if x >= 0]
    if not xs:
        sys.exit(f"{mode}: no trial saw a stop request (see {work}/{mode}.log)")
    p90 = xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]
    res[mode] = statistics.median(xs)
    print(f"{mode:8s} trials {len(xs):3d}  decision latency ms: median {statistics.median(xs):7.1f}  p90 {p90:7.1f}  max {xs[-1]:7.1f}"
          + (f"  ({missed} never asked)" if missed else ""))
print(f"median latency, tick only / inotify: {res['tick'] / res['inotify']:.1f}x")
PY

# Part 2: what waiting for the decision costs a trial that is NOT pruned. Each trial of a
# study with a median pruner (nothing to prune: every trial is as good) runs the guide's loop (docs/python-trials.md)
# through dlsweep_trial, `report(...)` then `if should_stop(): break`, 20 times, and times
# should_stop() after each report: since it answers for that report, it waits until the
# orchestrator has read the record and decided (decided.json). Again with inotify and with
# the 0.5 s tick only.
cat > wait_trial.py <<'PY'
import json, os, time
import dlsweep_trial as dt
waits = []
for epoch in range(1, 21):
    time.sleep(0.01)
    dt.report(step=epoch, epoch=epoch, samples=epoch, val_acc=0.5 + 0.01 * epoch)
    t0 = time.perf_counter()
    if dt.should_stop():
        break
    waits.append(time.perf_counter() - t0)
dt.final(step=20, epoch=20, samples=20, val_acc=0.7)
with open(os.path.join(os.environ["DLSWEEP_TRIAL_DIR"], "waits.json"), "w") as f:
    json.dump(waits, f)
PY
for mode in inotify tick; do
  cat > "wait-$mode.yaml" <<YAML
name: wait-$mode
backend: {kind: local, max_concurrent: 2}
trial:
  command: [python3, "{study_dir}/wait_trial.py"]
  env: {PYTHONPATH: "$lib"}
objective: {metric: val_acc, mode: max}
search: {algorithm: random, trials: 4}
space: {x: {uniform: [0, 1]}}
pruner: {kind: median, startup_trials: 1}
runs_dir: $work/runs-wait-$mode
YAML
  if [[ $mode == tick ]]; then
    DLSWEEP_NO_INOTIFY=1 "$bin/dlsweep" --db "$work/sweep.db" submit "wait-$mode.yaml" > "wait-$mode.log" 2>&1 || true
  else
    "$bin/dlsweep" --db "$work/sweep.db" submit "wait-$mode.yaml" > "wait-$mode.log" 2>&1 || true
  fi
done
python3 - "$work" <<'PY'
import glob, json, os, statistics, sys
work = sys.argv[1]
for mode in ("inotify", "tick"):
    xs = sorted(w * 1000 for f in glob.glob(os.path.join(work, f"runs-wait-{mode}", "*", "trial-*", "waits.json"))
                for w in json.load(open(f)))
    if not xs:
        sys.exit(f"wait {mode}: no trial recorded its waits (see {work}/wait-{mode}.log)")
    p90 = xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]
    print(f"{mode:8s} reports {len(xs):3d}  should_stop() after report(), ms: median {statistics.median(xs):7.1f}  "
          f"p90 {p90:7.1f}  max {xs[-1]:7.1f}")
PY
