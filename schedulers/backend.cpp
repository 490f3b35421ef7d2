// backend.cpp — the small pieces of the Backend contract that every backend shares: the
// job token and the names of event kinds (used in logs and in the events table).
#include "schedulers/backend.hpp"

#include <fmt/format.h>

namespace dlsweep::sched {

std::string JobSpec::token() const { return fmt::format("{}/{}/{}", study, trial_id, attempt); }

std::string_view to_string(JobEventKind k) {
  switch (k) {
    case JobEventKind::queued: return "queued";
    case JobEventKind::started: return "started";
    case JobEventKind::exited: return "exited";
    case JobEventKind::cancelled: return "cancelled";
    case JobEventKind::lost: return "lost";
    case JobEventKind::requeued: return "requeued";
    case JobEventKind::pending: return "pending";
  }
  return "unknown";
}

}  // namespace dlsweep::sched
