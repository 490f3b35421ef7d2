# shellcheck shell=bash disable=SC2154  # $dir, $port, $conf: set by slurm-local.sh, which sources this
# slurm-accounting.sh — sourced by scripts/slurm-local.sh for `start --max-submit-jobs N`:
# per-user submit limits (MaxSubmitJobs) live in Slurm's accounting database, so the cluster
# gets what a real site runs for them: a private MariaDB server and slurmdbd, both in DIR
# (datadir DIR/mariadb, sockets and pid files in DIR/run, logs in DIR/log), the cluster, an
# account and the caller's user with MaxSubmitJobs=N on every association of theirs, and
# slurmctld enforcing it (AccountingStorageEnforce=associations,limits,qos). slurmctld then
# refuses the job past N itself ("Job violates accounting/QOS policy (job submit limit, ...)",
# reason AssocMaxSubmitJobLimit), as on a site.
#
# Uses from slurm-local.sh: $dir, $port (slurmdbd listens on port+3), pid_alive, stop_pid.
# Packages: mariadb-server-core and mariadb-client-core (mariadbd, mariadb-install-db and
# my_print_defaults; no system service), slurmdbd (scripts/install-deps.sh). MariaDB runs with
# --skip-grant-tables on 127.0.0.1 and a port of its own: nothing but this cluster uses it.

acct_db_port() { echo $((port + 4)); }

# The slurm.conf lines that send accounting to this cluster's slurmdbd (AccountingStoragePass:
# the munge socket of the persistent connection, this cluster's private munged).
accounting_conf_lines() {
  cat <<EOF
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$((port + 3))
AccountingStorageEnforce=associations,limits,qos
AccountingStoragePass=$dir/munge/munge.socket
EOF
}

start_mariadb() {
  pid_alive "$dir/run/mariadb.pid" mariadbd && return
  command -v mariadbd >/dev/null || { echo "slurm-local: --max-submit-jobs needs mariadb-server-core, mariadb-client-core and slurmdbd (scripts/install-deps.sh installs them)" >&2; exit 3; }
  if [[ ! -d $dir/mariadb/mysql ]]; then
    mkdir -p "$dir/mariadb"
    mariadb-install-db --no-defaults --datadir="$dir/mariadb" --user="$(id -un)" --auth-root-authentication-method=normal \
      --skip-test-db >"$dir/log/mariadb-install.log" 2>&1 ||
      { echo "slurm-local: mariadb-install-db failed; see $dir/log/mariadb-install.log" >&2; exit 1; }
  fi
  mariadbd --no-defaults --datadir="$dir/mariadb" --socket="$dir/run/mariadb.sock" --port="$(acct_db_port)" \
    --bind-address=127.0.0.1 --user="$(id -un)" --pid-file="$dir/run/mariadb.pid" --log-error="$dir/log/mariadb.log" \
    --skip-grant-tables --skip-log-bin --innodb-buffer-pool-size=32M 9>&- </dev/null >/dev/null 2>&1 &
  local _
  for _ in $(seq 300); do
    [[ -S $dir/run/mariadb.sock ]] && pid_alive "$dir/run/mariadb.pid" mariadbd && return
    sleep 0.1
  done
  echo "slurm-local: MariaDB did not start in 30 s; see $dir/log/mariadb.log" >&2
  exit 1
}

write_slurmdbd_conf() {
  # slurmdbd reads slurmdbd.conf beside slurm.conf; it must be the SlurmUser's and mode 600.
  cat >"$dir/slurmdbd.conf.tmp" <<EOF
# Written by scripts/slurm-local.sh (--max-submit-jobs): this cluster's accounting daemon.
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$((port + 3))
SlurmUser=$(id -un)
PidFile=$dir/run/slurmdbd.pid
LogFile=$dir/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$(acct_db_port)
StorageUser=$(id -un)
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$dir/slurmdbd.conf.tmp"
  mv "$dir/slurmdbd.conf.tmp" "$dir/slurmdbd.conf"
}

start_slurmdbd() {
  pid_alive "$dir/run/slurmdbd.pid" slurmdbd && return
  write_slurmdbd_conf
  SLURM_CONF=$conf slurmdbd 9>&-
  local _
  for _ in $(seq 300); do
    sacctmgr -n -P show cluster >/dev/null 2>&1 && return
    sleep 0.1
  done
  echo "slurm-local: slurmdbd did not answer in 30 s; see $dir/log/slurmdbd.log" >&2
  exit 1
}

# Before slurmctld starts (it registers with the cluster's record): the cluster, an account,
# the user. After: the limit on every association of the user.
add_cluster_and_user() {
  local me
  me=$(id -un)
  sacctmgr -n -P show cluster format=cluster | grep -qx dlsweep || sacctmgr -i add cluster dlsweep >/dev/null
  sacctmgr -n -P show account format=account | grep -qx sweep || sacctmgr -i add account sweep Cluster=dlsweep >/dev/null
  sacctmgr -n -P show user format=user | grep -qx "$me" ||
    sacctmgr -i add user "$me" Account=sweep DefaultAccount=sweep >/dev/null
}

set_max_submit_jobs() {
  sacctmgr -i modify user where name="$(id -un)" set MaxSubmitJobs="$1" >/dev/null ||
    { echo "slurm-local: sacctmgr could not set MaxSubmitJobs; see $dir/log/slurmdbd.log" >&2; exit 1; }
}

stop_accounting() {
  stop_pid "$dir/run/slurmdbd.pid" slurmdbd
  stop_pid "$dir/run/mariadb.pid" mariadbd
}
