// shared_runs_dir.cpp — see shared_runs_dir.hpp.
#include "schedulers/slurm/shared_runs_dir.hpp"

#include <sys/vfs.h>
#include <unistd.h>

#include <sstream>

#include <fmt/format.h>

#include "schedulers/slurm/command.hpp"

namespace fs = std::filesystem;

namespace dlsweep::sched::slurm {

namespace {

constexpr long kTmpfsMagic = 0x01021994;
constexpr long kRamfsMagic = 0x858458f6;

bool under(const fs::path& p, const fs::path& dir) {
  auto d = dir.begin();
  for (auto it = p.begin(); d != dir.end(); ++it, ++d)
    if (it == p.end() || *it != *d) return false;
  return true;
}

bool loopback(const std::string& a) {
  return a == "::1" || a.rfind("127.", 0) == 0 || a == "localhost" || a.rfind("localhost.", 0) == 0;
}

}  // namespace

std::optional<std::string> node_local_reason(const fs::path& path, long fs_magic) {
  for (const char* dir : {"/tmp", "/var/tmp", "/dev/shm", "/run"})
    if (under(path, dir)) return fmt::format("{} is under {}, which every machine has its own of", path.string(), dir);
  if (fs_magic == kTmpfsMagic || fs_magic == kRamfsMagic)
    return fmt::format("{} is on {} (the memory of this machine)", path.string(),
                       fs_magic == kTmpfsMagic ? "tmpfs" : "ramfs");
  return std::nullopt;
}

bool nodes_all_local(const std::string& sinfo_output, const std::set<std::string>& local_names) {
  std::istringstream in(sinfo_output);
  std::string line;
  int nodes = 0;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string addr, host;
    if (!(words >> addr)) continue;
    words >> host;
    ++nodes;
    auto local = [&](const std::string& n) { return !n.empty() && (loopback(n) || local_names.count(n)); };
    if (!local(addr) && !local(host)) return false;
  }
  return nodes > 0;
}

std::set<std::string> this_host_names() {
  std::set<std::string> names = {"localhost"};
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) == 0 && buf[0]) {
    std::string h(buf);
    names.insert(h);
    names.insert(h.substr(0, h.find('.')));
  }
  return names;
}

Status check_runs_dir(const fs::path& runs_dir, const std::string& partition,
                      const std::map<std::string, std::string>& slurm_env) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(runs_dir, ec), ec);
  if (ec) p = runs_dir.lexically_normal();
  // statfs on the nearest existing ancestor (the runs dir may not exist yet).
  long magic = 0;
  for (fs::path q = p; !q.empty(); q = q.parent_path()) {
    struct statfs st {};
    if (statfs(q.c_str(), &st) == 0) {
      magic = static_cast<long>(st.f_type);
      break;
    }
    if (q == q.root_path()) break;
  }
  const auto reason = node_local_reason(p, magic);
  if (!reason) return {};
  std::vector<std::string> argv = {"sinfo", "-h", "-N", "-o", "%o %n"};
  if (!partition.empty()) argv.insert(argv.end(), {"-p", partition});
  auto r = run_command(argv, slurm_env, 30.0);
  if (r && r->exit_code == 0 && nodes_all_local(r->out, this_host_names())) return {};
  return fail(fmt::format("the runs directory must be on a filesystem the compute nodes share: {}; jobs would "
                          "write their trial files on their node, where dlsweep cannot read them",
                          *reason),
              "runs_dir",
              "set runs_dir in the study (or run from a directory) on a shared filesystem, e.g. "
              "runs_dir: /scratch/<you>/dlsweep-runs, or a directory under your home");
}

}  // namespace dlsweep::sched::slurm
