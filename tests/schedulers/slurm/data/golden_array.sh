#!/bin/bash
#SBATCH --job-name=dlsweep:lb-sweep
#SBATCH --comment=dlsweep:batch-1700000000-42-1
#SBATCH --array=0-2
#SBATCH --output=/scratch/study/slurm/slurm-%A_%a.out
#SBATCH --open-mode=append
#SBATCH --chdir=/scratch/study/slurm
#SBATCH --partition=gpu
#SBATCH --account=proj-42
#SBATCH --qos=normal
#SBATCH --time=30
#SBATCH --nodes=1
#SBATCH --cpus-per-task=8
#SBATCH --gpus-per-node=a100:2
#SBATCH --mem=64G
#SBATCH --constraint="ib&a100"
#SBATCH --signal=B:USR2@120
#SBATCH --requeue
#SBATCH --exclusive
#SBATCH --mail-user="ops team@example.org"
# dlsweep batch script: study lb-sweep, 3 trial(s), one per array task.
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

# backend.setup (trusted lines, as written): each must succeed, else the job ends here with
# exit 78 and names the line in stderr.log (a typo in `module load` must not run on).
module load cuda/12.2
dlsweep_rc=$?
if ((dlsweep_rc != 0)); then echo "dlsweep: backend.setup[0] failed with exit ${dlsweep_rc}: "'module load cuda/12.2' >&2; exit 78; fi
source /opt/venv/bin/activate
dlsweep_rc=$?
if ((dlsweep_rc != 0)); then echo "dlsweep: backend.setup[1] failed with exit ${dlsweep_rc}: "'source /opt/venv/bin/activate' >&2; exit 78; fi
cd "$dlsweep_dir" || { echo "dlsweep: cannot enter the trial directory ${dlsweep_dir}" >&2; exit 70; }

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
"$@" &
dlsweep_child=$!
if [[ -n $dlsweep_signal ]]; then kill -s "$dlsweep_signal" "$dlsweep_child" 2>/dev/null; fi
while :; do
  wait "$dlsweep_child"
  dlsweep_rc=$?
  # wait returns early when a trapped signal arrives; go on until the trial has ended.
  kill -0 "$dlsweep_child" 2>/dev/null || break
done

# Stopped at the time-limit / preemption warning with a checkpoint (exit 75):
# put this task back in the queue, so it resumes from the checkpoint under the same job id.
if [[ $dlsweep_signal == USR2 && $dlsweep_rc -eq 75 ]]; then
  dlsweep_self=${SLURM_JOB_ID}
  if [[ -n ${SLURM_ARRAY_JOB_ID:-} ]]; then dlsweep_self=${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}; fi
  echo "dlsweep: trial stopped after the warning signal; requeueing ${dlsweep_self}" >&2
  scontrol requeue "$dlsweep_self" && exit 75
  echo "dlsweep: scontrol requeue ${dlsweep_self} failed; the orchestrator will retry the trial" >&2
fi
exit "$dlsweep_rc"
