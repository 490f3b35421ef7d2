// site_limit_note.cpp — see site_limit_note.hpp.
#include "common/site_limit_note.hpp"

#include <fmt/format.h>

namespace dlsweep {

namespace {
constexpr std::string_view kWhoPrefix = "backend:";
}

std::string site_limit_who(std::string_view place) { return fmt::format("{}{}", kWhoPrefix, place); }

std::string site_limit_line(const std::string& note, std::int64_t in_scheduler, std::int64_t waiting,
                            const std::string& who) {
  const std::string_view place =
      who.starts_with(kWhoPrefix) ? std::string_view(who).substr(kWhoPrefix.size()) : std::string_view(who);
  return fmt::format("{}: {} in {}, {} waiting", note, in_scheduler, place, waiting);
}

}  // namespace dlsweep
