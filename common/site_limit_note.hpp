// site_limit_note.hpp — how a site limit the scheduler backend learned is kept and said:
// the events table's kind for it (its reason: the backend's note, "the site allows 4 jobs
// per user (QOSMaxSubmitJobPerUserLimit)"; its `who`: "backend:<name>") and the one line
// the progress, `dlsweep status` and serve show. Pure text.
#pragma once

#include <cstdint>
#include <string>

namespace dlsweep {

inline constexpr const char* kSiteLimitEventKind = "site_limit";

/// "the site allows 4 jobs per user (QOSMaxSubmitJobPerUserLimit): 4 in Slurm, 6 waiting".
/// `who`: the event's who ("backend:slurm") or the backend's name.
std::string site_limit_line(const std::string& note, std::int64_t in_scheduler, std::int64_t waiting,
                            const std::string& who);

}  // namespace dlsweep
