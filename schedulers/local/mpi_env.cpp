// mpi_env.cpp — whether the local backend picks Open MPI's point-to-point layer (mpi_env.hpp).
#include "schedulers/local/mpi_env.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace dlsweep::sched {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool more_than_one(const char* v) {
  if (!v || !*v) return false;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return end != v && n > 1;
}

}  // namespace

bool mca_text_sets_pml(std::string_view text) {
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (const auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    const auto eq = line.find('=');
    // `pml = ^ucx` (Debian's own file) only excludes: Open MPI still picks, so ob1 is no override.
    if (eq != std::string_view::npos && trim(line.substr(0, eq)) == "pml" && !trim(line.substr(eq + 1)).starts_with('^'))
      return true;
  }
  return false;
}

bool local_sets_ompi_pml(const EnvLookup& env, const FileReader& read) {
  if (const char* v = env("OMPI_MCA_pml"); v) return false;
  if (more_than_one(env("SLURM_JOB_NUM_NODES")) || more_than_one(env("SLURM_NNODES"))) return false;
  std::vector<std::string> files;
  if (const char* listed = env("OMPI_MCA_mca_base_param_files"); listed && *listed) {
    std::stringstream ss(listed);
    for (std::string f; std::getline(ss, f, ':');)
      if (!f.empty()) files.push_back(f);
  } else {
    if (const char* home = env("HOME"); home && *home) files.push_back(std::string(home) + "/.openmpi/mca-params.conf");
    files.push_back("/etc/openmpi/openmpi-mca-params.conf");
  }
  for (const auto& f : files)
    if (auto text = read(f); text && mca_text_sets_pml(*text)) return false;
  return true;
}

bool local_sets_ompi_pml() {
  return local_sets_ompi_pml([](const char* name) { return std::getenv(name); },
                             [](const std::string& path) -> std::optional<std::string> {
                               std::ifstream in(path);
                               if (!in) return std::nullopt;
                               std::stringstream ss;
                               ss << in.rdbuf();
                               return ss.str();
                             });
}

}  // namespace dlsweep::sched
