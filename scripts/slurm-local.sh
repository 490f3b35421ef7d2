#!/usr/bin/env bash
# slurm-local.sh — a real, private Slurm cluster on this one machine, for tests, benchmarks
# and trying dlsweep's Slurm backend on a laptop.
#
#   scripts/slurm-local.sh start  [--nodes 1|2] [--dir DIR]   # prints SLURM_CONF=DIR/slurm.conf
#          [--max-job-count N] [--max-array-size N] [--min-job-age S]  # a site's limits
#          [--max-submit-jobs N]   # per-user submit limit: MariaDB + slurmdbd in DIR too
#   scripts/slurm-local.sh stop   [--dir DIR] [--force]
#   scripts/slurm-local.sh status [--dir DIR]
#   scripts/slurm-local.sh --help
#
# Everything lives in DIR (default $DLSWEEP_SLURM_DIR, else /tmp/dlsweep-slurm): slurm.conf,
# controller state, spool, logs, pid files, and a private munged with its own socket, so the
# system's munge (if any) is never touched and several clusters can run side by side (each
# picks free ports; they are remembered in DIR/ports). Nothing is exported globally: point
# the Slurm commands (and libslurm) at the cluster with SLURM_CONF=DIR/slurm.conf.
#
# Invariants:
#  - start is idempotent: daemons already running are left alone; missing ones are started
#    (so `start` after a crashed or stopped slurmctld restarts only the controller, which
#    recovers its jobs from DIR/state). It returns once every node answers (idle, mixed, ...).
#  - one cluster per DIR, shared by whoever names DIR: DIR/started_by records who started it
#    (the user behind sudo: SUDO_UID/SUDO_USER, else the caller). `start` of a cluster that
#    is already running says so, and whose it is; `stop` of one started by another uid is
#    refused unless --force (it would end their jobs). Another DIR (--dir) is another
#    cluster: that is how two users (or two test runs) keep out of each other's way.
#  - stop signals only the pids in DIR's pid files, and only if /proc/PID/stat shows a live
#    (not zombie) process running the expected program; then the slurmstepd processes of
#    this cluster that outlived slurmd (jobs still running) and their children.
# Environment: DLSWEEP_SLURM_DIR (the directory), DLSWEEP_SLURM_MAX_ARRAY (MaxArraySize,
# default 1001; --max-array-size overrides it), DLSWEEP_SLURM_PORT (controller port; slurmd
# ports follow it).
# The site limits (--max-job-count, --max-array-size, --min-job-age) are slurm.conf keys that
# slurmctld reads only when it starts: they are remembered in DIR/limits, and a start that
# names other values while the controller runs is refused (stop it first).
# Facts this script relies on are in the project's Slurm notes: linuxproc tracking (no
# cgroups in containers), config_overrides for CPUs=4 on small machines, cred_expire=10 so a
# requeued job may restart after ~10 s, jobcomp/filetxt so `sacct -c` works without slurmdbd.
# sched_interval=1,bf_interval=1: a job that becomes eligible (a requeued job's BeginTime)
# starts within a second, not at the next 30 s backfill pass.
set -euo pipefail

default_dir=${DLSWEEP_SLURM_DIR:-/tmp/dlsweep-slurm}

usage() {
  echo "usage: $0 start|stop|status [--nodes 1|2] [--dir DIR] [--force] [--max-job-count N] [--max-array-size N] [--min-job-age S] [--max-submit-jobs N]  ($0 --help explains them)" >&2
  exit 2
}

