#!/usr/bin/env bash
# branch_race.sh — the race of issue 41 §3: which batch-size schedule reaches the target first,
# and at what compute, per workload and rank count:
#   (a) sweep     the best of 16 fixed schedules (bench/adaptive_vs_sweep.sh's critical-batch
#                 sweep: batch {64, 256, 1024, 4096} x lr_rule {linear, sqrt} x warmup {0, 1});
#   (b) adaptive  `batch_ramp: adaptive` (adaptive_vs_sweep.sh's arm, one run per seed);
#   (c) branched  a branching study (search: {algorithm: branch}, docs/branching.md) with the
#                 same trainer settings — the trunk at batch 64, branches at batches 64..4096
#                 from the trunk's checkpoints at epochs 0.25, 0.5, 1, 2, 4, each half an
#                 epoch, 2 seeds (3 where undetermined) — then the batch ramp its answer derives
#                 (`dlsweep best --format json`: schedule.batch_ramp) run once per seed.
# Arms (a) and (b) are adaptive_vs_sweep.sh's (it runs them into the same WORK_DIR/sweep.db,
# or re-analyses them when there); this script adds (c) and prints one table: each arm's time
# to the target (wall s; the sweep's best trial; the median over seeds for (b) and (c)), its
# samples to the target, and its compute (core-s = trainer wall s x ranks, summed over every
# trial it ran: for (c) the branching study's trunk and branches plus the mean schedule run).
# The goal the issue sets: (c) within 1.1x of the sweep's best time at under 1/5 of the
# sweep's compute on every workload, and no worse than (b). A run that never reaches the
# target prints "-" and its ratio "never". Wall times on a shared machine are noisy: rerun.
#
# Compute is each trial's own process time (duration_s): a branch's trainer clock (wall_s)
# continues from its trunk checkpoint's, so summing wall_s would count the trunk's time again
# for every branch forked from it.
#
# usage: bench/branch_race.sh BIN_DIR WORK_DIR [--workloads mlp,cnn] [--ranks 1,2]
#          [--seeds 1,2,3] [--concurrent N] [--batches 64,128,...] [--delta EPOCHS]
#          [--max-seeds N] [--tag NAME]
# Defaults (sized for 2 cores): mlp and cnn, ranks 1 and 2, seeds 1,2,3, one trial at a time
# (about 40 minutes in all on an idle 2-core machine); the branching study's batches 64..4096
# in doublings, delta 0.5 epochs, 2 seeds per branch and up to 3 where undetermined.
# --batches/--delta/--max-seeds change (c)'s design (e.g. `--batches 64,256,1024,4096 --delta
# 0.25 --max-seeds 2`: a quarter of the branches' samples); with --tag its studies are named
# race-W-rR-branch-NAME/-schedule-NAME, so they run beside the default design's in the same
# WORK_DIR, whose (a) and (b) are re-analysed, not run again.
set -euo pipefail
usage="usage: branch_race.sh BIN_DIR WORK_DIR [--workloads mlp,cnn] [--ranks 1,2] [--seeds 1,2,3] [--concurrent N] [--batches 64,128,...] [--delta EPOCHS] [--max-seeds N] [--tag NAME]"
bin=${1:?$usage}
work=${2:?$usage}
shift 2
workloads=mlp,cnn ranks_list=1,2 seeds=1,2,3 conc=1
batches=64,128,256,512,1024,2048,4096 delta=0.5 max_seeds=3 tag=""
while [ $# -gt 0 ]; do
  case "$1" in
    --workloads) workloads=$2 ;;
    --ranks) ranks_list=$2 ;;
    --seeds) seeds=$2 ;;
    --concurrent) conc=$2 ;;
    --batches) batches=$2 ;;
    --delta) delta=$2 ;;
    --max-seeds) max_seeds=$2 ;;
    --tag) tag=$2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift 2
done
src=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "$bin" && pwd)
mkdir -p "$work"
work=$(cd "$work" && pwd)
# (a) and (b): the same trainer settings, the same database.
"$src/bench/adaptive_vs_sweep.sh" "$bin" "$work" --workloads "$workloads" --ranks "$ranks_list" --seeds "$seeds" \
  --concurrent "$conc" > "$work/adaptive_vs_sweep.out"
cd "$work"
export PATH="$bin:$PATH"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

. "$src/bench/race_settings.sh"  # race_workload, race_trainer, race_fixed: as (a) and (b)

common_fixed() {
  race_fixed
  cat <<EOF
  warmup_epochs: 0.5
  lr_rule: sqrt
EOF
}

