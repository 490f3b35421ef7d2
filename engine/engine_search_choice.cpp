// engine_search_choice.cpp — Engine::note_search_choice: `search.algorithm: auto` says which
// algorithm proposes each trial (Sampler::chosen, search/auto_sampler.hpp); the engine records
// each change as a `search` event (read back by `best --explain`) and logs it in one line.
#include <fmt/format.h>

#include "common/search_choice.hpp"
#include "engine/engine.hpp"

namespace dlsweep::orch {

void Engine::note_search_choice(std::int64_t number) {
  const std::string why = sampler_->chosen(number, history_);
  if (why.empty()) return;  // every algorithm but auto
  const auto choice = SearchChoice::from_reason(number, why);
  if (choice.algorithm == search_choice_) return;
  const bool first = search_choice_.empty();
  search_choice_ = choice.algorithm;
  db::EventRow e;
  e.study_id = study_id_;
  e.who = "orchestrator";
  e.kind = kSearchChoiceEventKind;
  e.reason = choice.to_json().dump();
  if (auto st = db().note_event(e); !st) return fatal(st.error());
  progress_.event(fmt::format("search auto: {} {} from trial {}", first ? "uses" : "switches to", why, number),
                  snapshot());
}

}  // namespace dlsweep::orch
