// site_limit_note.hpp — how a site limit the scheduler backend learned is kept and said:
// the events table's kind for it (its reason: the backend's note, "the site allows 4 jobs
// per user (QOSMaxSubmitJobPerUserLimit)"; its `who`: "backend:" and where the jobs wait as
// prose names it, "backend:Slurm") and the one line the progress, `dlsweep status` and serve
// show. Pure text: it knows no backend.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dlsweep {

inline constexpr const char* kSiteLimitEventKind = "site_limit";

/// The event's `who` for a limit of the backend whose jobs are in `place` ("Slurm").
std::string site_limit_who(std::string_view place);

/// "the site allows 4 jobs per user (QOSMaxSubmitJobPerUserLimit): 4 in Slurm, 6 waiting".
/// `who`: the event's who (site_limit_who's). Older databases recorded the backend's name
/// ("backend:slurm"): said as recorded.
std::string site_limit_line(const std::string& note, std::int64_t in_scheduler, std::int64_t waiting,
                            const std::string& who);

}  // namespace dlsweep
