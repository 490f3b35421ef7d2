// batch_trajectory.cpp — see batch_trajectory.hpp.
#include "analysis/batch_trajectory.hpp"

#include <fmt/format.h>

namespace dlsweep::analysis {

namespace {

std::string where(const BatchDecision& d) {
  return fmt::format("step {}, epoch {:.3g}", d.step, d.epoch);
}

}  // namespace

std::string batch_trajectory_line(const std::vector<BatchDecision>& decisions, std::size_t max_changes) {
  if (decisions.empty()) return {};
  // The changes: the first decision, then each one that chose another batch.
  std::vector<const BatchDecision*> changes{&decisions.front()};
  for (const auto& d : decisions)
    if (d.batch != changes.back()->batch) changes.push_back(&d);
  std::string path = fmt::format("{}", changes.front()->batch);
  const std::size_t n = changes.size();
  const std::size_t keep = std::max<std::size_t>(max_changes, 2);
  for (std::size_t i = 1; i < n; ++i) {
    if (n > keep + 1 && i == keep / 2 + 1) {
      path += " → …";
      i = n - (keep - keep / 2) - 1;
      continue;
    }
    path += fmt::format(" → {} ({})", changes[i]->batch, where(*changes[i]));
  }
  std::string line = fmt::format("batch over training (batch_ramp adaptive, {} decision{}): {}", decisions.size(),
                                 decisions.size() == 1 ? "" : "s", path);
  std::optional<double> first, last;
  for (const auto& d : decisions)
    if (d.noise_scale) {
      if (!first) first = d.noise_scale;
      last = d.noise_scale;
    }
  if (first) line += fmt::format("; B_simple {:.3g} → {:.3g}", *first, *last);
  return line;
}

nlohmann::json batch_trajectory_json(const std::vector<BatchDecision>& decisions) {
  nlohmann::json j = {{"step", nlohmann::json::array()},
                      {"epoch", nlohmann::json::array()},
                      {"batch_size", nlohmann::json::array()},
                      {"grad_noise_scale", nlohmann::json::array()},
                      {"attempt", nlohmann::json::array()}};
  for (const auto& d : decisions) {
    j["step"].push_back(d.step);
    j["epoch"].push_back(d.epoch);
    j["batch_size"].push_back(d.batch);
    j["grad_noise_scale"].push_back(d.noise_scale ? nlohmann::json(*d.noise_scale) : nlohmann::json(nullptr));
    j["attempt"].push_back(d.attempt);
  }
  return j;
}

}  // namespace dlsweep::analysis
