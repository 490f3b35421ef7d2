// site_limit_note.cpp — see site_limit_note.hpp.
#include "common/site_limit_note.hpp"

#include <fmt/format.h>

namespace dlsweep {

std::string site_limit_line(const std::string& note, std::int64_t in_scheduler, std::int64_t waiting,
                            const std::string& who) {
  std::string backend = who.substr(who.find(':') + 1);  // "backend:slurm" or "slurm"
  if (backend == "slurm") backend = "Slurm";
  return fmt::format("{}: {} in {}, {} waiting", note, in_scheduler, backend, waiting);
}

}  // namespace dlsweep
