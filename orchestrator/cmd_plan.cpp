// cmd_plan.cpp — `dlsweep plan STUDY --ranks ...`: the predicted best batch and time to
// target per rank count, from the fitted S(B) and the study's own step-time measurements.
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/goodput.hpp"
#include "analysis/load.hpp"
#include "analysis/target_table.hpp"
#include "analysis/to_json.hpp"
#include "common/objective.hpp"
#include "db/storage.hpp"
#include "orchestrator/error_printer.hpp"
#include "orchestrator/commands.hpp"
#include "orchestrator/read_support.hpp"

namespace dlsweep::orch {

using nlohmann::json;

int cmd_plan(const PlanArgs& a) {
  auto study = load_study_data(a.db, a.study);
  if (!study) return print_error(study.error(), study.error().is(ErrorKind::not_found) ? exit_code::usage : exit_code::runtime);
  const auto table = analysis::target_table(*study);
  std::vector<analysis::BatchPoint> pts;
  for (const auto* r : table.reaching_rows()) pts.push_back({static_cast<double>(r->batch), r->steps->mean});
  if (!study->target)
    return print_error(Error{"the study has no objective target: there is no time to a target to predict", "study " + a.study,
                        "give the study `objective.target` and run it"},
                  exit_code::trials_failed);
  auto fit = analysis::fit_batch_model(pts);
  if (!fit) return print_error(fit.error(), exit_code::trials_failed);
  auto model = analysis::fit_step_time(*study);  // a refusal names the metrics the trials lack
  if (!model) return print_error(model.error(), exit_code::trials_failed);
  auto plan = analysis::make_plan(*fit, *model, a.ranks);
  if (!plan) return print_error(plan.error(), exit_code::usage);
  if (a.format == "json") {
    auto j = analysis::to_json(*plan);
    j["study"] = study->name;
    j["batch_model"] = analysis::to_json(*fit);
    j["step_time_model"] = analysis::to_json(*model);
    fmt::print("{}\n", j.dump(2));
    return exit_code::ok;
  }
  fmt::print("plan for {} (target {} {} {:g}) — a model prediction, not a measurement\n", study->name, study->metric,
             reach_op(study->mode), *study->target);
  fmt::print("{:>6}  {:>10}  {:>9}  {:<24}  {:>8}  {:>10}  {:>10}  {:>14}\n", "ranks", "best batch", "per rank",
             "regime", "steps", "compute/s", "allreduce/s", "time to target");
  for (const auto& r : plan->rows) {
    const auto& p = r.best;
    fmt::print("{:>6}  {:>10.0f}  {:>9.0f}  {:<24}  {:>8.0f}  {:>10.4f}  {:>10.4f}  {:>12.1f} s\n", r.ranks, p.batch,
               p.batch / r.ranks, p.regime ? analysis::regime_name(*p.regime) : "(B_crit not determined)", p.steps,
               p.compute_s, p.allreduce_s, p.time_s);
  }
  fmt::print("inputs (measured):\n");
  for (const auto& s : plan->inputs) fmt::print("  - {}\n", s);
  fmt::print("assumptions:\n");
  for (const auto& s : plan->assumptions) fmt::print("  - {}\n", s);
  return exit_code::ok;
}

}  // namespace dlsweep::orch
