// replay.hpp — a finished study's recorded curves replayed under another pruner, without
// training anything (`dlsweep replay`): which trials the pruner would have stopped where,
// what the sweep would then have found, and at what compute.
//
// Pure: a function of the recorded trials (their curves, as stored) and a Pruner made by
// make_pruner — the very classes the engine asks. Each report is judged as the engine judges
// it (the trial as it stood after that report, against a History), and a trial stopped at a
// report costs its compute up to that report. Two orders:
//
//  - In the recorded order (ReplayInput::interleaved; every trial carries the moments the
//    record gives it): the reports of all trials merged by when the sweep judged them, each
//    judged against the other trials as they stood then, as the engine's pruner saw them
//    (engine/engine_events.cpp, Engine::ingest_batch and Engine::maybe_prune): a running
//    trial with its curve up to its latest report before then, a finished one whole with its
//    end status (on_terminal/finish_trial). A trial the replay stops contributes no later
//    report; a trial's end enters the history at its recorded moment. With `max_concurrent`
//    above 1 only this order reproduces the recorded sweep's decisions.
//  - One after another in their recorded start order (no moments, and a sampler's replay,
//    replay_sampler.hpp): each trial judged whole against the trials replayed before it,
//    every one of them finished. Exact for a sweep that ran one trial at a time.
//
// What the record cannot say is never invented: a trial the recorded sweep stopped (PRUNED)
// has its curve only up to where it stopped. A replayed pruner that keeps it past that point
// cannot know its later values: the trial is "unknown beyond" its last recorded position,
// counted at the compute it recorded (a lower bound), never the best, and seen by later
// trials' judgements as stopped where its record stops.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "search/history.hpp"
#include "search/pruner.hpp"

namespace dlsweep::search {

/// One trial as the database holds it.
struct RecordedTrial {
  std::int64_t number = 0;
  Params params = Params::object();
  TrialStatus status = TrialStatus::complete;  ///< complete | pruned | failed (as recorded)
  std::vector<CurvePoint> curve;                ///< every recorded report of the objective, in order
  /// The recorded order (interleaved replay), on one clock shared by all trials: when each
  /// report of `curve` was judged (one per point) and when the trial's end entered the
  /// pruner's history. Empty / none where the record gives no order.
  std::vector<double> report_at;
  std::optional<double> end_at;
};

struct ReplayInput {
  std::vector<RecordedTrial> trials;  ///< in their recorded start order: the order they are replayed in
  bool maximize = true;
  bool rank_final = false;            ///< objective.rank_by: final (a trial's value is its last report)
  Axis compute = Axis::wall_s;        ///< what a trial's compute is measured in (its last kept report's position)
  /// Replay in the recorded order (every trial's report_at and end_at; has_recorded_order),
  /// else one after another in the order of `trials`.
  bool interleaved = false;
};

/// Whether every trial carries a recorded order: a moment for each report and for its end.
bool has_recorded_order(const std::vector<RecordedTrial>& trials);

/// What became of one trial in the replay.
struct ReplayedTrial {
  std::int64_t number = 0;
  TrialStatus recorded = TrialStatus::complete;
  TrialStatus replayed = TrialStatus::complete;  ///< complete | pruned | failed; unknown: as recorded (pruned)
  bool unknown = false;             ///< kept past its record's end by the replayed pruner: later values unknown
  std::size_t reports_kept = 0;     ///< reports of its curve the replay used
  std::size_t reports_recorded = 0;
  double at = 0;                    ///< replayed pruned: where (pruner's axis); unknown: where its record ends
  double compute_recorded = 0, compute_replayed = 0;
  std::optional<double> value;      ///< recorded complete: its value; replayed complete: the same
  std::optional<double> recorded_value;
  std::string reason;               ///< the pruner's reason, when pruned
};

struct ReplayOutcome {
  std::string pruner;               ///< the replayed pruner's name
  Axis pruner_axis = Axis::epoch;
  Axis compute = Axis::wall_s;
  bool interleaved = false;         ///< replayed in the recorded order (else one after another)
  std::vector<ReplayedTrial> trials;  ///< in replay order (interleaved: the input's order, by recorded start)
  double compute_recorded = 0, compute_replayed = 0;
  /// The best COMPLETE trial by the objective's value, recorded and replayed (ties: the earlier trial).
  std::optional<std::int64_t> best_recorded, best_replayed;
  std::optional<double> best_recorded_value, best_replayed_value;
  /// The replay's compute up to the end of its best trial: when the replayed sweep found it
  /// (interleaved: every trial's compute up to the moment the best one ended).
  double compute_to_best = 0;
  std::size_t pruned_recorded = 0, pruned_replayed = 0, unknown = 0;
  /// Trials whose replayed outcome (stopped or not) differs from the recorded one.
  std::size_t differ = 0;

  double fraction() const { return compute_recorded > 0 ? compute_replayed / compute_recorded : 0; }
  bool same_best() const { return best_recorded && best_replayed == best_recorded; }
};

/// The replay step by step: each recorded trial judged report by report against the history
/// of the trials added before it. replay() adds a study's trials in order; a sampler's replay
/// (replay_sampler.hpp) adds the recorded trial each proposal maps to.
class Replayer {
 public:
  Replayer(const ReplayInput& settings, const Pruner& pruner);
  /// Replays `t` as trial `number` of the replayed sweep (its number in the history the
  /// pruner, and a sampler, see); returns what became of it.
  const ReplayedTrial& add(const RecordedTrial& t, std::int64_t number);
  /// Every trial added so far, as the pruner and a sampler see them.
  const History& history() const { return history_; }
  /// The outcome: totals and the best of the trials added.
  ReplayOutcome finish() const;

 private:
  const Pruner& pruner_;
  Axis compute_;
  History history_;
  ReplayOutcome out_;
};

/// The trial's value from its first `n` reports: the best of them, or the last with rank_final.
std::optional<double> curve_value(const std::vector<CurvePoint>& curve, std::size_t n, bool maximize, bool rank_final);

/// Replays `in` under `pruner` (see the top of this file): in the recorded order when
/// `in.interleaved` (the trials must carry it: has_recorded_order), else one after another.
ReplayOutcome replay(const ReplayInput& in, const Pruner& pruner);

/// The one-line answer: "asha: the same best (trial 7, val_acc 0.8912) at 38% of the compute;
/// pruned 9 of 12" or "median: best would be trial 3 (0.8811, 0.0101 below the recorded best) at 52%...".
std::string summary_line(const ReplayOutcome& o, const std::string& metric);

}  // namespace dlsweep::search
