// pending_notice.cpp — see pending_notice.hpp.
#include "engine/pending_notice.hpp"

#include <fmt/format.h>

#include "engine/progress.hpp"

namespace dlsweep::orch {

namespace {

constexpr std::string_view kPending = "PENDING";

std::string on_backend(const std::string& backend, const std::string& job) {
  return job.empty() ? "on " + backend : fmt::format("on {} (job {})", backend, job);
}

}  // namespace

std::string pending_job_state(const std::string& reason) {
  return reason.empty() ? std::string(kPending) : fmt::format("{} ({})", kPending, reason);
}

std::optional<std::string> pending_reason_of(const std::string& job_state) {
  if (job_state == kPending) return std::string();
  const std::string open = std::string(kPending) + " (";
  if (job_state.size() > open.size() && job_state.compare(0, open.size(), open) == 0 && job_state.back() == ')')
    return job_state.substr(open.size(), job_state.size() - open.size() - 1);
  return std::nullopt;
}

std::string pending_status_message(const std::string& reason, const std::string& message) {
  return "pending: " + reason + (message.empty() ? "" : "; " + message);
}

std::string pending_event_line(std::int64_t number, const std::string& backend, const std::string& job,
                               const std::string& reason) {
  return fmt::format("trial {} pending {}: {}", number, on_backend(backend, job), reason);
}

std::string pending_warning_line(std::int64_t number, double waited_s, const std::string& backend,
                                 const std::string& job, const std::string& reason, double warn_s) {
  return fmt::format("warning: trial {} has been pending for {} {}: {} (backend.pending_warn: {:g} s)", number,
                     duration_text(waited_s), on_backend(backend, job),
                     reason.empty() ? "the scheduler gives no reason" : reason, warn_s);
}

bool pending_warning_due(bool queued, std::optional<double> waited_s, double warn_s, bool warned) {
  return queued && !warned && warn_s > 0 && waited_s && *waited_s >= warn_s;
}

}  // namespace dlsweep::orch
