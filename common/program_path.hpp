// program_path.hpp — finding programs: on a PATH list (as execvp does) and this process's
// own executable (to find what was installed beside it: dlsweep-train, the batch template).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dlsweep {

/// `name` looked up on `path_list` (colon-separated; an empty entry is the current
/// directory): the first regular, executable file. A name with a '/' is returned as is.
std::optional<std::string> find_on_path(const std::string& name, const std::string& path_list);

/// The absolute path of the running executable (/proc/self/exe), or nullopt; under the
/// release tarball's launcher (the executable is glibc's loader), the launcher script.
std::optional<std::filesystem::path> self_executable();

/// The environment of this process with `overrides` replacing (or adding) their keys, as
/// "KEY=VALUE" strings: what a child started with those overrides sees.
std::vector<std::string> merged_environment(const std::map<std::string, std::string>& overrides,
                                            const std::vector<std::string>& unset = {});

/// A null-terminated array of pointers into `v` (argv/envp for exec); valid while `v` lives.
std::vector<char*> c_strings(std::vector<std::string>& v);

}  // namespace dlsweep