branch_yaml() {  # branch_yaml NAME W RANKS
  IFS='|' read -r model epochs train test target <<< "$(race_workload "$2")"
  local last=4
  [ "$epochs" -le 4 ] && last=1
  cat <<EOF
name: $1
backend: {kind: local, max_concurrent: $conc}
trial:
  ranks: $3
  trainer: $(race_trainer "$2")
objective: {metric: val_loss, mode: min}
search:
  algorithm: branch
  points: {first: 0.25, last: $last}
  batches: [${batches//,/, }]
  delta: $delta
  tolerance: 0.02
  seeds: 2
  max_seeds: $max_seeds
  seed: 1
EOF
  common_fixed
  echo "  seed: 1"
}

schedule_yaml() {  # schedule_yaml NAME W RANKS RAMP
  IFS='|' read -r model epochs train test target <<< "$(race_workload "$2")"
  cat <<EOF
name: $1
backend: {kind: local, max_concurrent: $conc}
trial:
  ranks: $3
  trainer: $(race_trainer "$2")
objective: {metric: val_acc, mode: max, target: $target}
search: {algorithm: grid, seed: 1}
EOF
  common_fixed
  local first=${4%%,*}
  cat <<EOF
  batch_size: ${first#*:}
  batch_ramp: "$4"
space:
  seed: [${seeds//,/, }]
EOF
}

rows=()
for w in ${workloads//,/ }; do
  for r in ${ranks_list//,/ }; do
    br="race-$w-r$r-branch${tag:+-$tag}" sc="race-$w-r$r-schedule${tag:+-$tag}" sweep="avs-$w-r$r-sweep" adaptive="avs-$w-r$r-adaptive"
    branch_yaml "$br" "$w" "$r" > "$br.yaml"
    dlsweep --db sweep.db status "$br" > /dev/null 2>&1 || dlsweep --db sweep.db submit "$br.yaml" > "$br.log" 2>&1 || true
    dlsweep --db sweep.db best "$br" --format json > "$br.best.json" 2> "$br.best.err" || echo '{}' > "$br.best.json"
    ramp=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("schedule", {}).get("batch_ramp", ""))' "$br.best.json")
    if [ -z "$ramp" ]; then
      rows+=("$w|$r|the branching study gave no schedule ($(head -c 200 "$br.best.err"))")
      continue
    fi
    schedule_yaml "$sc" "$w" "$r" "$ramp" > "$sc.yaml"
    dlsweep --db sweep.db status "$sc" > /dev/null 2>&1 || dlsweep --db sweep.db submit "$sc.yaml" > "$sc.log" 2>&1 || true
    for s in "$sweep" "$adaptive" "$br" "$sc"; do
      dlsweep --db sweep.db results "$s" --format json > "$s.results.json" 2> /dev/null || echo '[]' > "$s.results.json"
    done
    dlsweep --db sweep.db best "$sweep" --format json > "$sweep.best.json" 2> /dev/null || echo '{}' > "$sweep.best.json"
    rows+=("$(python3 - "$w" "$r" "$sweep" "$adaptive" "$br" "$sc" "$ramp" <<'EOF'
import json, statistics, sys
w, ranks, sweep, adaptive, br, sc, ramp = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
load = lambda s: json.load(open(s + ".results.json"))
num = lambda x: None if x is None else float(x)
inf = float("inf")
def compute(rows):  # process time x ranks (a forked trial's wall_s includes its trunk's)
    return sum((num(t.get("duration_s")) or 0.0) for t in rows) * ranks
def median_to_target(rows, key):
    v = [num(t.get(key)) for t in rows]
    v = [inf if x is None else x for x in v]
    return statistics.median(v) if v else inf
sr, ar, brr, scr = load(sweep), load(adaptive), load(br), load(sc)
best = json.load(open(sweep + ".best.json"))
best_t = num(best.get("time_to_target_s")) or inf
best_s = next((num(t.get("samples_to_target")) for t in sr if t["trial"] == best.get("trial")), None) or inf
a_t, a_s = median_to_target(ar, "time_to_target_s"), median_to_target(ar, "samples_to_target")
c_t, c_s = median_to_target(scr, "time_to_target_s"), median_to_target(scr, "samples_to_target")
sweep_c = compute(sr)
a_c = compute(ar) / max(1, len(ar))
c_c = compute(brr) + compute(scr) / max(1, len(scr))
f = lambda v: "-" if v == inf else f"{v:.1f}"
ratio = lambda a, b: "never" if a == inf or b == inf else f"{a / b:.2f}"
met = c_t != inf and best_t != inf and c_t <= 1.1 * best_t and sweep_c > 0 and c_c < sweep_c / 5 and (a_t == inf or c_t <= a_t)
print(f"{w}|{ranks}|{f(best_t)}|{f(a_t)}|{f(c_t)} ({ramp})|{f(best_s)}|{f(a_s)}|{f(c_s)}|{sweep_c:.0f}|{a_c:.0f}|{c_c:.0f} "
      f"({len(brr)} branch-study trials)|{ratio(c_t, best_t)}|{ratio(c_c, sweep_c)}|{ratio(c_t, a_t)}|{'met' if met else 'not met'}")
EOF
)")
  done
done

echo "the race (issue 41 §3): (a) the sweep's best fixed schedule, (b) batch_ramp adaptive, (c) the schedule a branching study derives (batches $batches, delta $delta, up to $max_seeds seeds${tag:+, tag $tag})"
echo "| workload | ranks | (a) time to target, s | (b) median | (c) median (ramp) | (a) samples to target | (b) | (c) | (a) compute, core-s | (b) per run | (c) incl. branches | (c)/(a) time | (c)/(a) compute | (c)/(b) time | goal |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for row in "${rows[@]}"; do echo "| ${row//|/ | } |"; done
echo "goal: (c)/(a) time <= 1.1 at (c)/(a) compute < 0.2, and (c) no slower than (b)"
