// live_trials.hpp — the engine's live trials: every trial with a job (QUEUED/RUNNING, or
// WAITING on its way to one), each with what the engine keeps while it runs, in one owner
// whose walks cannot be invalidated.
//
// Why a type of its own: the engine walks its live trials to cancel them (interrupt,
// fail_fast, a stopped sweep, `dlsweep cancel`), to read their files (each tick) and to warn
// about long waits, and anything it does for one trial may end another — or the same one: a
// cancel answered at once, a stop that ends the trial, a fatal error. A walk over a plain map
// then advances through a freed node. Here:
//  - for_each() visits the trials live when the walk began, in id order, each only while it
//    is still live (one retired or replaced meanwhile is skipped; one added is not visited);
//  - retire() takes a trial out at once (find() and later walks no longer see it) but keeps
//    the object alive until release_retired(), so a reference held further up the stack (the
//    trial whose event is being handled, the walk's current one) stays valid to the end of
//    the turn. The engine releases them in a handler of its own, posted behind the turn.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/jsonl_tail.hpp"
#include "db/storage.hpp"
#include "engine/engine_clock.hpp"
#include "engine/trial_curve.hpp"
#include "schedulers/backend.hpp"

namespace dlsweep::orch {

/// What the engine keeps of one live trial.
struct LiveTrial {
  db::TrialRow row;
  std::string job_id;
  std::unique_ptr<JsonlTail> tail;
  std::string stop_reason;             ///< set when the engine asked the trial to stop
  bool deterministic_failure = false;  ///< retrying cannot help (bad params, divergence)
  bool adopted = false;                ///< its job was submitted by a previous orchestrator
  TrialCurve curve;                    ///< this attempt's objective curve and reported metrics
  bool objective_checked = false;      ///< this attempt's first-evaluation check is decided
  std::string prune_note;              ///< why the pruner stopped it
  std::int64_t decided_seq = -1;       ///< the highest seq announced in decided.json
  std::uint64_t suggest_offset = 0;    ///< bytes of suggest.jsonl answered (engine_suggest.cpp)
  nlohmann::json suggested = nlohmann::json::object();  ///< this launch's answers (suggested.json)
  // Its job waiting in the scheduler's queue (engine_pending.cpp).
  std::string native_id;               ///< the scheduler's id of its job, once known
  std::string pending_reason;          ///< the scheduler's latest reason for the wait ("" none)
  sched::PendingClass pending_class = sched::PendingClass::routine;
  /// Waiting on the scheduler since (unset while running, or held back by the study's own
  /// max_concurrent): backend.pending_warn counts from here.
  std::optional<EngineClock::time_point> pending_since;
  bool pending_warned = false;         ///< backend.pending_warn's warning was given
};

class LiveTrials {
 public:
  /// The live trial `id`, created (empty) if there is none.
  LiveTrial& add(std::int64_t id);
  /// The live trial `id`, or nullptr.
  LiveTrial* find(std::int64_t id);
  const LiveTrial* find(std::int64_t id) const;
  /// The live trial `id`; std::out_of_range if there is none.
  LiveTrial& at(std::int64_t id);
  bool contains(std::int64_t id) const { return trials_.count(id) > 0; }
  std::size_t size() const { return trials_.size(); }
  bool empty() const { return trials_.empty(); }

  /// Takes trial `id` out of the live ones and returns it (nullptr if it was not live). The
  /// object stays valid until release_retired().
  LiveTrial* retire(std::int64_t id);
  /// Frees the retired trials; while a walk is in progress it frees nothing (the walk's own
  /// trial may be one of them). True when something retired is still held.
  bool release_retired();
  std::size_t retired() const { return retired_.size(); }

  /// Calls fn(LiveTrial&) for each trial live when the walk begins, in id order, skipping
  /// those retired (or replaced by a new trial of the same id) before their turn. `fn` may
  /// add, retire and walk again.
  template <class F>
  void for_each(F&& fn) {
    std::vector<std::pair<std::int64_t, const LiveTrial*>> at_start;
    at_start.reserve(trials_.size());
    for (const auto& [id, t] : trials_) at_start.emplace_back(id, t.get());
    Walk walk(*this);
    for (const auto& [id, was] : at_start) {
      auto it = trials_.find(id);
      if (it == trials_.end() || it->second.get() != was) continue;  // retired, or a new trial of the same id
      fn(*it->second);
    }
  }
  /// A read-only walk (nothing it calls can end a trial).
  template <class F>
  void for_each(F&& fn) const {
    for (const auto& [id, t] : trials_) fn(static_cast<const LiveTrial&>(*t));
  }

 private:
  /// Counts the walks in progress (release_retired() waits for none).
  struct Walk {
    explicit Walk(LiveTrials& t) : trials(t) { ++trials.walking_; }
    ~Walk() { --trials.walking_; }
    Walk(const Walk&) = delete;
    Walk& operator=(const Walk&) = delete;
    LiveTrials& trials;
  };

  std::map<std::int64_t, std::unique_ptr<LiveTrial>> trials_;
  std::vector<std::unique_ptr<LiveTrial>> retired_;
  int walking_ = 0;
};

}  // namespace dlsweep::orch
