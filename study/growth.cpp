// growth.cpp — the trial budget of a stored study, growing it, and which studies take
// enqueued trials (see study/growth.hpp).
#include "study/growth.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "search/sampler.hpp"

namespace dlsweep::orch {

namespace {

// The number of trials the study's sampler can propose at most (a grid's size), if finite.
std::optional<std::int64_t> sampler_size(const StudySpec& spec) {
  auto sampler = search::make_sampler(spec.search.algorithm, spec.space, spec.search.seed, spec.search.options);
  if (!sampler) return std::nullopt;
  return (*sampler)->size();
}

}  // namespace

std::int64_t trial_budget(const StudySpec& spec) { return trial_budget(spec, sampler_size(spec)); }

std::int64_t trial_budget(const StudySpec& spec, std::optional<std::int64_t> size) {
  if (spec.search.trials > 0) return size ? std::min(*size, spec.search.trials) : spec.search.trials;
  return size ? *size : -1;
}

Result<BudgetGrowth> grow_trial_budget(const StudySpec& spec, const std::string& spec_json, std::int64_t n,
                                       const std::string& study) {
  const std::string where = "--add-trials";
  if (n < 1)
    return fail_as(ErrorKind::bad_input, fmt::format("{} is not a number of trials to add", n), where,
                   "give a positive number, e.g. --add-trials 10");
  const std::int64_t budget = trial_budget(spec);
  if (spec.search.algorithm == "pbt")
    return fail_as(ErrorKind::bad_input,
                   fmt::format("study '{}' is population-based training: its budget is population x generations", study),
                   where, "submit a new pbt study with more generations");
  if (spec.search.algorithm == "branch")
    return fail_as(ErrorKind::bad_input,
                   fmt::format("study '{}' is a branching study: its trials follow from its points, batches and seeds",
                               study),
                   where, "submit a new branching study with more points, batches or max_seeds");
  if (budget < 0)
    return fail_as(ErrorKind::bad_input, fmt::format("study '{}' has no trial budget to grow", study), where,
                   "it runs until its sampler is exhausted; resume it without --add-trials");
  std::int64_t room = std::numeric_limits<std::int64_t>::max() - budget;
  if (auto size = sampler_size(spec)) {
    room = *size - budget;
    if (room <= 0)
      return fail_as(ErrorKind::bad_input,
                     fmt::format("study '{}' searches a grid of {} point(s), and every one of them is in its budget "
                                 "already: a grid cannot grow",
                                 study, *size),
                     where,
                     fmt::format("run grid points again with `dlsweep resume {} --rerun cancelled,failed`, or submit a "
                                 "study with more values, or with `search: {{algorithm: random}}` (or qmc, tpe)",
                                 study));
    if (n > room)
      return fail_as(ErrorKind::bad_input,
                     fmt::format("study '{}' searches a grid of {} point(s) and has {} in its budget: only {} more "
                                 "can be added",
                                 study, *size, budget, room),
                     where, fmt::format("use --add-trials {}", room));
  }
  if (n > room)
    return fail_as(ErrorKind::bad_input, fmt::format("{} more trials would overflow the budget", n), where,
                   "add fewer trials");
  auto j = nlohmann::json::parse(spec_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    return fail(fmt::format("the stored spec of study '{}' is not a JSON object", study), "studies.spec_json",
                "the database was edited by hand; restore it");
  BudgetGrowth g{budget, budget + n, {}};
  auto& search = j["search"];
  if (!search.is_object()) search = nlohmann::json::object();
  search["trials"] = g.new_budget;
  g.spec_json = j.dump();
  // The grown spec must read back as the same study with the new budget: what resume runs.
  auto check = parse_study(g.spec_json, StudyFormat::json, spec.source);
  if (!check || trial_budget(*check) != g.new_budget)
    return fail(fmt::format("the stored spec of study '{}' does not read back with search.trials = {}{}", study,
                            g.new_budget, check ? "" : ": " + check.error().front().message()),
                "studies.spec_json", "report this (a bug)");
  return g;
}

Status enqueue_supported(const StudySpec& spec, const std::string& study) {
  if (spec.search.algorithm == "pbt")
    return fail_as(ErrorKind::bad_input,
                   fmt::format("study '{}' is population-based training: trial n is member n % population of "
                               "generation n / population, so an enqueued trial has no place in it",
                               study),
                   "enqueue", "run the params you want as a study of their own");
  if (spec.search.algorithm == "branch")
    return fail_as(ErrorKind::bad_input,
                   fmt::format("study '{}' is a branching study: each trial has its place in the trunk or at a branch "
                               "point, so an enqueued trial has no place in it",
                               study),
                   "enqueue", "run the params you want as a study of their own");
  if (spec.search.algorithm != "grid") return {};
  return fail_as(ErrorKind::bad_input,
                 fmt::format("study '{}' searches a grid: each of its points is a trial already, so there is no "
                             "sampled trial for an enqueued one to go before or replace",
                             study),
                 "enqueue",
                 fmt::format("run grid points again with `dlsweep resume {} --rerun cancelled,failed`, or submit a study "
                             "over the same space with `search: {{algorithm: random}}` (or qmc, tpe) and enqueue there",
                             study));
}

}  // namespace dlsweep::orch
