// launch.cpp — launcher command lines and the rank shim; see launch.hpp.
#include "schedulers/launch.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "common/shell_quote.hpp"

namespace dlsweep::sched {

namespace {

// Every variable is prefixed dlsweep_ so that nothing of the user's environment is shadowed.
constexpr const char* kShim = R"SHIM(# dlsweep launch shim: bash -c SHIM dlsweep-launch MODE [ARGS] PROGRAM [ARGS...]
dlsweep_mode=$1
shift
dlsweep_wait() {  # waits for $dlsweep_child to end (wait returns early on a trapped signal)
  while :; do
    wait "$dlsweep_child"
    dlsweep_rc=$?
    kill -0 "$dlsweep_child" 2>/dev/null || break
  done
}
case $dlsweep_mode in
rank-mpirun)
  export RANK=${OMPI_COMM_WORLD_RANK:-0} LOCAL_RANK=${OMPI_COMM_WORLD_LOCAL_RANK:-0}
  export WORLD_SIZE=${OMPI_COMM_WORLD_SIZE:-1} LOCAL_WORLD_SIZE=${OMPI_COMM_WORLD_LOCAL_SIZE:-1}
  exec "$@"
  ;;
rank-srun)
  export RANK=${SLURM_PROCID:-0} LOCAL_RANK=${SLURM_LOCALID:-0} WORLD_SIZE=${SLURM_NTASKS:-1}
  # SLURM_STEP_TASKS_PER_NODE reads like "2(x3),1": tasks on each node of the step.
  LOCAL_WORLD_SIZE=1
  dlsweep_first=0
  IFS=, read -ra dlsweep_parts <<<"${SLURM_STEP_TASKS_PER_NODE:-1}"
  for dlsweep_p in "${dlsweep_parts[@]}"; do
    dlsweep_repeat=1
    if [[ $dlsweep_p == *"(x"* ]]; then dlsweep_repeat=${dlsweep_p#*(x}; dlsweep_repeat=${dlsweep_repeat%)}; fi
    if (( ${SLURM_NODEID:-0} < dlsweep_first + dlsweep_repeat )); then LOCAL_WORLD_SIZE=${dlsweep_p%%(*}; break; fi
    dlsweep_first=$((dlsweep_first + dlsweep_repeat))
  done
  export LOCAL_WORLD_SIZE
  exec "$@"
  ;;
torchrun-node)
  dlsweep_nnodes=$1 dlsweep_nproc=$2
  shift 2
  dlsweep_node_rank=0
  if ((dlsweep_nnodes > 1)); then dlsweep_node_rank=${SLURM_NODEID:-0}; fi
  dlsweep_dir=${DLSWEEP_TRIAL_DIR:-.}/.launch
  mkdir -p "$dlsweep_dir"
  dlsweep_signal= dlsweep_child=
  # Under srun, slurmstepd signals every process of the step: the workers get USR2/TERM
  # themselves. This trap remembers the signal (for the exit status below) and passes TERM
  # on where only this shim got it (the local backend's cancel signals the whole group).
  dlsweep_forward() {
    dlsweep_signal=$1
    if [[ -n $dlsweep_child ]]; then pkill "-$1" -P "$dlsweep_child" 2>/dev/null; fi
  }
  trap 'dlsweep_forward USR2' USR2
  trap 'dlsweep_forward TERM' TERM
  # --redirects 1 --tee 1: workers' stdout still reaches ours (also under .launch/torchrun);
  # torch 1.13 on Python 3.11 (Debian 12) cannot parse the default "0" of either option.
  # Under srun every process of the step gets the signal: torchrun must ignore USR2 (its
  # workers inherit that; a program that handles USR2 installs its own handler).
  (
    trap '' USR2
    exec torchrun --nnodes="$dlsweep_nnodes" --node_rank="$dlsweep_node_rank" --nproc_per_node="$dlsweep_nproc" \
      --master_addr="$MASTER_ADDR" --master_port="$MASTER_PORT" --redirects 1 --tee 1 \
      --log_dir "$dlsweep_dir/torchrun-$dlsweep_node_rank" --no_python \
      bash -c "$BASH_EXECUTION_STRING" dlsweep-launch torchrun-worker "$@"
  ) &
  dlsweep_child=$!
  if [[ -n $dlsweep_signal ]]; then dlsweep_forward "$dlsweep_signal"; fi
  dlsweep_wait
  if ((dlsweep_rc != 0)); then
    # torchrun calls any failed worker exit 1: the node's status is its workers' when every
    # one of them recorded its own (a pruned trial's workers exit 75, a diverged one's 3).
    # The first worker code that is neither 0 nor 75 wins, else 75 if any stopped so.
    dlsweep_all=1 dlsweep_worst=0
    for ((dlsweep_r = 0; dlsweep_r < dlsweep_nproc; dlsweep_r++)); do
      dlsweep_f=$dlsweep_dir/rank-$((dlsweep_node_rank * dlsweep_nproc + dlsweep_r)).rc
      if [[ ! -f $dlsweep_f ]]; then dlsweep_all=0; break; fi
      dlsweep_c=$(<"$dlsweep_f")
      if [[ ! $dlsweep_c =~ ^[0-9]+$ ]]; then dlsweep_all=0; break; fi
      if ((dlsweep_c != 0 && dlsweep_c != 75 && (dlsweep_worst == 0 || dlsweep_worst == 75))); then
        dlsweep_worst=$dlsweep_c
      elif ((dlsweep_c == 75 && dlsweep_worst == 0)); then
        dlsweep_worst=75
      fi
    done
    if ((dlsweep_all && dlsweep_worst != 0)); then dlsweep_rc=$dlsweep_worst; fi
  fi
  exit "$dlsweep_rc"
  ;;
torchrun-worker)
  dlsweep_f=${DLSWEEP_TRIAL_DIR:-.}/.launch/rank-${RANK:-0}.rc
  rm -f "$dlsweep_f"
  dlsweep_child=
  # Started with USR2 ignored (inherited from torchrun): only TERM can be passed on here.
  trap 'if [[ -n $dlsweep_child ]]; then kill -TERM "$dlsweep_child" 2>/dev/null; fi' TERM
  "$@" &
  dlsweep_child=$!
  dlsweep_wait
  echo "$dlsweep_rc" >"$dlsweep_f"
  exit "$dlsweep_rc"
  ;;
