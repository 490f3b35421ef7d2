// replay_load.hpp — `dlsweep replay`'s reading side: a finished study's trials, curves and
// start order read from the database (db::Storage's read API, as `best` and `results` read
// them) into search/replay's plain input, with the recorded order of reports and trial ends
// where the record gives one (replay_load.cpp says from what). Thin: every decision is
// search/replay's.
#pragma once

#include <cstddef>
#include <string>

#include "common/result.hpp"
#include "db/storage.hpp"
#include "search/replay.hpp"

namespace dlsweep::orch {

struct ReplayStudy {
  search::ReplayInput input;      ///< finished trials (COMPLETE, PRUNED, FAILED) by recorded start
  std::string metric;             ///< the objective
  nlohmann::json recorded_pruner; ///< the study's own pruner: {kind, by, warmup, ...} as stored
  std::string algorithm;          ///< search.algorithm as stored
  std::size_t left_out = 0;       ///< trials not finished (waiting, running, cancelled): not replayed
  std::size_t max_concurrent = 1; ///< the most trials that ran at once in the recorded sweep
  /// Whether the record gives the order of every report and trial end (the trials' report_at
  /// and end_at are filled); input.interleaved is set where it does and max_concurrent > 1.
  bool ordered = false;
  std::string order_why;          ///< without an order: why not ("trial 3's reports' wall_s ...")
  std::string compute_why;        ///< how the compute axis was chosen ("wall_s: every trial reports it")
};

/// Reads study `study` for a replay with compute measured on `compute` ("auto": wall_s where
/// every finished trial reports it, else samples, else step). Errors (bad_input) name the
/// fix: several objectives, no finished trial, a compute axis the trials do not report.
Result<ReplayStudy> load_replay_study(const db::Storage& storage, const db::StudyRow& study, const std::string& compute);

}  // namespace dlsweep::orch
