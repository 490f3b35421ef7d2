#!/usr/bin/env bash
# asha_savings.sh — what early stopping saves on examples/lr-scaling.yaml, and whether it
# changes the answer. Runs the study twice through `dlsweep submit`, from the same file:
# once with no pruner (the full grid: 36 trials x 10 epochs) and once with ASHA
# (pruner: {kind: asha, by: epoch, min_resource: 1, reduction_factor: 3, max_resource: 10,
# group_by: [batch_size]}: rungs at epochs 1, 3 and 9, a trial goes on past a rung only in
# the top third of its batch size there). Then prints the epochs trained by each, the
# share saved, and `dlsweep best` of each, ranked by time to target (pooled over the trials
# that train at the same speed, analysis/pooled_time.hpp) and by steps to target.
# "Same winner" compares the schedule itself: batch size, warmup and the learning rate the
# rule gives at that batch (at batch 128 = base_batch the three rules are one schedule).
# Bar (issue 10): >= 40% of the epochs saved and the same winner. About 45 minutes on 2
# cores (the full grid takes ~30).
#
# usage: bench/asha_savings.sh BIN_DIR WORK_DIR   (BIN_DIR holds dlsweep and dlsweep-train;
#        a study already in WORK_DIR/sweep.db is not run again, only re-analysed)
set -euo pipefail
bin=${1:?usage: asha_savings.sh BIN_DIR WORK_DIR}
work=${2:?usage: asha_savings.sh BIN_DIR WORK_DIR}
src=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "$bin" && pwd)
mkdir -p "$work"
cd "$work"
export PATH="$bin:$PATH"
# The example with its name changed and its pruner replaced (everything from `pruner:` to
# the next top-level key).
variant() {  # variant NAME PRUNER_YAML
  awk -v name="$1" -v pruner="$2" '
    /^name:/ { print "name: " name; next }
    /^pruner:/ { skip = 1; if (pruner != "") print pruner; next }
    skip && /^[^ #]/ { skip = 0 }
    skip { next }
    { print }' "$src/examples/lr-scaling.yaml"
}
variant lr-scaling-full "" > full.yaml
variant lr-scaling-asha "pruner: {kind: asha, by: epoch, min_resource: 1, reduction_factor: 3, max_resource: 10, group_by: [batch_size]}" > asha.yaml
for s in full asha; do
  dlsweep --db sweep.db status "lr-scaling-$s" > /dev/null 2>&1 || dlsweep --db sweep.db submit "$s.yaml" > "$s.log" 2>&1 || true
done
epochs() {  # epochs STUDY: epochs trained, summed over trials (each trial's last epoch)
  dlsweep --db sweep.db query --format csv "SELECT printf('%.1f', COALESCE(SUM(e), 0)) FROM (SELECT MAX(r.epoch) AS e FROM records r
    JOIN trials t ON t.id = r.trial_id JOIN studies s ON s.id = t.study_id WHERE s.name = '$1' GROUP BY t.id)" | tail -1
}
states() {
  dlsweep --db sweep.db query --format csv "SELECT group_concat(n || ' ' || state, ', ') FROM (SELECT t.state, COUNT(*) AS n
    FROM trials t JOIN studies s ON s.id = t.study_id WHERE s.name = '$1' GROUP BY t.state)" | tail -1
}
full_e=$(epochs lr-scaling-full)
asha_e=$(epochs lr-scaling-asha)
# The winner as a schedule: batch, warmup, effective LR (base_lr x rule at batch/base_batch).
winner() {  # winner STUDY BY
  dlsweep --db sweep.db best "$1" --by "$2" --format json | /usr/bin/python3 -c '
import json, math, sys
b = json.load(sys.stdin)
p = b["params"]
bs, base = p["batch_size"], p.get("base_batch", 128)  # the example fixes base_batch 128, base_lr 0.05
k = bs / base
lr = p.get("base_lr", 0.05) * {"linear": k, "sqrt": math.sqrt(k), "none": 1.0}[p["lr_rule"]]
n, rule, warm = b["trial"], p["lr_rule"], p["warmup_epochs"]
tt = b.get("time_to_target_s")
steps = b.get("steps_to_target")
tt = tt if tt is None else round(tt, 1)
pooled = b.get("time_to_target_pooled_s")
npool = b.get("pooled_trials")
pooled = "" if pooled is None else f" (pooled over {npool} trials: {pooled:.1f} s)"
print(f"trial {n}: batch {bs}, {rule}, warmup {warm} -> lr {lr:.4g}, {steps} steps, {tt} s to target{pooled}|{bs} {warm} {lr:.6g}")'
}
echo "ASHA on examples/lr-scaling.yaml (36 trials x 10 epochs; asha: rungs at epochs 1, 3, 9, eta 3, group_by batch_size)"
echo
echo "| run | trials | epochs trained |"
echo "|---|---|---|"
echo "| full grid | $(states lr-scaling-full) | $full_e |"
echo "| asha | $(states lr-scaling-asha) | $asha_e |"
saved=$(/usr/bin/python3 -c "print(f'{100 * (1 - $asha_e / $full_e):.1f}')")
echo
echo "epochs saved: $saved% (bar >= 40%)"
# The criterion value (time or steps to target) of trial N of a study.
to_target() {  # to_target STUDY NUMBER BY
  local col=$([ "$3" = time ] && echo time_to_target_s || echo steps_to_target)
  dlsweep --db sweep.db results "$1" --format json | /usr/bin/python3 -c "
import json, sys
rows = json.load(sys.stdin)
rows = rows.get('trials', rows) if isinstance(rows, dict) else rows
print(next(r.get('$col') for r in rows if r.get('trial') == $2))"
}
same_all=1
for by in time steps; do
  f=$(winner lr-scaling-full $by); a=$(winner lr-scaling-asha $by)
  if [ "${f#*|}" = "${a#*|}" ]; then
    echo "best by $by: full ${f%%|*}; asha ${a%%|*} — same schedule"
  else
    same_all=0
    # Grid order: trial N is the same schedule in both runs. How far is the ASHA run's pick
    # from the full run's winner, measured in the full run?
    fn=$(echo "$f" | sed -E 's/^trial ([0-9]+):.*/\1/'); an=$(echo "$a" | sed -E 's/^trial ([0-9]+):.*/\1/')
    fv=$(to_target lr-scaling-full "$fn" "$by"); av=$(to_target lr-scaling-full "$an" "$by")
    echo "best by $by: full ${f%%|*}; asha ${a%%|*} — DIFFERENT schedule; in the full run the asha pick" \
         "(trial $an) took $av vs $fv: $(/usr/bin/python3 -c "print(f'{100 * ($av / $fv - 1):+.1f}%')")"
  fi
done
ok=$(/usr/bin/python3 -c "print('met' if $saved >= 40 and $same_all else 'MISSED')")
echo "bar (>= 40% saved and the same schedule by both criteria): $ok"
echo "reproduce: bench/asha_savings.sh $bin $work"