*)
  echo "dlsweep-launch: unknown mode '$dlsweep_mode'" >&2
  exit 70
  ;;
esac
)SHIM";

std::vector<std::string> shim_argv(std::string_view mode) {
  return {"bash", "-c", launch_shim(), "dlsweep-launch", std::string(mode)};
}

}  // namespace

const std::string& launch_shim() {
  static const std::string shim = kShim;
  return shim;
}

bool valid_launcher(std::string_view launcher) {
  return launcher.empty() || std::find(std::begin(kLaunchers), std::end(kLaunchers), launcher) != std::end(kLaunchers);
}

bool local_runs_mpirun(int ranks, std::string_view launcher) {
  return launcher == "mpirun" || (ranks > 1 && launcher.empty());
}

Result<std::vector<std::string>> local_launch_argv(const std::vector<std::string>& argv, int ranks,
                                                   std::string_view launcher, const std::string& mpirun,
                                                   bool as_root) {
  if (!valid_launcher(launcher))
    return fail(fmt::format("unknown launcher '{}'", launcher), "trial.launcher", "use mpirun, srun or torchrun");
  if (launcher == "srun")
    return fail("srun starts ranks inside a Slurm allocation; the local backend has none", "trial.launcher",
                "use launcher: mpirun or torchrun on the local backend, or backend.kind: slurm");
  std::vector<std::string> out;
  if (launcher == "torchrun") {
    out = shim_argv("torchrun-node");
    out.push_back("1");
    out.push_back(std::to_string(std::max(ranks, 1)));
  } else if (local_runs_mpirun(ranks, launcher)) {
    out = {mpirun, "-np", std::to_string(std::max(ranks, 1)), "--oversubscribe"};
    if (as_root) out.push_back("--allow-run-as-root");
    if (launcher == "mpirun") {
      auto shim = shim_argv("rank-mpirun");
      out.insert(out.end(), shim.begin(), shim.end());
    }
  } else {
    return argv;
  }
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::string slurm_launch_prefix(int ranks, int nodes, std::string_view launcher, const SrunOptions& srun) {
  auto srun_words = [&](int ntasks, bool mpi) {
    std::string s = "srun";
    // dlsweep-train needs PMIx unless told otherwise; torch.distributed needs no PMI at all.
    const std::string plugin = !srun.mpi.empty() ? srun.mpi : launcher.empty() ? "pmix" : "none";
    if (mpi) s += " --mpi=" + shell_quote(plugin);
    s += fmt::format(" --ntasks={}", ntasks);
    if (!srun.gpu_bind.empty()) s += " --gpu-bind=" + shell_quote(srun.gpu_bind);
    if (!srun.cpu_bind.empty()) s += " --cpu-bind=" + shell_quote(srun.cpu_bind);
    return s;
  };
  auto shim = [](std::string_view mode) {
    return fmt::format("bash -c {} dlsweep-launch {}", shell_quote(launch_shim()), mode);
  };
  if (launcher == kLauncherAllocationOnly) return "";
  if (launcher.empty()) return ranks > 1 ? srun_words(ranks, true) : "";
  if (launcher == "srun") return srun_words(ranks, true) + " " + shim("rank-srun");
  if (launcher == "mpirun") return fmt::format("mpirun -np {} ", ranks) + shim("rank-mpirun");
  // torchrun: one agent per node.
  const int n = std::max(nodes, 1);
  return srun_words(n, false) + " --ntasks-per-node=1 " + shim("torchrun-node") +
         fmt::format(" {} {}", n, std::max(ranks, 1) / n);
}

int pick_free_port(const std::vector<int>& taken) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;  // the kernel picks one nothing is bound to
    socklen_t len = sizeof a;
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
    ::close(fd);
    if (port == 0) return 0;
    if (std::find(taken.begin(), taken.end(), port) == taken.end()) return port;
  }
  return 0;
}

}  // namespace dlsweep::sched
