"""Who this process is, from the environment dlsweep and the launchers set: the trial (its
directory, number, attempt, study) and the global rank of a distributed run."""

from __future__ import annotations

import os
import pathlib
import sys

from .protocol import ENV_ATTEMPT, ENV_STUDY, ENV_TRIAL_DIR, ENV_TRIAL_ID

# Environment variables that carry the global rank, most specific launcher first: torchrun
# (and users of torch.distributed) set RANK; mpirun sets OMPI_COMM_WORLD_RANK (Open MPI) or
# PMI_RANK (MPICH, Intel MPI); srun --mpi=pmix sets PMIX_RANK; srun sets SLURM_PROCID. A
# torchrun started by srun once per node sees SLURM_PROCID = node index, so RANK wins.
RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")


def trial_dir() -> pathlib.Path | None:
    """The trial directory ($DLSWEEP_TRIAL_DIR), or None outside dlsweep."""
    d = os.environ.get(ENV_TRIAL_DIR)
    return pathlib.Path(d) if d else None


def _env_int(name: str, default: int | None) -> int | None:
    v = os.environ.get(name, "").strip()
    try:
        return int(v) if v else default
    except ValueError:
        return default


def trial_id() -> int | None:
    """The trial's number (as `dlsweep status` shows it), or None outside dlsweep."""
    return _env_int(ENV_TRIAL_ID, None)


def attempt() -> int:
    """0 for the first launch, +1 per retry (a requeue keeps the attempt)."""
    return _env_int(ENV_ATTEMPT, 0)


def study() -> str | None:
    """The study's name, or None outside dlsweep."""
    return os.environ.get(ENV_STUDY) or None


def run_name() -> str | None:
    """`<study>-<trial number>`, for W&B/TensorBoard run names ($DLSWEEP_RUN_NAME if set)."""
    if os.environ.get("DLSWEEP_RUN_NAME"):
        return os.environ["DLSWEEP_RUN_NAME"]
    s, n = study(), trial_id()
    return f"{s}-{n}" if s is not None and n is not None else None


def rank() -> int:
    """This process's global rank: 0 when not distributed."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None:
        try:
            if dist.is_available() and dist.is_initialized():
                return int(dist.get_rank())
        except Exception:  # an odd torch build: fall back to the environment
            pass
    for name in RANK_VARIABLES:
        r = _env_int(name, None)
        if r is not None:
            return r
    return 0


def is_writer() -> bool:
    """True on the one process that writes metrics.jsonl (global rank 0)."""
    return rank() == 0
