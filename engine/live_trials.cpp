// live_trials.cpp — see live_trials.hpp.
#include "engine/live_trials.hpp"

namespace dlsweep::orch {

LiveTrial& LiveTrials::add(std::int64_t id) {
  auto& slot = trials_[id];
  if (!slot) slot = std::make_unique<LiveTrial>();
  return *slot;
}

LiveTrial* LiveTrials::find(std::int64_t id) {
  auto it = trials_.find(id);
  return it == trials_.end() ? nullptr : it->second.get();
}

const LiveTrial* LiveTrials::find(std::int64_t id) const {
  auto it = trials_.find(id);
  return it == trials_.end() ? nullptr : it->second.get();
}

LiveTrial& LiveTrials::at(std::int64_t id) { return *trials_.at(id); }

LiveTrial* LiveTrials::retire(std::int64_t id) {
  auto it = trials_.find(id);
  if (it == trials_.end()) return nullptr;
  retired_.push_back(std::move(it->second));
  trials_.erase(it);
  return retired_.back().get();
}

bool LiveTrials::release_retired() {
  if (walking_ == 0) retired_.clear();
  return !retired_.empty();
}

}  // namespace dlsweep::orch