show_help() {
  cat <<EOF
usage: $0 start|stop|status [--nodes 1|2] [--dir DIR] [--force]
                  [--max-job-count N] [--max-array-size N] [--min-job-age S]

A real, private Slurm cluster on this machine (run as root; Debian's slurmctld slurmd munge).

  start    start the cluster in DIR (or those of its daemons that are not running) and
           print SLURM_CONF=DIR/slurm.conf, to export for sbatch, squeue and dlsweep
  stop     stop the cluster in DIR: its daemons, and the jobs still running on it
  status   which daemons of DIR's cluster run, who started it, and sinfo

  --dir DIR   the cluster's directory: config, state, logs and munge socket live there, and
              one directory is one cluster: whoever names it shares it. Default:
              \$DLSWEEP_SLURM_DIR, else /tmp/dlsweep-slurm (here: $default_dir).
              Name your own (e.g. --dir /tmp/slurm-\$USER) for a separate cluster that no
              one else's start or stop touches; several run side by side on free ports.
  --nodes N   1 (default) or 2 "nodes" (n1, n2) on this host; fixed when DIR is first used
  --force     stop: stop a cluster that another user started (refused without it)

A site's limits, as slurm.conf keys (start only; slurmctld reads them when it starts, so a
start that changes them while the controller runs is refused: stop it first):
  --max-job-count N   MaxJobCount: the most jobs the controller holds at once, all users,
                      each array task one, finished jobs too until MinJobAge has passed
                      (default 10000). sbatch refused by it says "Slurm temporarily unable
                      to accept job, sleeping and retrying" and retries by itself
  --max-array-size N  MaxArraySize: array indexes 0..N-1 (default 1001, or
                      \$DLSWEEP_SLURM_MAX_ARRAY); a larger one is refused at once with
                      "Invalid job array specification"
  --min-job-age S     MinJobAge: seconds a finished job stays in the controller (and in
                      squeue) before it is purged (default 600; slurmctld purges about
                      every 60 s, so a record may stay up to S+60 s)
A per-user submit limit, from Slurm's accounting database (start only, as above):
  --max-submit-jobs N MaxSubmitJobs=N on every association of the calling user: the cluster
                      then runs a private MariaDB server and slurmdbd in DIR (packages
                      mariadb-server-core and slurmdbd), and slurmctld refuses the job past N
                      with "Job violates accounting/QOS policy (job submit limit, ...)"
                      (AssocMaxSubmitJobLimit), as sites with accounting do
EOF
  exit 0
}

[[ $# -ge 1 ]] || usage
cmd=$1
shift
[[ $cmd == -h || $cmd == --help || $cmd == help ]] && show_help
nodes=1
nodes_given=0
force=0
dir=$default_dir
max_job_count=""
max_array_opt=""
min_job_age=""
max_submit_jobs=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --nodes) nodes=${2:?--nodes needs 1 or 2}; nodes_given=1; shift 2 ;;
    --nodes=*) nodes=${1#*=}; nodes_given=1; shift ;;
    --dir) dir=${2:?--dir needs a directory}; shift 2 ;;
    --dir=*) dir=${1#*=}; shift ;;
    --force) force=1; shift ;;
    --max-job-count) max_job_count=${2:?--max-job-count needs a number}; shift 2 ;;
    --max-job-count=*) max_job_count=${1#*=}; shift ;;
    --max-array-size) max_array_opt=${2:?--max-array-size needs a number}; shift 2 ;;
    --max-array-size=*) max_array_opt=${1#*=}; shift ;;
    --min-job-age) min_job_age=${2:?--min-job-age needs seconds}; shift 2 ;;
    --min-job-age=*) min_job_age=${1#*=}; shift ;;
    --max-submit-jobs) max_submit_jobs=${2:?--max-submit-jobs needs a number}; shift 2 ;;
    --max-submit-jobs=*) max_submit_jobs=${1#*=}; shift ;;
    -h | --help) show_help ;;
    *) usage ;;
  esac
done
[[ $nodes == 1 || $nodes == 2 ]] || { echo "slurm-local: --nodes must be 1 or 2" >&2; exit 2; }
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
max_array=${DLSWEEP_SLURM_MAX_ARRAY:-1001}
[[ $max_array =~ ^[0-9]+$ ]] || { echo "slurm-local: DLSWEEP_SLURM_MAX_ARRAY must be a number" >&2; exit 2; }
[[ -z $max_array_opt ]] || max_array=$max_array_opt
[[ $max_array =~ ^[0-9]+$ ]] || { echo "slurm-local: --max-array-size must be a number" >&2; exit 2; }
[[ -z $max_job_count || ($max_job_count =~ ^[0-9]+$ && $max_job_count -ge 1) ]] ||
  { echo "slurm-local: --max-job-count must be a number of jobs (1 or more)" >&2; exit 2; }
[[ -z $min_job_age || $min_job_age =~ ^[0-9]+$ ]] || { echo "slurm-local: --min-job-age must be a number of seconds" >&2; exit 2; }
[[ -z $max_submit_jobs || ($max_submit_jobs =~ ^[0-9]+$ && $max_submit_jobs -ge 1) ]] ||
  { echo "slurm-local: --max-submit-jobs must be a number of jobs (1 or more)" >&2; exit 2; }
