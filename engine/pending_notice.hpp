// pending_notice.hpp — what dlsweep says about a trial whose job waits in the scheduler's
// queue: the line when the scheduler's reason becomes notable, the one warning once it has
// waited backend.pending_warn seconds, and the reason as the jobs table keeps it (so that
// `dlsweep status` can show it). Pure text; the engine decides when (engine_pending.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dlsweep::orch {

/// The jobs table's `state` for a job that waits with `reason`: "PENDING (reason)", or
/// "PENDING" when the scheduler gives none.
std::string pending_job_state(const std::string& reason);
/// The reason inside a state written by pending_job_state(); nullopt for any other state
/// ("RUNNING", "exited", ...); "" for a plain "PENDING".
std::optional<std::string> pending_reason_of(const std::string& job_state);

/// `dlsweep status`'s message of a QUEUED trial whose job waits with `reason`:
/// "pending: REASON", then the trial's own message after "; ".
std::string pending_status_message(const std::string& reason, const std::string& message);

/// "trial 3 pending on slurm (job 12_3): launch failed requeued held".
std::string pending_event_line(std::int64_t number, const std::string& backend, const std::string& job,
                               const std::string& reason);

/// "warning: trial 3 has been pending for 10 min 5 s on slurm (job 12_3): REASON
/// (backend.pending_warn: 600 s)".
std::string pending_warning_line(std::int64_t number, double waited_s, const std::string& backend,
                                 const std::string& job, const std::string& reason, double warn_s);

/// Whether that warning is due: the trial is QUEUED, has waited on the scheduler (not on
/// the study's own throttle) `waited_s` >= `warn_s` > 0, and was not warned about yet.
bool pending_warning_due(bool queued, std::optional<double> waited_s, double warn_s, bool warned);

}  // namespace dlsweep::orch
