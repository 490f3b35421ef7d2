#!/bin/bash
#SBATCH --job-name=dlsweep:lb-sweep
#SBATCH --comment=dlsweep:batch-1700000000-42-1
#SBATCH --output=/scratch/study/slurm/slurm-%j.out
#SBATCH --open-mode=append
#SBATCH --chdir=/scratch/study/slurm
#SBATCH --time=2
#SBATCH --ntasks=4
#SBATCH --no-requeue
# dlsweep batch script: study lb-sweep, 1 trial(s), one per array task.
#
# Sites may copy this template and point dlsweep at it (slurm.template). Every value dlsweep
# fills in is already quoted for where it goes: #SBATCH values for sbatch's parser, shell
# words for bash. `setup` lines are inserted verbatim (they are trusted shell code). The
# trial commands are not in this file: each array task reads its own line of the index file.
# The #SBATCH block must stay first: sbatch stops reading options at the first command.

dlsweep_task=${SLURM_ARRAY_TASK_ID:-0}
dlsweep_index=/scratch/study/slurm/batch-1700000000-42-1.index
echo "dlsweep: job ${SLURM_JOB_ID} task ${dlsweep_task} on $(hostname), restart ${SLURM_RESTART_COUNT:-0}"

# Index line = shell words written by dlsweep (bare, '...' or $'...' only: nothing in them
# expands), so eval does no more than split them: task, token, trial dir, env count, env
# assignments, argv.
mapfile -t -s $((dlsweep_task + 1)) -n 1 dlsweep_line <"$dlsweep_index"
if [[ ${#dlsweep_line[@]} -ne 1 ]]; then
  echo "dlsweep: task ${dlsweep_task} is missing from ${dlsweep_index}" >&2
  exit 70
fi
eval "set -- ${dlsweep_line[0]}"
if [[ $# -lt 5 || $1 != "$dlsweep_task" ]]; then
  echo "dlsweep: line $((dlsweep_task + 2)) of ${dlsweep_index} is not task ${dlsweep_task}" >&2
  exit 70
fi
export DLSWEEP_SLURM_TOKEN=$2
dlsweep_dir=$3
dlsweep_nenv=$4
shift 4
while ((dlsweep_nenv > 0)); do
  export "$1"
  shift
  dlsweep_nenv=$((dlsweep_nenv - 1))
done
cd "$dlsweep_dir" || { echo "dlsweep: cannot enter the trial directory ${dlsweep_dir}" >&2; exit 70; }
exec >>stdout.log 2>>stderr.log

# Slurm sends the warning signal (B: batch shell only) and scancel's TERM here; the trial
# runs in the background so that the trap runs at once, and gets the signal forwarded.
dlsweep_signal=
dlsweep_child=
dlsweep_forward() {
  dlsweep_signal=$1
  if [[ -n $dlsweep_child ]]; then kill -s "$1" "$dlsweep_child" 2>/dev/null; fi
}
trap 'dlsweep_forward USR2' USR2
trap 'dlsweep_forward TERM' TERM
srun --mpi=pmix --ntasks=4 "$@" &
dlsweep_child=$!
if [[ -n $dlsweep_signal ]]; then kill -s "$dlsweep_signal" "$dlsweep_child" 2>/dev/null; fi
while :; do
  wait "$dlsweep_child"
  dlsweep_rc=$?
  # wait returns early when a trapped signal arrives; go on until the trial has ended.
  kill -0 "$dlsweep_child" 2>/dev/null || break
done
exit "$dlsweep_rc"