max_job_count=${max_job_count:-10000}
min_job_age=${min_job_age:-600}

conf=$dir/slurm.conf
export SLURM_CONF=$conf  # for our own sinfo calls only; the caller's environment is untouched
# shellcheck source=lib/slurm-accounting.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/slurm-accounting.sh"

# pid_alive PIDFILE COMM: the pid in PIDFILE is a live process whose name is COMM.
pid_alive() {
  local file=$1 comm=$2 pid stat rest state
  pid=$(cat "$file" 2>/dev/null) || return 1  # the daemon removes it as it exits
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  # /proc/PID/stat: "pid (comm) state ..."; comm may contain spaces, so cut at the last ')'.
  rest=${stat##*) }
  state=${rest%% *}
  [[ $state != Z && $state != X ]] || return 1
  [[ $stat == *"($comm)"* ]]
}

# The user this run acts for: the one behind sudo (the script itself runs as root).
my_uid() { echo "${SUDO_UID:-$(id -u)}"; }
my_name() { echo "${SUDO_USER:-$(id -un 2>/dev/null || id -u)}"; }

# owner_field uid|user|at: from DIR/started_by ("uid=0 user=root at=..."), written by the
# start that found nothing running; for a cluster started before that file existed, the
# directory's owner.
owner_field() {
  local line
  if [[ -s $dir/started_by ]]; then
    line=$(<"$dir/started_by")
    case $1 in
      uid) [[ $line =~ (^| )uid=([0-9]+) ]] && echo "${BASH_REMATCH[2]}" ;;
      user) [[ $line =~ (^| )user=([^ ]+) ]] && echo "${BASH_REMATCH[2]}" ;;
      at) [[ $line =~ (^| )at=([^ ]+) ]] && echo "${BASH_REMATCH[2]}" ;;
    esac
    return 0
  fi
  case $1 in
    uid) stat -c %u "$dir" 2>/dev/null ;;
    user) stat -c %U "$dir" 2>/dev/null ;;
  esac
  return 0
}

# "alice (uid 1000) at 2026-...Z"
owner_text() {
  local at
  at=$(owner_field at)
  echo "$(owner_field user) (uid $(owner_field uid))${at:+ at $at}"
}

# How many of DIR's daemons are alive.
running_daemons() {
  local up=0 f
  pid_alive "$dir/munge/munged.pid" munged && up=$((up + 1))
  pid_alive "$dir/run/slurmctld.pid" slurmctld && up=$((up + 1))
  for f in "$dir"/run/slurmd-*.pid; do
    [[ -e $f ]] && pid_alive "$f" slurmd && up=$((up + 1))
  done
  echo "$up"
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

choose_ports() {
  if [[ -s $dir/ports ]]; then
    port=$(<"$dir/ports")
    return
  fi
  if [[ -n ${DLSWEEP_SLURM_PORT:-} ]]; then
    port=$DLSWEEP_SLURM_PORT
  elif [[ $dir == /tmp/dlsweep-slurm ]]; then
    port=6817
  else
    # A stable guess per directory, moved on until three ports in a row are free.
    port=$((20000 + ($(printf %s "$dir" | cksum | cut -d' ' -f1) % 4000) * 4))
  fi
  local tries=0
  while port_busy "$port" || port_busy $((port + 1)) || port_busy $((port + 2)); do
    port=$((port + 3))
    tries=$((tries + 1))
    [[ $tries -lt 200 ]] || { echo "slurm-local: no free ports found" >&2; exit 1; }
  done
  echo "$port" >"$dir/ports"
}

node_names() { if [[ $nodes == 2 ]]; then echo n1 n2; else echo localhost; fi; }

write_conf() {
  local host
  host=$(hostname -s)
  local nodeline partnodes
  # RealMemory, as every real cluster sets it (Slurm's default is 1 MB): jobs that ask for
  # memory (`mem:`, the --as-job orchestrator's 1 GB) fit, and asking for more is refused
  # as on a real cluster. Memory is not consumed (CR_Core), so jobs do not wait on it.
  local mem_mb=2048
  if [[ $nodes == 2 ]]; then
    nodeline="NodeName=n[1-2] NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((port + 1))-$((port + 2)) CPUs=4 RealMemory=$mem_mb State=UNKNOWN"
    partnodes="n[1-2]"
  else
    nodeline="NodeName=localhost NodeAddr=127.0.0.1 Port=$((port + 1)) CPUs=4 RealMemory=$mem_mb State=UNKNOWN"
    partnodes="localhost"
  fi
  cat >"$conf.tmp" <<EOF
# Written by scripts/slurm-local.sh: a private single-host cluster. Do not edit: re-written
# on every start.
ClusterName=dlsweep
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=10
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_interval=1,bf_interval=1
MailProg=/bin/true
KillWait=5
MinJobAge=$min_job_age
ReturnToService=2
MpiDefault=none
MaxArraySize=$max_array
MaxJobCount=$max_job_count
InactiveLimit=0
$(if [[ -n $max_submit_jobs ]]; then accounting_conf_lines; else echo "AccountingStorageType=accounting_storage/none"; fi)
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
$nodeline
PartitionName=debug Nodes=$partnodes Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$conf.tmp" "$conf"
}

start_munged() {
  if pid_alive "$dir/munge/munged.pid" munged; then return; fi
  install -d -o munge -g munge -m 0755 "$dir/munge"
  runuser -u munge -- /usr/sbin/munged 9>&- --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" --key-file=/etc/munge/munge.key
  local _
  for _ in $(seq 100); do
    [[ -S $dir/munge/munge.socket ]] && pid_alive "$dir/munge/munged.pid" munged && return
    sleep 0.05
  done
  echo "slurm-local: munged did not start; see $dir/munge/munged.log" >&2
  exit 1
}

nodes_ready() {
  local states s
  states=$(sinfo -h -N -o %T 2>/dev/null) || return 1
  [[ -n $states ]] || return 1
  for s in $states; do
    case $s in idle | mixed | allocated | completing) ;; *) return 1 ;; esac
  done
}

