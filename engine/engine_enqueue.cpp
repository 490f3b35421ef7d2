// engine_enqueue.cpp — the engine's side of `dlsweep enqueue`: the study's waiting requests
// (from the database and from request files a previous orchestrator never recorded) are
// loaded when run() starts; files left while it runs are recorded on its next tick; fill()
// turns the oldest request into the next trial before it asks the sampler for a new one.
#include <fmt/format.h>

#include "engine/engine.hpp"
#include "engine/enqueue_request.hpp"
#include "search/enqueued_params.hpp"

namespace dlsweep::orch {

Status Engine::load_enqueued() {
  auto rows = storage_.list_enqueued(study_id_);
  if (!rows) return std::unexpected(rows.error());
  for (auto& r : *rows)
    if (!r.trial_id) enqueued_.push_back(std::move(r));
  check_enqueue_requests();
  if (fatal_) return std::unexpected(*fatal_);
  if (!enqueued_.empty())
    progress_.event(fmt::format("{} enqueued {} before the sampled ones", enqueued_.size(), enqueued_.size() == 1 ? "trial runs" : "trials run"), snapshot());
  return {};
}

void Engine::check_enqueue_requests() {
  const auto study_dir = options_.runs_dir / spec_.name;
  // `dlsweep enqueue` may set the parameters trials discovered (suggest_*) too.
  std::vector<std::string> reasons;
  if (auto evs = storage_.events(study_id_))
    for (const auto& e : *evs)
      if (e.kind == "suggest") reasons.push_back(e.reason);
  StudySpec spec = spec_;
  spec.space = search::with_discovered(spec_.space, search::discovered_from_events(reasons));
  auto requests = read_enqueue_requests(study_dir, spec);
  if (requests.empty()) return;
  auto added = record_enqueue_requests(db(), study_id_, requests);
  if (!added) {
    fatal(added.error());
    return;
  }
  flush();  // recorded for good before the files go
  if (fatal_) return;
  for (const auto& r : requests) {
    if (!r.problem.empty())
      progress_.event(fmt::format("warning: refused enqueue request {} (kept as {}.refused): {}", r.file.string(),
                                  r.file.filename().string(), r.problem),
                      snapshot());
    retire_enqueue_request(r);
  }
  for (auto& row : *added) {
    progress_.event(fmt::format("enqueued: a trial with {} runs before the next sampled one", row.params.dump()),
                    snapshot());
    enqueued_.push_back(std::move(row));
  }
  if (!added->empty()) boost::asio::post(io_, [this] { fill(); check_done(); });
}

Status Engine::create_enqueued() {
  db::EnqueuedRow req = std::move(enqueued_.front());
  enqueued_.pop_front();
  const std::int64_t number = next_number_;
  // Optuna's enqueue_trial: the fixed values win; the sampler proposes the rest as it would
  // have for this trial (a grid never gets here: it takes no enqueued trials).
  auto sampled = sampler_->next(number, history_);
  auto params = search::merge_enqueued(spec_.space, spec_.search.seed, number, sampled, req.params);
  progress_.event(fmt::format("trial {}: enqueued, with {}", number, req.params.dump()), snapshot());
  return create_next(number, params, req.id);
}

}  // namespace dlsweep::orch
