// placement.hpp — where a dlsweep database lives and how it is opened, from the filesystem
// of `--db` (fs_kind.hpp) and DLSWEEP_DB_MODE.
//
//  - direct: the file at --db is the database, in WAL mode (a local disk: today's
//    behaviour, readers and the writer share the kernel's locks and WAL's shared memory).
//  - snapshot: --db is on a filesystem other hosts may open (NFS, Lustre, GPFS, FUSE, ...).
//    The writer works on a live copy on its own node's disk (live_path_for) and publishes
//    the file at --db as a whole, atomically (snapshot.hpp); readers open that file
//    read-only as immutable: no locks, no -wal/-shm, never an error for a lock.
//
// DLSWEEP_DB_MODE=auto (default) | snapshot | direct forces either; DLSWEEP_DB_LIVE_DIR sets
// where live copies go (default $TMPDIR, else /tmp; the copy is <dir>/dlsweep-<uid>/...).
// Everything here but placement_of/live_base_dir is pure.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "common/result.hpp"
#include "db/fs_kind.hpp"

namespace dlsweep::db {

enum class DbMode { direct, snapshot };

/// At most this long between a commit and the snapshot that carries it (snapshot mode).
inline constexpr double kPublishIntervalS = 2.0;

struct Placement {
  DbMode mode = DbMode::direct;
  FsKind fs;
  bool forced = false;  ///< DLSWEEP_DB_MODE chose the mode, not the filesystem
};

/// The mode for a database on `fs` given DLSWEEP_DB_MODE's value (`env`, "" when unset).
/// An unknown value is an error naming the variable and the values it takes.
Result<Placement> choose_placement(const FsKind& fs, std::string_view env);

/// The live copy of database `db` (an absolute path) under `base`:
/// base/dlsweep-<uid>/<16 hex digits of the path's hash>-<file name>.
std::filesystem::path live_path_for(const std::filesystem::path& db, const std::filesystem::path& base, unsigned uid);

/// FNV-1a, 64 bits: a stable name for a path (not a security property).
std::uint64_t path_hash(std::string_view text);

/// The one line that says where a database on a shared filesystem is and what dlsweep does
/// about it ("" on a local disk in direct mode). `live` is the writer's live copy ("" for a reader).
std::string placement_note(const Placement& p, const std::string& db, const std::string& live);

/// statfs of `db` (or its directory) and DLSWEEP_DB_MODE.
Result<Placement> placement_of(const std::filesystem::path& db);

/// DLSWEEP_DB_LIVE_DIR, else $TMPDIR, else /tmp.
std::filesystem::path live_base_dir();

}  // namespace dlsweep::db
