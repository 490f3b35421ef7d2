// pareto.cpp — a trial's loss vector.
#include "search/pareto.hpp"

#include <cmath>

namespace dlsweep::search {

std::optional<Losses> to_losses(const TrialRecord& t, const History& h) {
  Losses out;
  if (h.multi_objective()) {
    if (t.values.size() != h.directions.size()) return std::nullopt;
    for (std::size_t i = 0; i < t.values.size(); ++i) {
      if (!std::isfinite(t.values[i])) return std::nullopt;
      out.push_back(h.directions[i] ? -t.values[i] : t.values[i]);
    }
    return out;
  }
  if (!t.value || !std::isfinite(*t.value)) return std::nullopt;
  return Losses{h.maximize ? -*t.value : *t.value};
}

}  // namespace dlsweep::search
