// fs_kind.cpp — see fs_kind.hpp. The magic numbers are the kernel's (linux/magic.h and each
// filesystem's own headers: Lustre, GPFS, BeeGFS and PanFS are out of tree).
#include "db/fs_kind.hpp"

#include <sys/vfs.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace dlsweep::db {

namespace {

struct Known {
  std::uint64_t magic;
  const char* name;
  bool shared;
};

constexpr Known kKnown[] = {
    // network and cluster filesystems: other hosts open the same files
    {0x6969, "nfs", true},
    {0x0BD00BD0, "lustre", true},
    {0x47504653, "gpfs", true},
    {0x19830326, "beegfs", true},
    {0x00C36400, "cephfs", true},
    {0xFF534D42, "cifs", true},
    {0xFE534D42, "smb2", true},
    {0x517B, "smb", true},
    {0x65735546, "fuse", true},
    {0x5346414F, "afs", true},
    {0x6B414653, "afs", true},
    {0x01021997, "9p", true},
    {0xAAD7AAEA, "panfs", true},
    {0x20030528, "orangefs", true},
    {0x01161970, "gfs2", true},
    {0x7461636F, "ocfs2", true},
    {0x73757245, "coda", true},
    // local filesystems
    {0xEF53, "ext4/ext3/ext2", false},
    {0x58465342, "xfs", false},
    {0x9123683E, "btrfs", false},
    {0x2FC12FC1, "zfs", false},
    {0xF2F52010, "f2fs", false},
    {0x01021994, "tmpfs", false},
    {0x858458F6, "ramfs", false},
    {0x794C7630, "overlayfs", false},
    {0x52654973, "reiserfs", false},
    {0x3153464A, "jfs", false},
    {0x4D44, "vfat", false},
    {0x2011BAB0, "exfat", false},
    {0x5346544E, "ntfs", false},
    {0xCA451A4E, "bcachefs", false},
    {0x3434, "nilfs", false},
    {0x73717368, "squashfs", false},
    {0x9660, "iso9660", false},
};

}  // namespace

FsKind classify_fs_magic(std::uint64_t magic) {
  // statfs reports f_type as a signed word on some ABIs: compare the low 32 bits.
  const std::uint64_t m = magic & 0xFFFFFFFFu;
  for (const auto& k : kKnown)
    if (k.magic == m) return FsKind{k.name, k.shared, m};
  return FsKind{fmt::format("unknown (0x{:x})", m), false, m};
}

Result<FsKind> probe_fs(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  if (ec) p = path;
  for (;;) {
    struct statfs st {};
    if (::statfs(p.c_str(), &st) == 0) return classify_fs_magic(static_cast<std::uint64_t>(st.f_type));
    const int err = errno;
    if ((err != ENOENT && err != ENOTDIR) || !p.has_parent_path() || p.parent_path() == p)
      return fail(fmt::format("cannot tell which filesystem it is on: statfs: {}", std::strerror(err)), path.string());
    p = p.parent_path();
  }
}

std::string lock_fix_for(const FsKind& fs) {
  if (fs.name == "lustre")
    return "Lustre needs the `flock` mount option for locks (`mount | grep lustre` shows it; ask your admins "
           "for `-o flock`), or pass `--db` on a filesystem whose locks work: a local disk, or home on NFS";
  if (fs.name == "nfs")
    return "NFS locks need lockd (NFSv3: rpc.statd/lockd running, not mounted with `nolock`) or NFSv4; ask your "
           "admins, or pass `--db` on a local disk";
  if (fs.name == "fuse")
    return "this FUSE filesystem does not implement POSIX locks; pass `--db` on another filesystem (a local disk, "
           "home, scratch)";
  return fmt::format("{} does not support POSIX record locks here; pass `--db` on a filesystem that does "
                     "(a local disk, home on NFS with lockd, Lustre mounted with `-o flock`)",
                     fs.name);
}

}  // namespace dlsweep::db
