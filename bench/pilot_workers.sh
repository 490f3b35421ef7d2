#!/usr/bin/env bash
# pilot_workers.sh — many short trials on the local Slurm cluster, one job per trial vs four
# pilot workers (backend.workers: 4), each also under a site limit of 4 jobs per user (a
# `sbatch` first on PATH that refuses past 4 pending+running jobs in Slurm's own words, as
# tests/e2e/slurm_site.hpp plays it), and a PBT study both ways. For each run: the makespan
# (submit to "finished"), the controller RPCs sent by clients (sdiag's statistics by message
# type, reset before each run; the same client message types as bench/slurm_submit.cpp),
# per trial, and the sbatch calls. Ratios are against the per-trial run measured in the same
# invocation on the same machine. Issue "The site's rules", item 4.
#
# usage: bench/pilot_workers.sh BIN_DIR WORK_DIR [TRIALS (default 200)] [TRIAL_SECONDS (default 0.2)]
#   BIN_DIR holds dlsweep and dlsweep-train. Starts (and stops) its own cluster in WORK_DIR/cluster.
set -euo pipefail
bin=${1:?usage: pilot_workers.sh BIN_DIR WORK_DIR [TRIALS] [TRIAL_SECONDS]}
work=${2:?usage: pilot_workers.sh BIN_DIR WORK_DIR [TRIALS] [TRIAL_SECONDS]}
trials=${3:-200}
secs=${4:-0.2}
src=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "$bin" && pwd)
rm -rf "$work"
mkdir -p "$work/limit-bin"
work=$(cd "$work" && pwd)
conf=$("$src/scripts/slurm-local.sh" start --dir "$work/cluster" | sed -n 's/^SLURM_CONF=//p')
export SLURM_CONF=$conf
trap '"$src/scripts/slurm-local.sh" stop --dir "$work/cluster" >/dev/null 2>&1 || true' EXIT

