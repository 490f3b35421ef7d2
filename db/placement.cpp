// placement.cpp — see placement.hpp.
#include "db/placement.hpp"

#include <cstdlib>

#include <fmt/format.h>

namespace dlsweep::db {

namespace fs = std::filesystem;

Result<Placement> choose_placement(const FsKind& kind, std::string_view env) {
  Placement p;
  p.fs = kind;
  if (env.empty() || env == "auto") {
    p.mode = kind.shared ? DbMode::snapshot : DbMode::direct;
    return p;
  }
  p.forced = true;
  if (env == "snapshot") p.mode = DbMode::snapshot;
  else if (env == "direct") p.mode = DbMode::direct;
  else
    return fail_as(ErrorKind::bad_input, fmt::format("DLSWEEP_DB_MODE is '{}'", env), "DLSWEEP_DB_MODE",
                   "set it to auto (the default: by the filesystem of --db), snapshot or direct, or unset it");
  return p;
}

std::uint64_t path_hash(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

fs::path live_path_for(const fs::path& db, const fs::path& base, unsigned uid) {
  return base / fmt::format("dlsweep-{}", uid) /
         fmt::format("{:016x}-{}", path_hash(db.lexically_normal().string()), db.filename().string());
}

std::string placement_note(const Placement& p, const std::string& db, const std::string& live) {
  const std::string where = p.forced ? fmt::format("DLSWEEP_DB_MODE={}", p.mode == DbMode::snapshot ? "snapshot" : "direct")
                                     : fmt::format("{} is on {}, a filesystem other hosts share", db, p.fs.name);
  if (p.mode == DbMode::direct) {
    if (!p.fs.shared) return {};
    return fmt::format("warning: {}, opened directly (DLSWEEP_DB_MODE=direct): WAL and locks are not safe across "
                       "hosts there; read it only from this host while a sweep runs",
                       fmt::format("{} is on {}", db, p.fs.name));
  }
  if (live.empty())
    return fmt::format("note: {}: reading the snapshot the orchestrator publishes there (at most {:g} s behind)", where,
                       kPublishIntervalS);
  return fmt::format("note: {}: the orchestrator writes its live copy {} on this node and publishes {} from it "
                     "(at most every {:g} s), which readers on any host open",
                     where, live, db, kPublishIntervalS);
}

Result<Placement> placement_of(const fs::path& db) {
  auto kind = probe_fs(db);
  if (!kind) return std::unexpected(kind.error());
  const char* env = std::getenv("DLSWEEP_DB_MODE");
  return choose_placement(*kind, env ? env : "");
}

fs::path live_base_dir() {
  for (const char* var : {"DLSWEEP_DB_LIVE_DIR", "TMPDIR"})
    if (const char* v = std::getenv(var); v && *v) return v;
  return "/tmp";
}

}  // namespace dlsweep::db
