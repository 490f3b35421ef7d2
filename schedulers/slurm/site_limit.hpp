// site_limit.hpp — a site's submission limits as capacity, not failure. Pure: text in,
// decisions out; the backend (backend.cpp) calls it with what sbatch said and what it has
// in Slurm.
//
//  - capacity_refusal(): recognises sbatch's (or libslurm's) refusals that mean "not now":
//    QOSMaxSubmitJobPerUserLimit, QOSMaxSubmitJobPerAccountLimit, QOSGrpSubmitJobsLimit,
//    AssocMaxSubmitJobLimit, AssocGrpSubmitJobsLimit (and Slurm's generic "job submit
//    limit" policy line), an array larger than the site takes (MaxArraySize, "Invalid job
//    array specification"), and the controller's MaxJobCount ("Resource temporarily
//    unavailable" / "Slurm temporarily unable to accept job"). Anything else is not capacity
//    (a bad partition stays a refusal, refusal.hpp).
//  - SubmitCapacity: learns how many of the study's jobs (array tasks count one each) the
//    site lets be in Slurm at once from the refusals and acceptances, by halving: a refusal
//    of n jobs with k in Slurm says "k + n is too many"; the next try sends half the gap; a
//    refusal of one job says the limit is exactly k. A limit read from sacctmgr is exact
//    from the start. The controller's MaxJobCount counts every user's jobs and finished jobs
//    until they are purged (MinJobAge): a MaxJobCount refusal at a count the site took before
//    teaches nothing; it holds submissions back 1, 2, 4 ... 30 s (until an acceptance). After `probe_s` with nothing able to go, one job is tried again (the
//    user's other jobs may have ended); an acceptance beyond the learned limit forgets it.
//  - capacity_line(): what the user is told of the limit ("the site allows 4 jobs per user
//    (QOSMaxSubmitJobPerUserLimit)"; common/site_limit_note adds ": 4 in Slurm, 6 waiting").
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlsweep::sched::slurm {

/// What a capacity refusal limits.
enum class LimitKind {
  submit_jobs,  ///< jobs queued or running per user / account / QOS (each array task counts)
  array_size,   ///< tasks in one array
  job_count,    ///< the controller's MaxJobCount (all users)
};

struct SiteLimit {
  LimitKind kind = LimitKind::submit_jobs;
  std::string reason;  ///< Slurm's own word: "QOSMaxSubmitJobPerUserLimit", "MaxArraySize", ...
  std::string scope;   ///< "per user", "per account", "for the QOS", "for the association", "on the controller", ...
  bool operator==(const SiteLimit&) const = default;
};

/// The limit a refusal (all of sbatch's stderr, or libslurm's error string) names, or
/// nullopt when it is not a capacity refusal.
std::optional<SiteLimit> capacity_refusal(std::string_view text);

/// What sbatch prints on stderr when the controller refuses for now and sbatch starts its own
/// retry loop (sleeping 1, 2, ... 15 s: two minutes): "Slurm temporarily unable to accept job,
/// sleeping and retrying" (EAGAIN: MaxJobCount reached, each array task counting one), "Slurm
/// job queue full, sleeping and retrying". The CLI driver stops sbatch at the first of them.
const std::vector<std::string>& sbatch_retry_marks();

/// The limit a job's pending reason (squeue's reason code) names when it waits on a
/// site's job-count limit (QOSMaxJobsPerUserLimit, AssocGrpJobsLimit, ...), else nullopt.
std::optional<SiteLimit> capacity_pending_reason(std::string_view reason);

/// A submit limit the site's accounting states, and the number.
struct KnownLimit {
  SiteLimit limit;
  std::size_t jobs = 0;
};

/// The tightest submit limit in `sacctmgr -nP show assoc where user=U format=MaxSubmit,GrpSubmit`
/// (`assoc`) and `sacctmgr -nP show qos where name=Q format=MaxSubmitPU,MaxSubmitPA,GrpSubmit`
/// (`qos`): empty fields are no limit; nullopt when none is set (or the text is not
/// sacctmgr's, e.g. a cluster without slurmdbd).
std::optional<KnownLimit> parse_sacctmgr_limits(std::string_view assoc, std::string_view qos);

class SubmitCapacity {
 public:
  static constexpr std::size_t kUnlimited = std::numeric_limits<std::size_t>::max();

  explicit SubmitCapacity(double probe_s = 120) : probe_s_(probe_s) {}

  /// How many more jobs may go to Slurm now with `in_slurm` of the study's there
  /// (kUnlimited when no limit is known).
  std::size_t room(std::size_t in_slurm, double now_s) const;
  /// sbatch refused `tried` jobs (one array) with `in_slurm` already there, for `limit`.
  void refused(const SiteLimit& limit, std::size_t in_slurm, std::size_t tried, double now_s);
  /// sbatch accepted an array: `in_slurm_after` of the study's jobs are in Slurm now.
  void accepted(std::size_t in_slurm_after);
  /// A limit read from the site's configuration (sacctmgr): exactly `n` at once.
  void known(const SiteLimit& limit, std::size_t n);

  /// The most jobs at once the site is known to allow (exact or the best bound so far).
  std::optional<std::size_t> allowed() const;
  bool exact() const { return too_many_ && good_ + 1 >= *too_many_; }
  const std::optional<SiteLimit>& limit() const { return limit_; }
  /// Seconds (on the caller's clock) when a probe will be allowed; nullopt: no limit known.
  std::optional<double> probe_at() const;
  /// The same, or the end of a hold (see refused()) still ahead at `now_s`.
  std::optional<double> probe_at(double now_s) const;
  /// Whether the controller is held off now (a MaxJobCount refusal at a count it took before).
  bool held(double now_s) const { return now_s < hold_until_; }

 private:
  double probe_s_;
  std::optional<std::size_t> too_many_;  ///< smallest count refused
  std::size_t good_ = 0;                 ///< largest count accepted since then
  double refused_at_ = 0;
  std::optional<SiteLimit> limit_;
  std::size_t peak_ = 0;     ///< most of the study's jobs in Slurm at once that the site took
  double hold_s_ = 0;        ///< the current hold (1, 2, 4 ... 30 s); 0 after an acceptance
  double hold_until_ = 0;
};

/// "the site allows 4 jobs per user (QOSMaxSubmitJobPerUserLimit)" (the counts are added by
/// common/site_limit_note's line). `allowed` nullopt: "the site limits jobs per user (...)".
std::string capacity_line(const SiteLimit& limit, std::optional<std::size_t> allowed);

}  // namespace dlsweep::sched::slurm
