// branch_study.hpp — writes a small branching study (search: {algorithm: branch},
// common/branch_cbs.hpp) through the db/ APIs (create_study, create_trial, transition, ingest,
// note_event; no hand-written SQL), numbered as search/branch_sampler plans it, with values
// chosen so that its critical batch can be computed by hand (report_branch_test.cpp does).
//
// Points p = 1, 2 (epochs), batches 32, 64, 128, delta 0.5, tolerance 1%, 2 seeds (up to 3),
// val_loss minimised. Trial 0: the trunk's segment [0, 1); trial 1: segment [1, 2), then trials
// 2-7 the branches at 1 (seed 0: 32, 64, 128; seed 1: the same); trial 8: segment [2, 3), trials
// 9-14 the branches at 2; trials 15 (batch 32) and 16 (batch 128): a round of a third seed at 2
// that never reached its end (15 RUNNING, 16 FAILED). Each branch reports val_loss at
// start + 0.25 (9.0), at its end (7.0) and then its final record at its end (kValues).
// The trunk reports grad_noise_scale: 40, 60 (segment 0), 90, 120 (segment 1), 0 (not measured)
// and 200 (segment 2); one branch reports 999 (not the trunk's: never drawn).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/branch_cbs.hpp"
#include "common/pbt_link.hpp"
#include "common/protocol.hpp"
#include "common/trial_state.hpp"
#include "db/storage.hpp"

