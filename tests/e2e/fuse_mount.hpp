// fuse_mount.hpp — test helper: a real FUSE mount (bindfs) of one directory on another, for
// the tests that put a study on the kind of filesystem other hosts share (db_placement_test,
// read_only_test). Unmounted at scope end; where FUSE cannot be mounted (no bindfs, no
// /dev/fuse, no CAP_SYS_ADMIN) `why_not` says why, so the test can skip visibly.
#pragma once

#include <sys/vfs.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "run_command.hpp"

inline constexpr unsigned long kFuseMagic = 0x65735546;

struct FuseMount {
  std::filesystem::path mnt;
  bool mounted = false;
  std::string why_not;
  /// `options` go to bindfs before the paths (e.g. {"-r"}: a read-only view). bindfs run by
  /// root lets every user in (allow_other), as a shared filesystem does.
  FuseMount(const std::filesystem::path& src, const std::filesystem::path& target,
            const std::vector<std::string>& options = {})
      : mnt(target) {
    if (run_command({"/bin/sh", "-c", "command -v bindfs"}).exit_code != 0) {
      why_not = "bindfs is not installed (scripts/install-deps.sh installs it)";
      return;
    }
    if (::access("/dev/fuse", R_OK | W_OK) != 0) {
      why_not = "no read/write permission on /dev/fuse";
      return;
    }
    std::filesystem::create_directories(target);
    std::vector<std::string> argv{"bindfs"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back(src.string());
    argv.push_back(target.string());
    auto r = run_command(argv);
    if (r.exit_code != 0) {
      why_not = "bindfs could not mount (no CAP_SYS_ADMIN or fusermount?): " + r.err;
      return;
    }
    mounted = true;
    struct statfs st {};
    if (::statfs(target.c_str(), &st) != 0 || (static_cast<unsigned long>(st.f_type) & 0xFFFFFFFFul) != kFuseMagic)
      why_not = "bindfs mounted, but statfs does not say FUSE";
  }
  ~FuseMount() {
    if (!mounted) return;
    // A process left running in it (a failed check) would make a plain unmount fail: lazy then.
    if (run_command({"umount", mnt.string()}).exit_code == 0) return;
    if (run_command({"fusermount", "-u", mnt.string()}).exit_code == 0) return;
    if (run_command({"umount", "-l", mnt.string()}).exit_code != 0) run_command({"fusermount", "-u", "-z", mnt.string()});
  }
  FuseMount(const FuseMount&) = delete;
  FuseMount& operator=(const FuseMount&) = delete;
};
