#include <catch2/catch.hpp>

#include <map>
#include <utility>

#include "engine/state_machine.hpp"

using dlsweep::TrialState;
using dlsweep::orch::next_state;
using dlsweep::orch::TrialEvent;
using S = TrialState;
using E = TrialEvent;

// The whole table of docs/architecture.md ("Trial states"): every (state, event) pair that is allowed, and where it
// leads. Every pair not listed here must be rejected.
static const std::map<std::pair<S, E>, S> kAllowed = {
    {{S::waiting, E::launch}, S::queued},     {{S::queued, E::started}, S::running},
    {{S::running, E::completed}, S::complete}, {{S::running, E::pruned}, S::pruned},
    {{S::queued, E::failed}, S::failed},      {{S::running, E::failed}, S::failed},
    {{S::queued, E::lost}, S::failed},        {{S::running, E::lost}, S::failed},
    {{S::queued, E::requeued}, S::queued},    {{S::running, E::requeued}, S::queued},
    {{S::failed, E::retry}, S::waiting},      {{S::waiting, E::cancel}, S::cancelled},
    {{S::queued, E::cancel}, S::cancelled},   {{S::running, E::cancel}, S::cancelled},
    {{S::cancelled, E::rerun}, S::waiting},   {{S::failed, E::rerun}, S::waiting},
};

static const E kEvents[] = {E::launch, E::started, E::completed, E::pruned, E::failed,
                            E::lost,   E::requeued, E::retry,    E::cancel, E::rerun};

TEST_CASE("every (state, event) pair follows the transition table") {
  for (S s : dlsweep::kAllTrialStates) {
    for (E e : kEvents) {
      INFO(dlsweep::to_string(s) << " + " << dlsweep::orch::to_string(e));
      auto r = next_state(s, 0, e, /*max_retries=*/1);
      auto it = kAllowed.find({s, e});
      if (it == kAllowed.end()) {
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().what.find(std::string(dlsweep::to_string(s))) != std::string::npos);
      } else {
        REQUIRE(r.has_value());
        CHECK(r->to == it->second);
        CHECK(r->attempt == (e == E::retry || e == E::rerun ? 1 : 0));
      }
    }
  }
}

TEST_CASE("finished states are final; only a user's rerun reopens CANCELLED") {
  for (S s : {S::complete, S::pruned, S::cancelled})
    for (E e : kEvents)
      if (!(s == S::cancelled && e == E::rerun)) CHECK_FALSE(next_state(s, 0, e, 5).has_value());
}

TEST_CASE("rerun starts a new attempt, even with no retries configured") {
  for (S s : {S::cancelled, S::failed}) {
    auto r = next_state(s, 2, E::rerun, /*max_retries=*/0);
    REQUIRE(r.has_value());
    CHECK(r->to == S::waiting);
    CHECK(r->attempt == 3);
  }
  CHECK_FALSE(next_state(S::complete, 0, E::rerun, 0).has_value());
  CHECK_FALSE(next_state(S::pruned, 0, E::rerun, 0).has_value());
}

TEST_CASE("retry is bounded by max_retries and counts attempts") {
  auto first = next_state(S::failed, 0, E::retry, 2);
  REQUIRE(first.has_value());
  CHECK(first->attempt == 1);
  auto second = next_state(S::failed, 1, E::retry, 2);
  REQUIRE(second.has_value());
  CHECK(second->attempt == 2);
  auto third = next_state(S::failed, 2, E::retry, 2);
  REQUIRE_FALSE(third.has_value());
  CHECK(third.error().what.find("retries") != std::string::npos);
  CHECK_FALSE(next_state(S::failed, 0, E::retry, 0).has_value());
}

TEST_CASE("requeue keeps the attempt") {
  auto r = next_state(S::running, 3, E::requeued, 5);
  REQUIRE(r.has_value());
  CHECK(r->to == S::queued);
  CHECK(r->attempt == 3);
}
