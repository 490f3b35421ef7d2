#include "common/program_path.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

extern char** environ;

namespace dlsweep {

std::optional<std::string> find_on_path(const std::string& name, const std::string& path_list) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) return name;
  std::size_t start = 0;
  while (start <= path_list.size()) {
    std::size_t end = path_list.find(':', start);
    if (end == std::string::npos) end = path_list.size();
    std::string_view dir = std::string_view(path_list).substr(start, end - start);
    if (dir.empty()) dir = ".";  // an empty PATH entry means the current directory
    std::string candidate;
    candidate.reserve(dir.size() + 1 + name.size());
    candidate.append(dir).append(1, '/').append(name);
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

std::optional<std::filesystem::path> self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  // The release tarball's bin/dlsweep is a launcher script that runs the binary under the
  // glibc loader it bundles (packaging/launcher.sh): /proc/self/exe is then that loader, and
  // the command to run again and to find share/dlsweep and dlsweep-train beside is the
  // launcher, which names itself in DLSWEEP_LAUNCHER. Any other executable ignores it.
  if (ec || p.empty() || p.filename().string().starts_with("ld-linux"))
    if (const char* launcher = std::getenv("DLSWEEP_LAUNCHER"); launcher && *launcher == '/')
      return std::filesystem::path(launcher);
  if (ec || p.empty()) return std::nullopt;
  return p;
}

std::vector<std::string> merged_environment(const std::map<std::string, std::string>& overrides,
                                            const std::vector<std::string>& unset) {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string_view::npos) {
      const std::string name(kv.substr(0, eq));
      if (overrides.contains(name) || std::find(unset.begin(), unset.end(), name) != unset.end()) continue;
    }
    out.emplace_back(kv);
  }
  for (const auto& [k, v] : overrides) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace dlsweep