do_start() {
  command -v slurmctld >/dev/null || { echo "slurm-local: slurmctld is not installed (apt-get install slurmctld slurmd slurm-client munge)" >&2; exit 3; }
  [[ -r /etc/munge/munge.key ]] || mungekey --create --keyfile=/etc/munge/munge.key
  chown munge:munge /etc/munge/munge.key && chmod 600 /etc/munge/munge.key
  mkdir -p "$dir"/{state,spool,run,log}
  chmod go+x "$dir"  # munged runs as user munge and must reach its socket directory
  exec 9>"$dir/.lock"
  flock 9  # concurrent starts of the same directory wait for each other
  if [[ -s $dir/nodes ]]; then
    local had
    had=$(<"$dir/nodes")
    if [[ $nodes_given == 1 && $had != "$nodes" ]]; then
      echo "slurm-local: $dir holds a $had-node cluster; stop it and remove the directory to change --nodes" >&2
      exit 2
    fi
    nodes=$had
  fi
  echo "$nodes" >"$dir/nodes"
  if [[ $(running_daemons) -gt 0 ]]; then
    # Joining a running cluster (start is idempotent) is fine, but never silently: it may
    # be someone else's, whose `stop` then ends your jobs (and yours theirs).
    local whose=" — not yours"
    [[ $(owner_field uid) == "$(my_uid)" ]] && whose=""
    echo "slurm-local: a cluster is already running in $dir, started by $(owner_text)$whose; using it." >&2
    echo "slurm-local: for a separate cluster of your own, pass another --dir (e.g. --dir /tmp/slurm-$(my_name)); see --help" >&2
  else
    echo "uid=$(my_uid) user=$(my_name) at=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$dir/started_by"
  fi
  # The limits slurmctld was started with: a running controller keeps them until it restarts.
  local limits="MaxJobCount=$max_job_count MaxArraySize=$max_array MinJobAge=$min_job_age MaxSubmitJobs=${max_submit_jobs:-none}"
  if pid_alive "$dir/run/slurmctld.pid" slurmctld && [[ -s $dir/limits ]]; then
    local had_limits
    had_limits=$(<"$dir/limits")
    if [[ $had_limits != "$limits" ]]; then
      echo "slurm-local: the controller in $dir runs with $had_limits; slurmctld reads limits only when it" \
        "starts: stop it first to start it with $limits" >&2
      exit 2
    fi
  fi
  echo "$limits" >"$dir/limits"
  choose_ports
  write_conf
  start_munged
  if [[ -n $max_submit_jobs ]]; then
    start_mariadb
    start_slurmdbd
    add_cluster_and_user
    set_max_submit_jobs "$max_submit_jobs"
  fi
  if ! pid_alive "$dir/run/slurmctld.pid" slurmctld; then
    slurmctld -f "$conf" 9>&-
  fi
  local n
  for n in $(node_names); do
    mkdir -p "$dir/spool/$n"
    if ! pid_alive "$dir/run/slurmd-$n.pid" slurmd; then
      slurmd -f "$conf" -N "$n" 9>&-
    fi
  done
  local _
  for _ in $(seq 300); do
    if nodes_ready; then
      echo "SLURM_CONF=$conf"
      return
    fi
    sleep 0.05
  done
  echo "slurm-local: nodes did not become ready in 15 s; see $dir/log/" >&2
  sinfo -N >&2 || true
  exit 1
}

