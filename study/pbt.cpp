// pbt.cpp — a pbt study's checks against the rest of the file, and its generations (pbt.hpp).
#include "study/pbt.hpp"

#include <cmath>

#include <fmt/format.h>

#include "common/train_params.hpp"

namespace dlsweep::orch {

double trainer_epochs(const StudySpec& spec) {
  if (auto e = spec.space.fixed.find("epochs"); e != spec.space.fixed.end() && e->is_number()) return e->get<double>();
  if (const auto* info = trainer::find_param("epochs"); info && info->default_value.is_number())
    return info->default_value.get<double>();
  return 10;
}

std::vector<search::OptionError> complete_pbt(StudySpec& spec) {
  std::vector<search::OptionError> errors;
  if (spec.search.algorithm != "pbt") return errors;
  auto& o = spec.search.options;
  if (spec.multi_objective())
    errors.push_back({"objective", "pbt ranks its members by one objective; this study has several",
                      "keep one objective, or search the front with algorithm: nsga2 or tpe"});
  if (spec.pruner.kind != "none")
    errors.push_back({"pruner.kind", fmt::format("pbt cannot run with a pruner ({}): members are ranked and "
                                                 "replaced at each interval's end, a pruned member would leave a hole "
                                                 "in the population", spec.pruner.kind),
                      "leave `pruner` out: pbt's exploit step is its pruning"});
  const nlohmann::json interval = o.value("interval", nlohmann::json::object());
  const nlohmann::json every = interval.is_object() ? interval.value("every", nlohmann::json()) : nlohmann::json();
  const nlohmann::json population = o.value("population", nlohmann::json());
  if (spec.trial.embedded) {
    if (interval.is_object() && interval.value("by", nlohmann::json("epoch")) != "epoch")
      errors.push_back({"search.interval.by", "dlsweep-train's PBT intervals are counted in epochs",
                        "write interval: {by: epoch, every: 2}"});
    for (const auto& d : spec.space.dims)
      if (d.name == "epochs")
        errors.push_back({"space.epochs", "pbt trains every member for the same epochs; it cannot be searched",
                          "put epochs under trial.trainer"});
    for (const char* reserved : {"batch_ramp", "lr_schedule", "stop_epoch"}) {
      bool set = spec.space.fixed.contains(reserved);
      for (const auto& d : spec.space.dims) set = set || d.name == reserved;
      if (set)
        errors.push_back({reserved, fmt::format("pbt writes {} itself (from each member's lineage)", reserved),
                          fmt::format("remove {} from the study", reserved)});
    }
    if (const auto p = o.find("perturb"); p != o.end() && p->is_object())
      for (const auto& [key, _] : p->items())
        if (key != "batch_size" && key != "base_lr")
          errors.push_back({"search.perturb." + key,
                            fmt::format("dlsweep-train replays schedules of batch_size and base_lr only, not {}", key),
                            "perturb batch_size and/or base_lr"});
  }
  if (!population.is_number_integer() || population.get<std::int64_t>() < 2) return errors;  // the sampler says why
  const std::int64_t p = population.get<std::int64_t>();
  if (!o.contains("generations")) {
    if (spec.trial.embedded && every.is_number() && every.get<double>() > 0) {
      const double epochs = trainer_epochs(spec);
      o["generations"] = std::max<std::int64_t>(1, std::int64_t(std::ceil(epochs / every.get<double>() - 1e-9)));
    } else if (spec.search.trials > 0) {
      if (spec.search.trials % p != 0) {
        errors.push_back({"search.trials", fmt::format("{} trials are not whole generations of {} members",
                                                       spec.search.trials, p),
                          fmt::format("give a multiple of population, e.g. trials: {}", p * std::max<std::int64_t>(1, spec.search.trials / p))});
        // The study is refused for its trials; a stand-in keeps the sampler from also
        // asking for the generations that `trials` gave.
        o["generations"] = std::max<std::int64_t>(1, spec.search.trials / p);
        return errors;
      }
      o["generations"] = spec.search.trials / p;
    }
  }
  if (const auto g = o.find("generations"); spec.trial.embedded && g != o.end() && g->is_number_integer() &&
                                            every.is_number()) {
    const double epochs = trainer_epochs(spec);
    const double last_start = double(g->get<std::int64_t>() - 1) * every.get<double>();
    if (last_start >= epochs)
      errors.push_back({"search.generations",
                        fmt::format("generation {} would start at epoch {:g}, past the trainer's {:g} epochs",
                                    g->get<std::int64_t>() - 1, last_start, epochs),
                        fmt::format("leave generations out (dlsweep-train's is ceil(epochs / every) = {:g})",
                                    std::ceil(epochs / every.get<double>() - 1e-9))});
  }
  if (const auto g = o.find("generations"); g != o.end() && g->is_number_integer() && spec.search.trials > 0 &&
                                            spec.search.trials != p * g->get<std::int64_t>())
    errors.push_back({"search.trials",
                      fmt::format("a pbt study runs population x generations = {} trials, not {}",
                                  p * g->get<std::int64_t>(), spec.search.trials),
                      "leave trials out (it follows from population and generations)"});
  return errors;
}

}  // namespace dlsweep::orch
