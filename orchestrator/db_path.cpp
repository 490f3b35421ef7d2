#include "orchestrator/db_path.hpp"

#include <filesystem>

#include <fmt/format.h>

namespace dlsweep::orch {

namespace fs = std::filesystem;

Status check_db_path(const std::string& db, const std::string& where) {
  if (db.empty()) return fail_as(ErrorKind::bad_input, "no database path given", where, "pass `--db PATH`");
  std::error_code ec;
  const fs::path p(db);
  const auto st = fs::status(p, ec);
  if (fs::is_directory(st))
    return fail_as(ErrorKind::bad_input, fmt::format("'{}' is a directory, not a database file", db), where,
                   fmt::format("name a file in it, e.g. `--db {}`", (p / "dlsweep.db").string()));
  if (fs::exists(st) && !fs::is_regular_file(st))
    return fail_as(ErrorKind::bad_input, fmt::format("'{}' is not a regular file", db), where,
                   "pass `--db PATH` naming an SQLite file (dlsweep creates it on `submit`)");
  const fs::path parent = p.parent_path();
  if (!parent.empty()) {
    const auto ps = fs::status(parent, ec);
    if (!fs::exists(ps))
      return fail_as(ErrorKind::bad_input, fmt::format("directory '{}' does not exist", parent.string()), where,
                     fmt::format("create it (`mkdir -p {}`) or pass `--db PATH` in an existing directory",
                                 parent.string()));
    if (!fs::is_directory(ps))
      return fail_as(ErrorKind::bad_input, fmt::format("'{}' is not a directory", parent.string()), where,
                     "pass `--db PATH` in an existing directory");
  }
  return {};
}

}  // namespace dlsweep::orch
