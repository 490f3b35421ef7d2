// cmd_best_front.cpp — `dlsweep best` for a study of several objectives: the Pareto front
// (analysis/front.hpp decides it; this file prints), as sentences or `--format json`
// (`front: [{trial, values, seeds, params}]`); `--explain` adds what each point trades.
#include <fmt/format.h>

#include "analysis/front.hpp"
#include "orchestrator/error_printer.hpp"
#include "orchestrator/cmd_best_front.hpp"
#include "orchestrator/cmd_best_text.hpp"
#include "orchestrator/commands.hpp"
#include "orchestrator/read_support.hpp"
#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

using nlohmann::json;

int cmd_best_front(const BestArgs& a, const analysis::StudyData& study) {
  if (a.by != "auto")
    return print_error(fail("--by ranks one objective; this study has several (best names its Pareto front)", "--by",
                       "leave --by out").error(),
                  exit_code::usage);
  if (!a.group_by.empty())
    return print_error(fail("--group-by fits the batch-size model of one objective; this study has several", "--group-by",
                       "leave --group-by out").error(),
                  exit_code::usage);
  const auto front = analysis::pareto_front(study);
  std::string left;
  for (const auto& [state, n] : front.left_out) left += fmt::format("{}{} {}", left.empty() ? "" : ", ", n, state);
  const std::string infeasible =
      front.complete > front.feasible ? fmt::format("{} COMPLETE trials break a constraint", front.complete - front.feasible) : "";
  std::string objectives;
  for (const auto& o : front.objectives)
    objectives += fmt::format("{}{} ({})", objectives.empty() ? "" : ", ", o.metric, o.maximize ? "max" : "min");
  const auto explanation = a.explain ? analysis::explain_front(study, front) : std::vector<std::string>{};
  if (a.format == "json") {
    json pts = json::array();
    for (const auto& p : front.points) {
      json seeds = json::array();
      for (auto m : p.members) seeds.push_back(study.trials[m].number);
      pts.push_back({{"trial", study.trials[p.trial].number},
                     {"values", p.values},
                     {"seeds", seeds},
                     {"params", study.trials[p.trial].params}});
    }
    json objs = json::array();
    for (const auto& o : front.objectives) objs.push_back({{"metric", o.metric}, {"mode", o.maximize ? "max" : "min"}});
    json left_j = json::object();
    for (const auto& [state, n] : front.left_out) left_j[state] = n;
    json j{{"study", study.name},
           {"criterion", "pareto front"},
           {"objectives", objs},
           {"front", pts},
           {"eligible", front.complete},
           {"feasible", front.feasible},
           {"left_out", left_j}};
    if (a.explain) j["explanation"] = explanation;
    fmt::print("{}\n", j.dump(2));
  } else if (!front.points.empty()) {
    fmt::print("Pareto front of {} ({}): {} point{}\n", study.name, objectives, front.points.size(),
               front.points.size() == 1 ? "" : "s");
    if (a.explain) {
      for (const auto& line : explanation) fmt::print("  - {}\n", line);
    } else {
      for (const auto& p : front.points) {
        std::string vals;
        for (std::size_t k = 0; k < p.values.size(); ++k)
          vals += fmt::format("{}{} {:.4g}", vals.empty() ? "" : ", ", front.objectives[k].metric, p.values[k]);
        fmt::print("  - trial {}: {}{}\n", study.trials[p.trial].number, vals,
                   p.members.size() > 1 ? fmt::format(" (mean of {} seeds)", p.members.size()) : "");
      }
    }
    for (const auto& p : front.points)
      fmt::print("  trial {} params: {}\n", study.trials[p.trial].number, params_brief(study.trials[p.trial].params));
    if (!infeasible.empty()) fmt::print("  - {} (infeasible trials are never on the front)\n", infeasible);
    if (!left.empty()) fmt::print("  - left out: {} (only COMPLETE trials with every objective count)\n", left);
  }
  if (front.points.empty()) {
    std::string why = front.complete == 0 ? "no trial completed"
                      : front.feasible == 0 ? "no COMPLETE trial satisfies the constraints"
                                            : "no COMPLETE trial has a value of every objective";
    fmt::print(stderr, "study {}: nothing to recommend: {}{}\n", study.name, why, left.empty() ? "" : "; left out: " + left);
    if (const auto missing = never_reported_text(study); !missing.empty()) fmt::print(stderr, "  - {}\n", missing);
    return exit_code::trials_failed;
  }
  return exit_code::ok;
}

}  // namespace dlsweep::orch
