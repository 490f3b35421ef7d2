// atomic_file.hpp — the one way dlsweep replaces a file: written to "<path>.tmp.<pid>" beside
// it, then renamed over it, so a reader sees the old file or the new one, never half of
// either (control.json, params.json, requests, Slurm scripts and their index, reports, exports).
// AtomicFileWriter is the same for content written piece by piece (an export of every curve
// point); write_file_atomic is it in one call.
#pragma once

#include <filesystem>
#include <string_view>

#include "common/result.hpp"

namespace dlsweep {

enum class Durability {
  none,  ///< atomic against other processes and a killed writer; an OS crash may lose it
  file,  ///< fsync before the rename: the new content survives a crash of the OS
};

/// A file written in pieces into "<path>.tmp.<pid>" and renamed over `path` by commit(); a
/// writer destroyed (or failing) before commit() removes its temporary file and leaves `path`
/// as it was. Errors name the file and the step (create, write, flush, rename).
class AtomicFileWriter {
 public:
  static Result<AtomicFileWriter> open(const std::filesystem::path& path);
  AtomicFileWriter(AtomicFileWriter&& o) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&&) = delete;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();

  Status write(std::string_view content);
  /// fsync (with Durability::file), close, rename into place.
  Status commit(Durability durability = Durability::file);

 private:
  AtomicFileWriter(std::filesystem::path path, std::filesystem::path tmp, int fd)
      : path_(std::move(path)), tmp_(std::move(tmp)), fd_(fd) {}
  void abandon();
  std::filesystem::path path_, tmp_;
  int fd_ = -1;
};

/// Writes `content` to `path` atomically. On failure the temporary file is removed and the
/// error names the file and the step (create, write, flush, rename).
Status write_file_atomic(const std::filesystem::path& path, std::string_view content,
                         Durability durability = Durability::file);

/// True for the temporary names write_file_atomic uses ("<name>.tmp.<digits>"): what a crash
/// may leave behind, never a file of the user's.
bool is_atomic_temp_name(std::string_view file_name);

}  // namespace dlsweep