stop_pid() {
  local file=$1 comm=$2 pid _
  pid_alive "$file" "$comm" || return 0
  pid=$(cat "$file" 2>/dev/null) || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do
    pid_alive "$file" "$comm" || return 0
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null || true
}

# Pids of slurmstepd processes of this cluster (they hold DIR's slurmd log open) that
# outlived their slurmd, e.g. jobs still running when the cluster was stopped.
stray_stepds() {
  local p fd
  for p in /proc/[0-9]*; do
    [[ $(cat "$p/comm" 2>/dev/null) == slurmstepd ]] || continue
    for fd in "$p"/fd/*; do
      if [[ $(readlink "$fd" 2>/dev/null) == "$dir"/* ]]; then
        echo "${p#/proc/}"
        break
      fi
    done
  done
}

# All descendants of the given pids (children first found by walking ppid links).
descendants() {
  local table pid ppid frontier=" $* " found=""
  table=$(ps -e -o pid=,ppid=)
  local changed=1
  while [[ $changed == 1 ]]; do
    changed=0
    while read -r pid ppid; do
      if [[ $frontier == *" $ppid "* && $frontier != *" $pid "* ]]; then
        frontier+="$pid "
        found+="$pid "
        changed=1
      fi
    done <<<"$table"
  done
  echo "$found"
}

do_stop() {
  [[ -d $dir ]] || return 0
  local owner
  owner=$(owner_field uid)
  if [[ -n $owner && $owner != "$(my_uid)" && $force != 1 ]]; then
    echo "slurm-local: not stopping the cluster in $dir: $(owner_text) started it, not you (uid $(my_uid)), and" \
      "stopping it would end their jobs. Pass --force to stop it anyway; for a cluster of your own, use --dir." >&2
    exit 1
  fi
  local f
  stop_pid "$dir/run/slurmctld.pid" slurmctld
  for f in "$dir"/run/slurmd-*.pid; do [[ -e $f ]] && stop_pid "$f" slurmd; done
  local steps kids
  steps=$(stray_stepds)
  if [[ -n $steps ]]; then
    # shellcheck disable=SC2086  # pid lists: word splitting wanted
    kids=$(descendants $steps)
    # shellcheck disable=SC2086
    kill -KILL $steps $kids 2>/dev/null || true
  fi
  stop_accounting
  stop_pid "$dir/munge/munged.pid" munged
  echo "slurm-local: stopped the cluster in $dir"
}

do_status() {
  local up=0 f
  pid_alive "$dir/munge/munged.pid" munged && echo "munged    running (pid $(<"$dir/munge/munged.pid"))" && up=$((up + 1))
  pid_alive "$dir/run/slurmctld.pid" slurmctld && echo "slurmctld running (pid $(<"$dir/run/slurmctld.pid"))" && up=$((up + 1))
  pid_alive "$dir/run/slurmdbd.pid" slurmdbd && echo "slurmdbd  running (pid $(<"$dir/run/slurmdbd.pid"))" && up=$((up + 1))
  pid_alive "$dir/run/mariadb.pid" mariadbd && echo "mariadbd  running (pid $(<"$dir/run/mariadb.pid"))" && up=$((up + 1))
  for f in "$dir"/run/slurmd-*.pid; do
    [[ -e $f ]] && pid_alive "$f" slurmd && echo "slurmd    running (pid $(<"$f"), $(basename "$f" .pid))" && up=$((up + 1))
  done
  if [[ $up -eq 0 ]]; then
    echo "slurm-local: not running ($dir)"
    return 1
  fi
  echo "started by $(owner_text)"
  echo "SLURM_CONF=$conf"
  sinfo 2>/dev/null || true
}

case $cmd in
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  *) usage ;;
esac
