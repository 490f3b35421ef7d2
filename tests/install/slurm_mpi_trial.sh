#!/usr/bin/env bash
# slurm_mpi_trial.sh DLSWEEP DLSWEEP_TRAIN pmix|pmi2 — one 2-rank trial of the embedded
# trainer on a real single-host Slurm cluster (scripts/slurm-local.sh, a private --dir),
# launched as `srun --mpi=<plugin>` (the study's backend.mpi): the MPI that DLSWEEP_TRAIN was
# built with must talk to that plugin (docs/slurm.md, "Installing on a cluster": Open MPI pmix, MPICH
# pmi2). Passes when the trial is COMPLETE and its start record says 2 ranks over MPI.
# Exit 77 (SKIPPED): not root, or no Slurm daemons / plugin here.
set -euo pipefail
skip() { echo "slurm_mpi_trial: SKIPPED: $*"; exit 77; }
die() { echo "slurm_mpi_trial: FAILED: $*" >&2; exit 1; }
dlsweep=$(realpath "${1:?usage: slurm_mpi_trial.sh DLSWEEP DLSWEEP_TRAIN pmix|pmi2}")
train=$(realpath "${2:?usage: slurm_mpi_trial.sh DLSWEEP DLSWEEP_TRAIN pmix|pmi2}")
plugin=${3:?usage: slurm_mpi_trial.sh DLSWEEP DLSWEEP_TRAIN pmix|pmi2}
[[ $plugin =~ ^(pmix|pmi2)$ ]] || die "plugin must be pmix or pmi2, not '$plugin'"
src=$(cd "$(dirname "$0")/../.." && pwd)
[[ $(id -u) -eq 0 ]] || skip "scripts/slurm-local.sh needs root"
command -v slurmctld > /dev/null && command -v srun > /dev/null || skip "Slurm (slurmctld, srun) not installed"

work=$(mktemp -d "${TMPDIR:-/tmp}/dlsweep-slurm-mpi.XXXXXX")
chmod 0755 "$work"   # the daemons (munge, slurm users) reach their files through it
cluster=$work/cluster
cleanup() { "$src/scripts/slurm-local.sh" stop --dir "$cluster" > /dev/null 2>&1 || true; rm -rf -- "$work"; }
trap cleanup EXIT
"$src/scripts/slurm-local.sh" start --dir "$cluster" > "$work/start.log" 2>&1 ||
  { cat "$work/start.log"; die "scripts/slurm-local.sh start failed"; }
export SLURM_CONF=$cluster/slurm.conf
srun --mpi=list 2>&1 | grep -qw "$plugin" || { srun --mpi=list 2>&1 || true; skip "srun has no --mpi=$plugin plugin here"; }

cat > "$work/study.yaml" <<STUDY
name: mpi-$plugin
backend: {kind: slurm, mpi: $plugin, max_concurrent: 1, time: 10, slurm_conf: '$SLURM_CONF', poll_min_s: 0.3, poll_max_s: 2}
trial:
  ranks: 2
  trainer: {model: mlp, hidden: [64], epochs: 1, train_subset: 3000, test_subset: 1000, threads: 1}
objective: {metric: val_acc, mode: max}
space:
  batch_size: [128]
fixed: {base_batch: 64, base_lr: 0.05, seed: 3}
runs_dir: '$work/runs'
STUDY
cd "$work"
rc=0
DLSWEEP_TRAIN=$train "$dlsweep" --db "$work/s.db" submit study.yaml > submit.log 2>&1 || rc=$?
cat submit.log
"$dlsweep" --db "$work/s.db" status "mpi-$plugin" || true
if [[ $rc -ne 0 ]]; then
  for f in "$work"/runs/mpi-"$plugin"/*/stderr.log; do [[ -f $f ]] && { echo "== $f"; tail -n 30 "$f"; }; done
  die "the 2-rank trial with srun --mpi=$plugin failed (submit exit $rc)"
fi
grep -l 'on 2 rank(s) (mpi comm)' "$work"/runs/mpi-"$plugin"/*/metrics.jsonl > /dev/null ||
  die "the trial did not run on 2 MPI ranks (no 'on 2 rank(s) (mpi comm)' in its metrics.jsonl)"
grep -h -- "--mpi=$plugin" "$work"/runs/mpi-"$plugin"/slurm/*.sh > /dev/null ||
  die "the batch script does not launch with srun --mpi=$plugin"
echo "slurm_mpi_trial: passed: $(basename "$train") ($(LC_ALL=C readelf -d "$train" | grep -o 'libmpi[a-z]*\.so[.0-9]*' | head -1)) with srun --mpi=$plugin"
