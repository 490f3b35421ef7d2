// program_study.hpp — writes the study of a user program (no trainer) through the db/ APIs:
// COMPLETE trials with a batch_size and an lr parameter, two eval records each reporting
// val_acc and samples_per_s only (no grad_noise_scale, no timings). For the report tests of
// what such a study can and cannot show.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/trial_state.hpp"
#include "db/storage.hpp"

namespace dlsweep::report::testing {

struct ProgramTrial {
  std::int64_t batch = 0;
  double lr = 0;
  std::int64_t steps = 0;  ///< steps to reach final_acc (the target is 0.88)
  double final_acc = 0.9;
};

/// Any database error is returned.
inline Status write_program_study(db::Storage& s, const std::string& name, const std::vector<ProgramTrial>& trials) {
  db::NewStudy ns;
  ns.name = name;
  ns.spec_json = nlohmann::json{{"name", name}, {"trial", {{"command", {"python3", "train.py"}}}}}.dump();
  ns.source_path = name + ".yaml";
  ns.root_dir = "runs/" + name;
  ns.objective_metric = "val_acc";
  ns.objective_mode = "max";
  ns.objective_target = 0.88;
  auto sid = s.create_study(ns);
  if (!sid) return std::unexpected(sid.error());
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const auto& t = trials[i];
    auto tid = s.create_trial(*sid, static_cast<std::int64_t>(i), {{"batch_size", t.batch}, {"lr", t.lr}},
                              "runs/" + std::to_string(i));
    if (!tid) return std::unexpected(tid.error());
    auto move = [&](TrialState from, TrialState to) {
      return s.transition({*tid, from, to, 0, "test", "", to == TrialState::complete ? std::optional<int>(0) : std::nullopt});
    };
    for (auto [from, to] : {std::pair{TrialState::waiting, TrialState::queued}, {TrialState::queued, TrialState::running}})
      if (auto st = move(from, to); !st) return std::unexpected(st.error());
    std::vector<protocol::Record> recs;
    for (int k = 0; k < 2; ++k) {
      protocol::Record r;
      r.seq = k;
      r.kind = k == 1 ? protocol::RecordKind::final : protocol::RecordKind::eval;
      r.step = t.steps * (k + 1) / 2;
      r.samples = r.step * t.batch;
      r.epoch = static_cast<double>(r.samples) / 60000.0;
      r.wall_s = static_cast<double>(r.step) / 100.0;
      r.metrics = {{"val_acc", k == 1 ? t.final_acc : 0.5}, {"samples_per_s", 1000.0}};
      recs.push_back(std::move(r));
    }
    if (auto st = s.ingest(*tid, 0, recs); !st) return std::unexpected(st.error());
    if (auto st = move(TrialState::running, TrialState::complete); !st) return std::unexpected(st.error());
  }
  return {};
}

/// 8 trials: batch 32..256 twice each (the second needs 10% more steps), each with its own lr.
/// The best steps per batch, 1000, 560, 250, 160, still halve at 256: B_crit is not determined
/// (its 90% interval runs from ~235 to ~1.3e5).
inline std::vector<ProgramTrial> undetermined_sweep() {
  std::vector<ProgramTrial> t;
  const std::int64_t batches[] = {32, 64, 128, 256}, steps[] = {1000, 560, 250, 160};
  for (int i = 0; i < 8; ++i)
    t.push_back({batches[i / 2], 0.01 * (i + 1), steps[i / 2] * (i % 2 ? 11 : 10) / 10, 0.89 + 0.002 * i});
  return t;
}

}  // namespace dlsweep::report::testing
