// reason.cpp — see slurm/reason.hpp.
#include "schedulers/slurm/reason.hpp"
#include "schedulers/slurm/site_limit.hpp"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

namespace dlsweep::sched::slurm {

namespace {

constexpr std::string_view kRoutine[] = {"None", "Priority", "Resources", "BeginTime", "Dependency", "Prolog"};

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

}  // namespace

std::string shown_reason(const JobRecord& rec) {
  if (!rec.reason_detail.empty()) return rec.reason_detail;
  return rec.reason == "None" ? std::string() : rec.reason;
}

PendingClass classify_reason(const JobRecord& rec) {
  if (rec.reason == "JobArrayTaskLimit" && rec.reason_detail.empty()) return PendingClass::throttled;
  // The site's job-count limits (QOSMaxJobsPerUserLimit, ...): capacity, like the study's
  // own throttle; the job starts as others end.
  if (capacity_pending_reason(rec.reason) && rec.reason_detail.empty()) return PendingClass::throttled;
  const bool routine_code =
      rec.reason.empty() || std::find(std::begin(kRoutine), std::end(kRoutine), rec.reason) != std::end(kRoutine);
  return routine_code && rec.reason_detail.empty() ? PendingClass::routine : PendingClass::notable;
}

bool held_after_failed_launch(const JobRecord& rec) {
  if (rec.state != JobState::pending && rec.state != JobState::held && rec.state != JobState::requeued) return false;
  return contains(rec.reason_detail, "launch failed") || contains(rec.reason, "launch failed");
}

std::string failed_launch_message(const std::string& shown) {
  return fmt::format("Slurm could not start it and held it ({}); dlsweep cancelled the held job (`sinfo -R` "
                     "names nodes drained since)",
                     shown);
}

}  // namespace dlsweep::sched::slurm
