"""What the tests that start a local Slurm cluster (scripts/slurm-local.sh) need, checked once:
the daemons and sbatch installed, and root to start them. One copy for test_pytorch_ddp.py and
test_suggest_slurm.py."""
import os


def slurm_missing():
    """Why no local Slurm cluster can be started here, or None when one can."""
    for p in ("/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged", "/usr/bin/sbatch"):
        if not os.access(p, os.X_OK):
            return f"{p} is not installed"
    if os.geteuid() != 0:
        return "starting a local Slurm cluster needs root"
    return None
