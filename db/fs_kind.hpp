// fs_kind.hpp — which filesystem a path is on (statfs's f_type), and what that means for an
// SQLite database there: whether every process that opens it shares one kernel (a local
// disk: SQLite's WAL and locks work), or processes on other hosts may open it too (NFS,
// Lustre, GPFS, BeeGFS, CephFS, SMB, FUSE, ...), where WAL's shared memory does not reach
// them and locks may not work at all (Lustre without `-o flock`).
//
// classify_fs_magic is pure (a table of the kernel's magic numbers, unit-tested); probe_fs
// does the one statfs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/result.hpp"

namespace dlsweep::db {

struct FsKind {
  std::string name;        ///< "ext4/ext3/ext2", "nfs", "lustre", "fuse", ... ; "unknown (0x1234)"
  bool shared = false;     ///< other hosts may open files here (network, cluster or FUSE filesystem)
  std::uint64_t magic = 0; ///< statfs f_type
};

/// What statfs's f_type `magic` is. Unknown types count as local (dlsweep's behaviour on
/// them stays what it always was); FUSE counts as shared, since sshfs, GlusterFS, s3fs,
/// CVMFS and most site filesystems mounted through it are.
FsKind classify_fs_magic(std::uint64_t magic);

/// The filesystem of `path`, or of its nearest existing parent (a database not created yet).
Result<FsKind> probe_fs(const std::filesystem::path& path);

/// The fix for a filesystem whose POSIX locks do not work (ENOLCK/ENOSYS/...), by its kind.
std::string lock_fix_for(const FsKind& fs);

}  // namespace dlsweep::db
