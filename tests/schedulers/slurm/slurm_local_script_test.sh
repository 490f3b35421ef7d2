#!/usr/bin/env bash
# ctest `slurm_local_script`: scripts/slurm-local.sh's help and its care with clusters other
# users started. One directory is one cluster, shared by whoever names it: `start` of a
# running one says so and whose it is (and that --dir picks another), and `stop` of one
# another uid started is refused unless --force. The refusal is checked everywhere; the
# start/stop of a real cluster where Slurm is installed and we are root (else that part is
# skipped, saying so). "Another user" is played with SUDO_UID/SUDO_USER, as sudo sets them.
set -euo pipefail
script=$(cd "$(dirname "$0")/../../.." && pwd)/scripts/slurm-local.sh
unset SUDO_UID SUDO_USER DLSWEEP_SLURM_DIR
fails=0
check() {  # check WHAT CONDITION...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
has() { [[ $1 == *"$2"* ]]; }

# --help: every option, --dir and its default above all, on stdout, exit 0.
out=$("$script" --help) && rc=0 || rc=$?
check "--help exits 0" test "$rc" -eq 0
for word in "--dir DIR" "--force" "--nodes" "DLSWEEP_SLURM_DIR" "/tmp/dlsweep-slurm" "separate cluster" \
  "--max-job-count N" "MaxJobCount" "--max-array-size N" "MaxArraySize" "--min-job-age S" "MaxSubmitJobs"; do
  check "--help mentions $word" has "$out" "$word"
done
out=$("$script" start --help) && rc=0 || rc=$?
check "start --help is the help too" has "$out" "--dir DIR"
err=$("$script" start --max-job-count lots 2>&1 >/dev/null) && rc=0 || rc=$?
check "a limit that is not a number: exit 2, saying which" test "$rc" -eq 2 -a -n "$(has "$err" "--max-job-count" && echo y)"
err=$("$script" 2>&1 >/dev/null) && rc=0 || rc=$?
check "no command: usage, exit 2, pointing at --help" test "$rc" -eq 2 -a -n "$(has "$err" "--help" && echo y)"

# stop of a cluster another uid started: refused (nothing touched), unless --force.
fake=$(mktemp -d /tmp/dlsweep-slurm-t-XXXXXX)
trap 'rm -rf "$fake"' EXIT
echo "uid=4242 user=alice at=2026-01-01T00:00:00Z" >"$fake/started_by"
err=$("$script" stop --dir "$fake" 2>&1) && rc=0 || rc=$?
check "stop of alice's cluster is refused" test "$rc" -eq 1
check "the refusal names the owner" has "$err" "alice (uid 4242)"
check "the refusal names --force and --dir" has "$err" "--force"
out=$(SUDO_UID=4242 SUDO_USER=alice "$script" stop --dir "$fake" 2>&1) && rc=0 || rc=$?
check "alice herself (via sudo) may stop it" test "$rc" -eq 0
out=$("$script" stop --dir "$fake" --force 2>&1) && rc=0 || rc=$?
check "stop --force stops it" test "$rc" -eq 0

why=""
for p in /usr/sbin/slurmctld /usr/sbin/slurmd /usr/sbin/munged /usr/bin/sinfo; do
  [[ -x $p ]] || why="$p is not installed"
done
[[ $(id -u) == 0 ]] || why="starting a local Slurm cluster needs root"
if [[ -n $why ]]; then
  echo "skipped the real cluster part: $why"
else
  dir=$(mktemp -d /tmp/dlsweep-slurm-t-XXXXXX)
  trap '"$script" stop --dir "$dir" --force >/dev/null 2>&1 || true; rm -rf "$fake" "$dir"' EXIT
  out=$("$script" start --dir "$dir" 2>"$dir.err") && rc=0 || rc=$?
  err=$(<"$dir.err")
  check "start of a new cluster" test "$rc" -eq 0
  check "it prints SLURM_CONF" has "$out" "SLURM_CONF=$dir/slurm.conf"
  check "a new cluster is started silently" test -z "$err"
  check "it records who started it" has "$(<"$dir/started_by")" "uid=0 user=$(id -un)"

  # alice runs start on the same directory (the default one, say): she is told.
  out=$(SUDO_UID=4242 SUDO_USER=alice "$script" start --dir "$dir" 2>"$dir.err") && rc=0 || rc=$?
  err=$(<"$dir.err")
  check "start of a running cluster still works (idempotent)" test "$rc" -eq 0
  check "... and says it is already running, whose, not hers" \
    has "$err" "already running in $dir, started by $(id -un) (uid 0)"
  check "... not hers" has "$err" "not yours"
  check "... and that --dir picks another" has "$err" "--dir /tmp/slurm-alice"
  check "the owner is still the one who started it" has "$(<"$dir/started_by")" "uid=0"
  err=$("$script" start --dir "$dir" 2>&1 >/dev/null) && rc=0 || rc=$?
  check "its owner's own second start: 'already running' without 'not yours'" \
    test -z "$(has "$err" "not yours" && echo y)" -a -n "$(has "$err" "already running" && echo y)"
  out=$("$script" status --dir "$dir" 2>&1) && rc=0 || rc=$?
  check "status says who started it" has "$out" "started by $(id -un) (uid 0)"

  err=$(SUDO_UID=4242 SUDO_USER=alice "$script" stop --dir "$dir" 2>&1) && rc=0 || rc=$?
  check "alice's stop is refused" test "$rc" -eq 1
  "$script" status --dir "$dir" >/dev/null 2>&1 && rc=0 || rc=$?
  check "... and the cluster still runs" test "$rc" -eq 0
  "$script" stop --dir "$dir" >/dev/null 2>&1 && rc=0 || rc=$?
  check "its owner stops it" test "$rc" -eq 0
  "$script" status --dir "$dir" >/dev/null 2>&1 && rc=0 || rc=$?
  check "... and it is stopped" test "$rc" -eq 1
  rm -f "$dir.err"

  # A site's limits (issue 38): written into slurm.conf, in force in slurmctld; a start that
  # changes them while the controller runs is refused (slurmctld reads them only at start).
  out=$("$script" start --dir "$dir" --max-job-count 6 --max-array-size 8 --min-job-age 2 2>&1) && rc=0 || rc=$?
  check "start with site limits" test "$rc" -eq 0
  conf=$(SLURM_CONF=$dir/slurm.conf scontrol show config 2>&1)
  check "slurmctld runs with MaxJobCount 6" has "$conf" "MaxJobCount             = 6"
  check "... MaxArraySize 8" has "$conf" "MaxArraySize            = 8"
  check "... MinJobAge 2" has "$conf" "MinJobAge               = 2 sec"
  err=$("$script" start --dir "$dir" --max-job-count 7 2>&1 >/dev/null) && rc=0 || rc=$?
  check "other limits while it runs: refused, exit 2" test "$rc" -eq 2
  check "... saying to stop it first" has "$err" "stop it first"
  "$script" start --dir "$dir" --max-job-count 6 --max-array-size 8 --min-job-age 2 >/dev/null 2>&1 && rc=0 || rc=$?
  check "the same limits again: fine (idempotent)" test "$rc" -eq 0
  "$script" stop --dir "$dir" >/dev/null 2>&1 || true
  "$script" start --dir "$dir" >/dev/null 2>&1 && rc=0 || rc=$?
  check "after a stop, a start without limits has the defaults" has "$(<"$dir/slurm.conf")" "MaxJobCount=10000"
  "$script" stop --dir "$dir" >/dev/null 2>&1 || true
fi
[[ $fails -eq 0 ]] || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