namespace dlsweep::report::testing {

/// The final val_loss of each branch: [point - 1][seed][batch index].
inline constexpr std::array<std::array<std::array<double, 3>, 2>, 2> kBranchValues{{
    {{{1.000, 1.001, 1.100}, {1.002, 1.003, 1.102}}},  // at 1: 64 within 1% beyond the noise, 128 not at all
    {{{0.800, 0.800, 0.790}, {0.802, 0.804, 0.830}}},  // at 2: 64 surely within, 128 possibly (noisy)
}};

inline Result<std::int64_t> write_branch_study(db::Storage& s, const std::string& name) {
  using nlohmann::json;
  db::NewStudy ns;
  ns.name = name;
  ns.spec_json = json{{"name", name},
                      {"objective", {{"metric", "val_loss"}, {"mode", "min"}}},
                      {"search",
                       {{"algorithm", "branch"},
                        {"points", {1.0, 2.0}},
                        {"by", "epoch"},
                        {"batches", {32, 64, 128}},
                        {"delta", 0.5},
                        {"tolerance", 0.01},
                        {"seeds", 2},
                        {"max_seeds", 3},
                        {"lr_factors", {1.0}},
                        {"scan", "upward"}}}}
                     .dump();
  ns.source_path = name + ".yaml";
  ns.root_dir = "runs/" + name;
  ns.objective_metric = "val_loss";
  ns.objective_mode = "min";
  auto sid = s.create_study(ns);
  if (!sid) return std::unexpected(sid.error());
  const std::int64_t batches[] = {32, 64, 128};

  auto record = [](std::int64_t seq, protocol::RecordKind kind, double epoch, std::map<std::string, double> metrics) {
    protocol::Record r;
    r.seq = seq;
    r.kind = kind;
    r.epoch = epoch;
    r.step = static_cast<std::int64_t>(epoch * 100);
    r.samples = static_cast<std::int64_t>(epoch * 1000);
    r.wall_s = epoch;
    r.metrics = std::move(metrics);
    return r;
  };
  // One trial: its row, its link (a `pbt` event, as the engine records it), its records, its state.
  auto trial = [&](std::int64_t number, const BranchRole& role, double start, double end, std::optional<std::int64_t> parent,
                   const std::vector<protocol::Record>& recs, TrialState state) -> Status {
    auto tid = s.create_trial(*sid, number, {{"batch_size", role.batch}, {"base_lr", 0.1 * role.lr_factor}},
                              "runs/" + name + "/trial-" + std::to_string(number));
    if (!tid) return std::unexpected(tid.error());
    PbtLink link;
    link.number = number;
    link.member = role.trunk ? 0 : number;
    link.generation = role.point;
    link.axis = "epoch";
    link.start = start;
    link.end = end;
    link.parent = parent;
    link.branch = role.to_json();
    db::EventRow e;
    e.study_id = *sid;
    e.trial_id = *tid;
    e.who = "orchestrator";
    e.kind = kPbtEventKind;
    e.reason = link.to_json().dump();
    if (auto st = s.note_event(e); !st) return std::unexpected(st.error());
    auto move = [&](TrialState from, TrialState to) { return s.transition({*tid, from, to, 0, "test", "test", std::nullopt}); };
    if (auto st = move(TrialState::waiting, TrialState::queued); !st) return st;
    if (auto st = move(TrialState::queued, TrialState::running); !st) return st;
    if (auto st = s.ingest(*tid, 0, recs); !st) return std::unexpected(st.error());
    if (state != TrialState::running)
      if (auto st = move(TrialState::running, state); !st) return st;
    return {};
  };
  auto trunk = [&](std::int64_t number, std::int64_t point, double start, double end, std::optional<std::int64_t> parent,
                   double noise_mid, double noise_end) -> Status {
    BranchRole role;
    role.trunk = true;
    role.point = point;
    role.at = start;
    role.batch = 32;
    const double mid = (start + end) / 2;
    return trial(number, role, start, end, parent,
                 {record(0, protocol::RecordKind::eval, mid, {{"val_loss", 2.0 - mid / 2}, {"grad_noise_scale", noise_mid}}),
                  record(1, protocol::RecordKind::final, end, {{"val_loss", 2.0 - end / 2}, {"grad_noise_scale", noise_end}})},
                 TrialState::complete);
  };
  auto branch = [&](std::int64_t number, std::int64_t point, std::int64_t batch, std::int64_t seed, std::int64_t round,
                    std::int64_t parent, std::optional<double> value, TrialState state) -> Status {
    BranchRole role;
    role.point = point;
    role.at = static_cast<double>(point);
    role.batch = batch;
    role.seed = seed;
    role.round = round;
    const double at = role.at, end = at + 0.5;
    std::vector<protocol::Record> recs = {
        record(0, protocol::RecordKind::eval, at + 0.25, {{"val_loss", 9.0}, {"grad_noise_scale", 999.0}})};
    if (value) {  // at its end: an eval, then the final record (the value)
      recs.push_back(record(1, protocol::RecordKind::eval, end, {{"val_loss", 7.0}}));
      recs.push_back(record(2, protocol::RecordKind::final, end, {{"val_loss", *value}}));
    }
    return trial(number, role, at, end, parent, recs, state);
  };

  if (auto st = trunk(0, 0, 0, 1, std::nullopt, 40, 60); !st) return std::unexpected(st.error());
  std::int64_t number = 1;
  for (std::int64_t g = 1; g <= 2; ++g) {
    const std::int64_t segment = number;
    if (auto st = trunk(number++, g, static_cast<double>(g), static_cast<double>(g + 1), segment - (g == 1 ? 1 : 7),
                        g == 1 ? 90 : 0, g == 1 ? 120 : 200);
        !st)
      return std::unexpected(st.error());
    const std::int64_t from = g == 1 ? 0 : 1;  // the segment that ends at p_g
    for (std::int64_t seed = 0; seed < 2; ++seed)
      for (std::size_t j = 0; j < 3; ++j)
        if (auto st = branch(number++, g, batches[j], seed, 0, from, kBranchValues[g - 1][seed][j], TrialState::complete); !st)
          return std::unexpected(st.error());
  }
  // A round of a third seed at 2: neither reached its end.
  if (auto st = branch(15, 2, 32, 2, 1, 1, std::nullopt, TrialState::running); !st) return std::unexpected(st.error());
  if (auto st = branch(16, 2, 128, 2, 1, 1, std::nullopt, TrialState::failed); !st) return std::unexpected(st.error());
  return *sid;
}

}  // namespace dlsweep::report::testing
