#!/usr/bin/env bash
# pbt_vs_random.sh — what population-based training buys on Fashion-MNIST (issue 20 §3).
# For each seed S it runs, through `dlsweep submit`, from examples/pbt-schedule.yaml:
#   pbt     the example (8 members x 3 intervals of 2 epochs = 48 epochs), search seed S;
#   random  the same space, search {algorithm: random, trials: 8}: 8 fixed schedules of 6
#           epochs, the same 48 epochs;
#   replay  `dlsweep best <pbt> --write-schedule`: the PBT winner's schedule (lr_schedule and
#           batch_ramp) replayed from scratch as one fixed run of 6 epochs;
# every trial with dlsweep-train `seed: S` (initialisation and data order). Then it prints the
# steps to 88% (val_acc >= 0.88, objective.target) of the replayed PBT schedule and of the
# best fixed schedule random search found (`best --by steps`), per seed and their medians,
# with the winner's final val_acc. A run that never reaches 88% prints "-" (and counts as
# worse than any that does in the median). About 3 minutes per seed on 2 idle cores.
#
# usage: bench/pbt_vs_random.sh BIN_DIR WORK_DIR [SEED ...]   (default seeds: 1 2 3; a study
#        already in WORK_DIR/sweep.db is not run again, only re-analysed)
set -euo pipefail
bin=${1:?usage: pbt_vs_random.sh BIN_DIR WORK_DIR [SEED ...]}
work=${2:?usage: pbt_vs_random.sh BIN_DIR WORK_DIR [SEED ...]}
shift 2
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)
src=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "$bin" && pwd)
mkdir -p "$work"
cd "$work"
export PATH="$bin:$PATH"

# The example with its name, search seed and trainer seed set; `random` also replaces the
# search section (everything from `search:` to the next top-level key).
variant() {  # variant NAME SEED pbt|random
  awk -v name="$1" -v seed="$2" -v kind="$3" '
    /^name:/ { print "name: " name; next }
    /^search:/ && kind == "random" { skip = 1; print "search: {algorithm: random, trials: 8, seed: " seed "}"; next }
    skip && /^[^ #]/ { skip = 0 }
    skip { next }
    /^  seed:/ { print "  seed: " seed; next }
    /^fixed:/ { print; print "  seed: " seed; next }
    { print }' "$src/examples/pbt-schedule.yaml"
}
run() {  # run STUDY FILE
  dlsweep --db sweep.db status "$1" > /dev/null 2>&1 || dlsweep --db sweep.db submit "$2" > "$1.log" 2>&1 || true
}
field() {  # field JSON_FILE KEY: a top-level number of `best --format json`, or "-"
  /usr/bin/python3 -c 'import json, sys
b = json.load(open(sys.argv[1])); v = b.get(sys.argv[2])
print("-" if v is None else (int(v) if float(v).is_integer() else round(float(v), 4)))' "$1" "$2"
}

rows=()
for s in "${seeds[@]}"; do
  variant "fmnist-pbt-s$s" "$s" pbt > "pbt-s$s.yaml"
  variant "fmnist-random-s$s" "$s" random > "random-s$s.yaml"
  run "fmnist-pbt-s$s" "pbt-s$s.yaml"
  run "fmnist-random-s$s" "random-s$s.yaml"
  dlsweep --db sweep.db best "fmnist-pbt-s$s" --write-schedule "replay-s$s.yaml" --format json > "pbt-best-s$s.json"
  run "fmnist-pbt-s$s-replay" "replay-s$s.yaml"
  dlsweep --db sweep.db best "fmnist-pbt-s$s-replay" --format json > "replay-best-s$s.json" || echo '{}' > "replay-best-s$s.json"
  # The best fixed schedule by steps to 88%; when no random trial reached it, the best by value.
  dlsweep --db sweep.db best "fmnist-random-s$s" --by steps --format json > "random-best-s$s.json" 2> /dev/null ||
    dlsweep --db sweep.db best "fmnist-random-s$s" --by value --format json > "random-best-s$s.json" || echo '{}' > "random-best-s$s.json"
  schedule=$(/usr/bin/python3 -c 'import json, sys
b = json.load(open(sys.argv[1]))
print("; ".join("{:g}-{:g}: lr {:.3g} bs {}".format(i["start"], i["end"], i["params"].get("base_lr", 0), i["params"].get("batch_size", "?"))
                 for i in b.get("schedule", [])))' "pbt-best-s$s.json")
  random_params=$(/usr/bin/python3 -c 'import json, sys
p = json.load(open(sys.argv[1])).get("params", {})
print("lr {:.3g} bs {}".format(p.get("base_lr", 0), p.get("batch_size", "?")))' "random-best-s$s.json")
  rows+=("$s|$(field "replay-best-s$s.json" steps_to_target)|$(field "replay-best-s$s.json" best_value)|$(field "random-best-s$s.json" steps_to_target)|$(field "random-best-s$s.json" best_value)|$schedule|$random_params")
done

echo "steps to val_acc 0.88 (fewer is better), PBT's replayed schedule vs random search's best fixed schedule"
echo "| seed | PBT replay steps | PBT replay best val_acc | random best steps | random best val_acc | PBT schedule (epochs: base_lr, batch) | random best |"
echo "|---|---|---|---|---|---|---|"
for r in "${rows[@]}"; do echo "| ${r//|/ | } |"; done
/usr/bin/python3 - "${rows[@]}" <<'EOF'
import statistics, sys
def steps(x):
    return float("inf") if x == "-" else float(x)
rows = [r.split("|") for r in sys.argv[1:]]
pbt = statistics.median(steps(r[1]) for r in rows)
rnd = statistics.median(steps(r[3]) for r in rows)
fmt = lambda v: "never" if v == float("inf") else f"{v:g}"
print(f"median over {len(rows)} seeds: PBT replay {fmt(pbt)} steps, random best {fmt(rnd)} steps"
      + (f" (PBT/random = {pbt / rnd:.2f})" if pbt != float("inf") and rnd not in (0, float("inf")) else ""))
EOF
