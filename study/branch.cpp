// branch.cpp — a branching study's checks against the rest of the file, and its completed
// options (branch.hpp).
#include "study/branch.hpp"

#include <cmath>

#include <fmt/format.h>

#include "study/pbt.hpp"

namespace dlsweep::orch {

std::vector<search::OptionError> complete_branch(StudySpec& spec) {
  std::vector<search::OptionError> errors;
  if (spec.search.algorithm != "branch") return errors;
  auto& o = spec.search.options;
  if (!o.is_object()) return errors;  // the sampler says why
  if (spec.multi_objective())
    errors.push_back({"objective", "a branching study compares its branches on one objective; this study has several",
                      "keep one objective (e.g. val_loss, mode: min)"});
  if (spec.pruner.kind != "none")
    errors.push_back({"pruner.kind",
                      fmt::format("a branching study cannot run with a pruner ({}): a branch stopped early leaves its "
                                  "batch unmeasured at its point",
                                  spec.pruner.kind),
                      "leave `pruner` out"});
  if (spec.search.trials > 0)
    errors.push_back({"search.trials", "a branching study's trials follow from its points, batches, seeds and lr_factors",
                      "leave trials out"});
  for (const auto& d : spec.space.dims)
    errors.push_back({"space." + d.name,
                      "a branching study searches nothing itself: its trials are the trunk and the branches at "
                      "search.batches",
                      "fix the value under trial.trainer (or fixed:), or search it in a study of its own"});
  // points: {first, last} stored as the list it stands for.
  if (auto p = o.find("points"); p != o.end() && p->is_object()) {
    const double first = p->value("first", 0.0), last = p->value("last", 0.0);
    if (first > 0 && last >= first && std::isfinite(last)) {
      nlohmann::json list = nlohmann::json::array();
      for (double x = first; x <= last * (1 + 1e-12) && list.size() < 64; x *= 2) list.push_back(x);
      *p = list;
    }
  }
  if (spec.trial.embedded) {
    if (o.value("by", nlohmann::json("epoch")) != "epoch")
      errors.push_back({"search.by", "dlsweep-train's branch points are counted in epochs (of its training set)",
                        "write by: epoch (or leave it out)"});
    const double epochs = trainer_epochs(spec);
    if (auto e = o.find("end"); e != o.end()) {
      if (!e->is_number() || std::abs(e->get<double>() - epochs) > 1e-9)
        errors.push_back({"search.end", fmt::format("dlsweep-train's trunk ends at its epochs ({:g})", epochs),
                          "leave end out (it is the trainer's epochs)"});
    } else {
      o["end"] = epochs;
    }
    for (const char* reserved : {"batch_ramp", "lr_schedule", "stop_epoch", "branch_seed", "batch_size"}) {
      bool set = spec.space.fixed.contains(reserved);
      for (const auto& d : spec.space.dims) set = set || d.name == reserved;
      if (set)
        errors.push_back({reserved,
                          fmt::format("a branching study sets {} itself (the trunk's and each branch's)", reserved),
                          std::string(reserved) == "batch_size"
                              ? "remove batch_size: the trunk trains at the smallest of search.batches"
                              : fmt::format("remove {} from the study", reserved)});
    }
    if (auto sub = spec.space.fixed.find("train_subset"); sub != spec.space.fixed.end() && sub->is_number_integer())
      if (auto b = o.find("batches"); b != o.end() && b->is_array())
        for (const auto& x : *b)
          if (x.is_number_integer() && x.get<std::int64_t>() > sub->get<std::int64_t>()) {
            errors.push_back({"search.batches",
                              fmt::format("batch {} is larger than the training set (train_subset: {})",
                                          x.get<std::int64_t>(), sub->get<std::int64_t>()),
                              fmt::format("use batches <= {}, or a larger train_subset", sub->get<std::int64_t>())});
            break;
          }
  }
  // The plan's design, stored as it runs: a later default never changes a stored study's plan.
  // A spec whose generations were filled in (below) but that names no scan is a study stored
  // before the scan existed: it keeps the plan it ran under (every batch, the trunk to the end).
  const bool stored_before_scan = !o.contains("scan") && o.contains("generations");
  if (!o.contains("scan")) o["scan"] = stored_before_scan ? "all" : "upward";
  if (!o.contains("trunk_to_end")) o["trunk_to_end"] = stored_before_scan;
  if (auto p = o.find("points"); p != o.end() && p->is_array() && !o.contains("generations"))
    o["generations"] = static_cast<std::int64_t>(p->size()) + 1;
  return errors;
}

}  // namespace dlsweep::orch