# MaxSubmitJobsPerUser=4, played by sbatch (each array task counts as one job).
cat > "$work/limit-bin/sbatch" <<'SH'
#!/bin/bash
for a in "$@"; do [ "$a" = --test-only ] && exec /usr/bin/sbatch "$@"; script="$a"; done
n=1
spec=$(sed -n 's/^#SBATCH --array=\([0-9]*\)-\([0-9]*\).*/\1 \2/p' "$script" | head -n 1)
if [ -n "$spec" ]; then lo=${spec% *}; hi=${spec#* }; n=$((hi - lo + 1)); fi
live=$(/usr/bin/squeue -h -r -t PENDING,RUNNING,CONFIGURING,COMPLETING | wc -l)
if [ $((live + n)) -gt 4 ]; then
  echo "sbatch: error: QOSMaxSubmitJobPerUserLimit" >&2
  echo "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)" >&2
  exit 1
fi
exec /usr/bin/sbatch "$@"
SH
chmod +x "$work/limit-bin/sbatch"

space=$(seq -s ', ' 1 "$trials")
short_study() {  # NAME BACKEND_EXTRA
  cat <<EOF
name: $1
backend: {kind: slurm, slurm_conf: '$conf', poll_min_s: 0.3, poll_max_s: 2, time: 30, $2}
trial:
  command: [/bin/sh, -c, "sleep $secs; echo '{\"seq\":0,\"kind\":\"final\",\"metrics\":{\"loss\":1}}' >> metrics.jsonl"]
objective: {metric: loss, mode: min}
search: {algorithm: grid}
space: {x: [$space]}
EOF
}
pbt_study() {  # NAME BACKEND_EXTRA
  cat <<EOF
name: $1
backend: {kind: slurm, slurm_conf: '$conf', poll_min_s: 0.3, poll_max_s: 2, time: 30, $2}
trial:
  trainer: {model: mlp, hidden: [32], epochs: 4, eval_every: 1, train_subset: 2000, test_subset: 500, threads: 1}
objective: {metric: val_acc, mode: max}
search:
  algorithm: pbt
  seed: 4
  population: 4
  interval: {by: epoch, every: 1}
  perturb: {base_lr: [0.5, 2], batch_size: [0.5, 2]}
space:
  base_lr: {log_uniform: [0.01, 0.3]}
  batch_size: [32, 64, 128]
fixed: {momentum: 0.9, seed: 5}
EOF
}

client_rpcs() {  # sums sdiag's client message types: "TOTAL SBATCH"
  sdiag | awk '
    /statistics by message type/ { on = 1; next }
    /statistics by user/ { on = 0 }
    on && /count:/ {
      name = $1; sub(/^[ \t]+/, "", name)
      match($0, /count:[0-9]+/); c = substr($0, RSTART + 6, RLENGTH - 6) + 0
      if (name ~ /^REQUEST_(SUBMIT_BATCH_JOB|JOB_INFO|JOB_INFO_SINGLE|JOB_USER_INFO|KILL_JOB|CANCEL_JOB_STEP|BUILD_INFO|UPDATE_JOB|PARTITION_INFO|NODE_INFO|JOB_STEP_INFO|FED_INFO)$/) t += c
      if (name == "REQUEST_SUBMIT_BATCH_JOB") s += c
    }
    END { printf "%d %d\n", t, s }'
}

declare -A make rpcs sbatches ntrials
run() {  # KEY STUDY_FILE LIMIT(0|1)
  local key=$1 file=$2 limit=$3 t0 t1 path=$PATH
  [ "$limit" = 1 ] && path="$work/limit-bin:$PATH"
  sdiag -r >/dev/null
  t0=$(date +%s.%N)
  (cd "$work" && PATH="$path" "$bin/dlsweep" --db sweep.db submit "$file" > "$work/$key.log" 2>&1) || {
    echo "run $key failed: see $work/$key.log" >&2
    tail -5 "$work/$key.log" >&2
    exit 1
  }
  t1=$(date +%s.%N)
  read -r total sb < <(client_rpcs)
  make[$key]=$(echo "$t1 - $t0" | bc -l)
  rpcs[$key]=$total
  sbatches[$key]=$sb
  ntrials[$key]=$("$bin/dlsweep" --db "$work/sweep.db" query "SELECT COUNT(*) FROM trials t JOIN studies s ON s.id = t.study_id WHERE s.name = '$(sed -n 's/^name: //p' "$work/$file")' AND t.state = 'COMPLETE'" --format csv | tail -1)
}

short_study per-trial "max_concurrent: 4" > "$work/per-trial.yaml"
short_study workers "workers: 4" > "$work/workers.yaml"
short_study per-trial-limit "max_concurrent: 4" > "$work/per-trial-limit.yaml"
short_study workers-limit "workers: 4" > "$work/workers-limit.yaml"
pbt_study pbt-per-trial "max_concurrent: 4" > "$work/pbt-per-trial.yaml"
pbt_study pbt-workers "workers: 4" > "$work/pbt-workers.yaml"
export PATH="$bin:$PATH"
run per-trial per-trial.yaml 0
run workers workers.yaml 0
run per-trial-limit per-trial-limit.yaml 1
run workers-limit workers-limit.yaml 1
run pbt-per-trial pbt-per-trial.yaml 0
run pbt-workers pbt-workers.yaml 0

echo
echo "$trials trials of ${secs} s each on the local Slurm cluster ($(nproc) CPUs); PBT: population 4, 4 intervals"
printf '%-26s %9s %10s %12s %10s %8s %15s\n' run trials makespan_s client_RPCs RPCs/trial sbatch makespan_vs_per_trial
row() {  # KEY BASE
  local k=$1 b=$2
  printf '%-26s %9s %10.1f %12s %10.2f %8s %15.2fx\n' "$k" "${ntrials[$k]}" "${make[$k]}" "${rpcs[$k]}" \
    "$(echo "${rpcs[$k]} / ${ntrials[$k]}" | bc -l)" "${sbatches[$k]}" "$(echo "${make[$k]} / ${make[$b]}" | bc -l)"
}
row per-trial per-trial
row workers per-trial
row per-trial-limit per-trial-limit
row workers-limit per-trial-limit
row pbt-per-trial pbt-per-trial
row pbt-workers pbt-per-trial
