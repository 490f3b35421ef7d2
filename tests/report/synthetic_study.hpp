// synthetic_study.hpp — writes a synthetic study through the db/ APIs (create_study,
// create_trial, transition, ingest; never hand-written SQL), with every trial state, and
// returns what was written so tests can compute the numbers a report must show.
//
// The trials follow the batch-size model S(B) = S_min (1 + B_crit / B) (S_min = 200,
// B_crit = 1024): trial i runs batch 32 * 2^(i % 10) for 2 S(B) steps, 20 evaluations; its
// val_acc approaches 0.92 at a rate set by how far its base_lr is from the best one, so some
// trials never reach the target 0.88. States by number: see state_of().
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/trial_state.hpp"
#include "db/storage.hpp"

namespace dlsweep::report::testing {

struct SynthTrial {
  std::int64_t number = 0;
  TrialState state = TrialState::complete;
  double batch = 0, ranks = 1, base_lr = 0;
  int records = 0;            ///< eval/final records written
  int first_reached = -1;     ///< index of the first record at or above the target; -1 never
  double last_value = 0;      ///< val_acc of the last record
};

struct SynthStudy {
  std::int64_t study_id = 0;
  std::vector<SynthTrial> trials;
  double target = 0.88;
};

inline TrialState state_of(std::int64_t i, std::int64_t n) {
  if (n > 3 && i == n - 1) return TrialState::waiting;
  if (i % 29 == 7) return TrialState::running;
  if (i % 23 == 5) return TrialState::failed;
  if (i % 17 == 3) return TrialState::pruned;
  if (i % 31 == 11) return TrialState::cancelled;
  return TrialState::complete;
}

/// Writes the study `name` with n trials into a read-write Storage (without an objective
/// target when !with_target). Any database error is returned.
inline Result<SynthStudy> write_synthetic_study(db::Storage& s, const std::string& name, std::int64_t n,
                                                bool with_target = true) {
  db::NewStudy ns;
  ns.name = name;
  ns.spec_json = nlohmann::json{{"name", name}}.dump();
  ns.source_path = name + ".yaml";
  ns.root_dir = "runs/" + name;
  ns.objective_metric = "val_acc";
  ns.objective_mode = "max";
  if (with_target) ns.objective_target = 0.88;
  auto sid = s.create_study(ns);
  if (!sid) return std::unexpected(sid.error());
  SynthStudy out;
  out.study_id = *sid;
  const char* optimizers[] = {"sgd", "adam", "lars"};
  for (std::int64_t i = 0; i < n; ++i) {
    SynthTrial t;
    t.number = i;
    t.state = state_of(i, n);
    t.batch = 32.0 * std::pow(2.0, static_cast<double>(i % 10));
    t.ranks = (i / 50) % 2 ? 2 : 1;
    t.base_lr = 0.05 * std::pow(2.0, static_cast<double>((i / 10) % 5) - 2.0);
    nlohmann::json params = {{"batch_size", static_cast<std::int64_t>(t.batch)},
                             {"base_lr", t.base_lr},
                             {"ranks", static_cast<std::int64_t>(t.ranks)},
                             {"optimizer", optimizers[i % 3]},
                             {"seed", i / 100}};
    auto tid = s.create_trial(out.study_id, i, params, "runs/" + name + "/trial-" + std::to_string(i));
    if (!tid) return std::unexpected(tid.error());
    auto move = [&](TrialState from, TrialState to, std::string reason) {
      return s.transition({*tid, from, to, 0, "test", std::move(reason), std::nullopt});
    };
    if (t.state == TrialState::waiting) {
      out.trials.push_back(t);
      continue;
    }
    if (auto st = move(TrialState::waiting, TrialState::queued, "queued"); !st) return std::unexpected(st.error());
    if (auto st = move(TrialState::queued, TrialState::running, "started"); !st) return std::unexpected(st.error());
    const double s_of_b = 200.0 * (1.0 + 1024.0 / t.batch);
    const double quality = 1.0 - 0.3 * std::abs(std::log2(t.base_lr / 0.05)) / 2.0;  // 1 at the best lr
    const double tput = 4000.0 * std::pow(t.ranks, 0.9) * std::sqrt(std::min(1.0, t.batch / 1024.0) + 0.05);
    int total = 20;
    if (t.state == TrialState::running || t.state == TrialState::pruned) total = 10;
    if (t.state == TrialState::failed) total = i % 2 ? 7 : 0;  // some failed before their first eval
    if (t.state == TrialState::cancelled) total = 4;
    std::vector<protocol::Record> recs;
    for (int k = 0; k < total; ++k) {
      const auto step = static_cast<std::int64_t>(std::llround(2.0 * s_of_b * (k + 1) / 20.0));
      protocol::Record r;
      r.seq = k;
      r.kind = (t.state == TrialState::complete && k == total - 1) ? protocol::RecordKind::final : protocol::RecordKind::eval;
      r.step = step;
      r.samples = step * static_cast<std::int64_t>(t.batch);
      r.epoch = static_cast<double>(r.samples) / 60000.0;
      r.wall_s = static_cast<double>(r.samples) / tput;
      const double acc = 0.92 * (1.0 - std::exp(-3.0 * quality * static_cast<double>(step) / s_of_b));
      const double warm = std::min(1.0, (k + 1) / 3.0);
      r.metrics = {{"val_acc", acc},
                   {"val_loss", 1.0 - acc},
                   {"lr", t.base_lr * t.batch / 128.0 * warm * 0.5 * (1.0 + std::cos(M_PI * k / 20.0))},
                   {"samples_per_s", tput},
                   {"grad_noise_scale", 150.0 + 1500.0 * static_cast<double>(k) / 20.0},
                   {"batch_size", t.batch}};
      if (with_target && t.first_reached < 0 && acc >= out.target) t.first_reached = k;
      t.last_value = acc;
      recs.push_back(std::move(r));
    }
    t.records = total;
    if (auto st = s.ingest(*tid, 0, recs); !st) return std::unexpected(st.error());
    std::string why;
    switch (t.state) {
      case TrialState::complete: why = "exit 0"; break;
      case TrialState::pruned: why = "pruned: below the median of completed trials at epoch 3"; break;
      case TrialState::failed: why = "exit 3: diverged: the training loss became non-finite at step 17 <script>"; break;
      case TrialState::cancelled: why = "cancelled by the user"; break;
      default: break;
    }
    if (t.state != TrialState::running)
      if (auto st = move(TrialState::running, t.state, why); !st) return std::unexpected(st.error());
    out.trials.push_back(t);
  }
  return out;
}

}  // namespace dlsweep::report::testing
