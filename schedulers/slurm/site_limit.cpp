// site_limit.cpp — see slurm/site_limit.hpp.
#include "schedulers/slurm/site_limit.hpp"

#include <algorithm>
#include <iterator>
#include <vector>

#include <fmt/format.h>

namespace dlsweep::sched::slurm {

namespace {

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

struct Named {
  std::string_view word;
  std::string_view scope;
};

// Slurm's reason codes for a refused submission (job_submit/QOS/association limits). Each
// array task counts as one job against them.
constexpr Named kSubmitReasons[] = {
    {"QOSMaxSubmitJobPerUserLimit", "per user"},
    {"QOSMaxSubmitJobPerAccountLimit", "per account"},
    {"QOSGrpSubmitJobsLimit", "for the QOS"},
    {"AssocMaxSubmitJobLimit", "for your association"},
    {"AssocGrpSubmitJobsLimit", "for your association's group"},
    {"MaxSubmitJobsPerUser", "per user"},
    {"MaxSubmitJobsPerAccount", "per account"},
};

// Pending reasons of jobs Slurm accepted but will not start while the user (account, QOS)
// has that many running: the site's limit, not a problem of the job.
constexpr Named kPendingReasons[] = {
    {"QOSMaxJobsPerUserLimit", "per user"},
    {"QOSMaxJobsPerAccountLimit", "per account"},
    {"QOSGrpJobsLimit", "for the QOS"},
    {"AssocMaxJobsLimit", "for your association"},
    {"AssocGrpJobsLimit", "for your association's group"},
    {"QOSMaxCpuPerUserLimit", "per user (CPUs)"},
    {"QOSMaxGRESPerUser", "per user (GPUs)"},
    {"QOSMaxNodePerUserLimit", "per user (nodes)"},
    {"AssocGrpCpuLimit", "for your association's group (CPUs)"},
    {"AssocGrpGRES", "for your association's group (GPUs)"},
    {"AssocGrpNodeLimit", "for your association's group (nodes)"},
    {"QOSGrpCpuLimit", "for the QOS (CPUs)"},
    {"QOSGrpGRES", "for the QOS (GPUs)"},
    {"QOSGrpNodeLimit", "for the QOS (nodes)"},
};

}  // namespace

std::optional<SiteLimit> capacity_refusal(std::string_view text) {
  for (const auto& n : kSubmitReasons)
    if (contains(text, n.word)) return SiteLimit{LimitKind::submit_jobs, std::string(n.word), std::string(n.scope)};
  // libslurm's ESLURM_ACCOUNTING_POLICY text, and sbatch's line after the reason code.
  if (contains(text, "job submit limit"))
    return SiteLimit{LimitKind::submit_jobs, "job submit limit", "per user"};
  if (contains(text, "MaxArraySize") || contains(text, "Invalid job array specification") ||
      contains(text, "array size"))
    return SiteLimit{LimitKind::array_size, "MaxArraySize", "in one array"};
  if (contains(text, "MaxJobCount") || contains(text, "Slurm temporarily unable to accept job") ||
      contains(text, "Resource temporarily unavailable") || contains(text, "job queue full"))
    return SiteLimit{LimitKind::job_count, "MaxJobCount", "on the controller"};
  return std::nullopt;
}

const std::vector<std::string>& sbatch_retry_marks() {
  static const std::vector<std::string> marks = {"temporarily unable to accept job", "job queue full, sleeping"};
  return marks;
}

std::optional<SiteLimit> capacity_pending_reason(std::string_view reason) {
  for (const auto& n : kPendingReasons)
    if (reason == n.word) return SiteLimit{LimitKind::submit_jobs, std::string(n.word), std::string(n.scope)};
  return std::nullopt;
}

namespace {

/// Each line's '|'-separated fields.
std::vector<std::vector<std::string_view>> rows_of(std::string_view text) {
  std::vector<std::vector<std::string_view>> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty()) continue;
    std::vector<std::string_view> fields;
    for (;;) {
      auto bar = line.find('|');
      fields.push_back(line.substr(0, bar));
      if (bar == std::string_view::npos) break;
      line = line.substr(bar + 1);
    }
    out.push_back(std::move(fields));
  }
  return out;
}

std::optional<std::size_t> count_field(std::string_view f) {
  if (f.empty() || f.size() > 9) return std::nullopt;
  std::size_t v = 0;
  for (char c : f) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::size_t>(c - '0');
  }
  return v;
}

}  // namespace

