// unix_socket.hpp — `dlsweep serve --unix-socket PATH`: a listening Unix-domain socket that
// only its owner can connect to, for `ssh -L 8080:PATH login-node` (README "`dlsweep serve`").
//
// Invariants:
//  - The socket file is created with mode 0600 (fchmod on the socket before bind(2), which
//    Linux applies to the file it creates; chmod again and checked before listen(2)), so no
//    other user can connect at any moment, whatever the umask.
//  - An existing file at PATH is never replaced unless it is a socket nobody listens on (a
//    stale socket of a server that died, made by this user): a regular file, directory or
//    link is refused, and so is a live socket (another server is using it) or another
//    user's.
//  - remove_unix_socket() unlinks PATH only while it is still the socket this process made
//    (same device and inode), so a stop never removes a successor's socket.
#pragma once

#include <sys/types.h>

#include <filesystem>

#include "common/result.hpp"

namespace dlsweep::serve {

struct UnixSocketFile {
  int fd = -1;                  ///< the listening socket (the caller owns it)
  std::filesystem::path path;
  dev_t dev = 0;
  ino_t ino = 0;
};

/// Creates, binds (mode 0600) and listens on a stream socket at `path` (see the invariants).
Result<UnixSocketFile> listen_unix_socket(const std::filesystem::path& path, int backlog);

/// Unlinks the socket file if it is still `s`'s. Does not close s.fd.
void remove_unix_socket(const UnixSocketFile& s);

}  // namespace dlsweep::serve
