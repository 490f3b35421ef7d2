// temp_dir.hpp — the one temporary directory of the tests: unique (mkdtemp), under the system
// temp dir, removed with everything in it at scope end. Every test folder uses this class (its
// support header may name it with a using-declaration); a folder's own prefix is an argument.
#pragma once

#include <stdlib.h>

#include <cstddef>
#include <filesystem>
#include <iterator>
#include <stdexcept>
#include <string>

namespace test_support {

/// A short base for directories whose paths must stay short (a local Slurm cluster's munge
/// socket path must stay under 108 bytes), whatever $TMPDIR says.
inline const std::filesystem::path kShortTmp{"/tmp"};

class TempDir {
 public:
  /// `base`: where (default the system temp dir; Slurm's tests want the short /tmp, since
  /// their cluster's socket paths must stay short).
  explicit TempDir(const std::string& prefix = "dlsweep-test",
                   const std::filesystem::path& base = std::filesystem::temp_directory_path()) {
    std::string tmpl = (base / (prefix + "-XXXXXX")).string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  /// How many entries the directory holds now (not recursive).
  std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(path_), {}));
  }

 private:
  std::filesystem::path path_;
};

}  // namespace test_support