std::optional<KnownLimit> parse_sacctmgr_limits(std::string_view assoc, std::string_view qos) {
  std::optional<KnownLimit> best;
  auto consider = [&](std::string_view field, const char* reason, const char* scope) {
    auto v = count_field(field);
    if (v && (!best || *v < best->jobs)) best = KnownLimit{{LimitKind::submit_jobs, reason, scope}, *v};
  };
  for (const auto& r : rows_of(assoc)) {
    if (r.size() >= 1) consider(r[0], "AssocMaxSubmitJobLimit", "for your association");
    if (r.size() >= 2) consider(r[1], "AssocGrpSubmitJobsLimit", "for your association's group");
  }
  for (const auto& r : rows_of(qos)) {
    if (r.size() >= 1) consider(r[0], "QOSMaxSubmitJobPerUserLimit", "per user");
    if (r.size() >= 2) consider(r[1], "QOSMaxSubmitJobPerAccountLimit", "per account");
    if (r.size() >= 3) consider(r[2], "QOSGrpSubmitJobsLimit", "for the QOS");
  }
  return best;
}

std::size_t SubmitCapacity::room(std::size_t in_slurm, double now_s) const {
  if (!too_many_) return kUnlimited;
  if (held(now_s)) return 0;
  const std::size_t ceiling = *too_many_ - 1;  // the most known (or guessed) to be allowed
  if (in_slurm >= ceiling) return now_s >= refused_at_ + probe_s_ ? 1 : 0;
  const std::size_t gap = ceiling - in_slurm;
  if (exact()) return gap;
  // Not known exactly: half the way to the smallest count refused (at least one).
  return std::min(gap, std::max<std::size_t>(1, (*too_many_ - in_slurm) / 2));
}

void SubmitCapacity::refused(const SiteLimit& limit, std::size_t in_slurm, std::size_t tried, double now_s) {
  limit_ = limit;
  const std::size_t total = in_slurm + std::max<std::size_t>(tried, 1);
  if (limit.kind == LimitKind::job_count && too_many_ && total <= peak_) {
    // The controller took this many of ours before: its other records (other users' jobs,
    // finished jobs not yet purged) fill it now. Not a lower limit: wait and try again.
    hold_s_ = hold_s_ == 0 ? 1 : std::min(hold_s_ * 2, 30.0);
    hold_until_ = now_s + hold_s_;
    return;
  }
  if (!too_many_ || total < *too_many_ || now_s >= refused_at_ + probe_s_) too_many_ = total;
  good_ = std::min(good_, *too_many_ - 1);
  if (good_ < in_slurm && in_slurm < *too_many_) good_ = in_slurm;
  refused_at_ = now_s;
}

void SubmitCapacity::accepted(std::size_t in_slurm_after) {
  hold_s_ = 0;
  hold_until_ = 0;
  if (!too_many_) return;
  peak_ = std::max(peak_, in_slurm_after);
  if (in_slurm_after >= *too_many_) {  // the site allows more now (a probe went through)
    too_many_.reset();
    good_ = 0;
    peak_ = 0;
    return;
  }
  good_ = std::max(good_, in_slurm_after);
}

void SubmitCapacity::known(const SiteLimit& limit, std::size_t n) {
  limit_ = limit;
  too_many_ = n + 1;
  good_ = n;
  peak_ = 0;
  refused_at_ = 0;
}

std::optional<std::size_t> SubmitCapacity::allowed() const {
  if (!too_many_) return std::nullopt;
  return exact() ? std::optional<std::size_t>(*too_many_ - 1) : std::optional<std::size_t>(std::max(good_, std::size_t{1}));
}

std::optional<double> SubmitCapacity::probe_at() const {
  if (!too_many_) return std::nullopt;
  return refused_at_ + probe_s_;
}

std::optional<double> SubmitCapacity::probe_at(double now_s) const {
  if (held(now_s)) return hold_until_;
  return probe_at();
}

std::string capacity_line(const SiteLimit& limit, std::optional<std::size_t> allowed) {
  if (limit.kind == LimitKind::job_count) {
    // Slurm refuses a submission that would make the controller hold MaxJobCount jobs: the
    // most it holds is one less, finished jobs and other users' jobs included.
    if (!allowed) return fmt::format("the controller refuses more jobs for now ({}: all users' jobs count)", limit.reason);
    return fmt::format("the controller refuses more than {} {} ({}: all users' jobs count, finished ones until purged)",
                       *allowed, *allowed == 1 ? "job" : "jobs", limit.reason);
  }
  const std::string word = limit.kind == LimitKind::array_size ? "tasks" : "jobs";
  if (!allowed) return fmt::format("the site limits {} {} ({})", word, limit.scope, limit.reason);
  if (*allowed == 0) return fmt::format("the site allows no more {} {} now ({})", word, limit.scope, limit.reason);
  return fmt::format("the site allows {} {} {} ({})", *allowed, *allowed == 1 ? word.substr(0, word.size() - 1) : word,
                     limit.scope, limit.reason);
}

}  // namespace dlsweep::sched::slurm
