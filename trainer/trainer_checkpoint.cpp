// trainer_checkpoint.cpp — the Trainer's checkpoint, resume and state broadcast (the file
// format is checkpoint.hpp's). What a checkpoint holds, and why that is enough for a resumed
// run to end with the same metrics as an uninterrupted one:
//  - parameters, model state (batch-norm running statistics), optimizer arenas and scalars;
//  - the step: the data position (epoch permutation, offset), batch stage and LR are pure
//    functions of it (batch_plan.hpp, lr_schedule.hpp, epoch_order.hpp); there is no other
//    random state;
//  - the interval statistics since the last evaluation, REDUCED over ranks (so the next
//    evaluation's train_loss/train_acc/samples_per_s are those of the uninterrupted run);
//  - the noise-scale averages, the last evaluation's metrics, wall_s, the next record seq;
//  - batch_ramp adaptive: every batch decided so far (the layout: the data position is a
//    function of the step given them), the step timings and the fitted model;
//  - a fingerprint of the parameters that shaped the trajectory up to the checkpoint's epoch
//    E: a checkpoint written with other parameters is not resumed. threads, comm, bucket_mb,
//    data_dir, checkpoint_every_s and stop_epoch may change between runs; the batch and the
//    base LR enter as their stages (batch_ramp/lr_schedule, or the one stage batch_size/
//    base_lr stand for) that start before E, so a run whose future differs after E — a new
//    stage at E, another stop_epoch: population-based training's next interval — resumes
//    exactly from the checkpoint (same weights, optimizer state, step and data position),
//    while a run that differs before E is refused. The LR's decay and warmup are laid out over
//    the resuming run's own plan (its total steps), as a fresh run with its params would be.
#include <fmt/format.h>

#include "trainer/checkpoint.hpp"
#include "trainer/models/model.hpp"
#include "trainer/optim/optimizer.hpp"
#include "trainer/trainer.hpp"

namespace dlsweep::trainer {

namespace {

constexpr const char* kFormat = "dlsweep-train checkpoint";

std::span<const float> arena(const float* p, std::int64_t n) { return {p, static_cast<std::size_t>(n)}; }

}  // namespace

nlohmann::json Trainer::fingerprint(double epoch) const {
  nlohmann::json f = to_json(config_);
  for (const char* free_key :
       {"threads", "comm", "bucket_mb", "data_dir", "checkpoint_every_s", "stop_epoch", "bf16_kernels", "device", "deterministic",
        "branch_seed"})
    f.erase(free_key);
  if (!config_.standardize) f.erase("standardize");  // as before the key existed: old checkpoints resume
  auto ramp = schedule::parse_batch_ramp(config_.batch_ramp);
  const bool adaptive = ramp && ramp->kind == schedule::BatchRamp::Kind::adaptive;
  if (!adaptive)  // the adaptive_* keys shape only adaptive runs (and older checkpoints lack them)
    for (const char* key : {"adaptive_max_batch", "adaptive_min_batch", "adaptive_every", "adaptive_lr",
                            "adaptive_step_time"})
      f.erase(key);
  // The batch and base LR by stage, as far as they reached before `epoch` (an adaptive run's
  // batches are its own decisions, in the checkpoint: its batch_size and keys stay as given).
  if (ramp && ramp->kind != schedule::BatchRamp::Kind::smith && !adaptive) {
    nlohmann::json stages = nlohmann::json::array();
    if (ramp->kind == schedule::BatchRamp::Kind::none) stages.push_back({0.0, config_.batch_size});
    for (const auto& st : ramp->stages)
      if (st.epoch < epoch || st.epoch == 0) stages.push_back({st.epoch, st.batch});
    f.erase("batch_size");
    f.erase("batch_ramp");
    f["batch_stages"] = stages;
  }
  auto lrs = schedule::parse_lr_schedule(config_.lr_schedule);
  if (lrs) {
    nlohmann::json stages = nlohmann::json::array();
    if (lrs->empty()) stages.push_back({0.0, config_.base_lr});
    for (const auto& st : *lrs)
      if (st.epoch < epoch || st.epoch == 0) stages.push_back({st.epoch, st.lr});
    f.erase("base_lr");
    f.erase("lr_schedule");
    f["lr_stages"] = stages;
  }
  return f;
}

namespace {

/// The fingerprint of checkpoints written before stop_epoch/lr_schedule existed: every
/// parameter but the free ones, as given.
nlohmann::json legacy_fingerprint(const TrainConfig& c) {
  nlohmann::json f = to_json(c);
  for (const char* free_key : {"threads", "comm", "bucket_mb", "data_dir", "checkpoint_every_s", "bf16_kernels", "device", "deterministic",
                               "branch_seed"})
    f.erase(free_key);
  if (!c.standardize) f.erase("standardize");
  for (const char* key : {"adaptive_max_batch", "adaptive_min_batch", "adaptive_every", "adaptive_lr", "adaptive_step_time"})
    f.erase(key);
  if (c.lr_schedule == "none") f.erase("lr_schedule");
  if (c.stop_epoch == 0) f.erase("stop_epoch");
  return f;
}

}  // namespace

Result<std::string> Trainer::save_checkpoint(std::int64_t step, int records_after) {
  // Collective: the interval statistics are reduced so rank 0's file holds the whole world's.
  double sums[6] = {iv_.loss_sum, iv_.correct, iv_.seen, iv_.t_compute, iv_.t_data, iv_.t_comm};
  if (auto s = ctx_.comm->allreduce_sum(std::span<double>(sums)); !s) return std::unexpected(s.error());
  if (ctx_.comm->rank() != 0) return std::string();

  const auto& params = model_->parameters();
  const auto pos = position(step);
  // The stages before this epoch shaped the run: at a stop_epoch the nominal one (a stage the
  // next interval starts there is not part of this run's past), else where the step is.
  const double fp_epoch = config_.stop_epoch > 0 && !adaptive_ && step == end_step_ ? config_.stop_epoch
                                                                                    : epoch_after(step);
  const auto ns = noise_.state();
  nlohmann::json meta = {
      {"format", kFormat},
      {"fingerprint", fingerprint(fp_epoch)},
      {"fingerprint_version", 2},
      {"fingerprint_epoch", fp_epoch},
      {"step", step},
      {"epoch", epoch_after(step)},
      {"samples", samples_after(step)},
      {"stage", pos.stage},
      {"data_epoch", pos.epoch},
      {"data_offset", pos.offset},
      {"seed", config_.seed},
      {"written_in", ctx_.checkpoint_dir.string()},
      {"wall_s", wall_s()},
      {"seq", ctx_.reporter ? ctx_.reporter->next_seq() + 1 + records_after : 0},  // after this checkpoint's record
      {"interval", sums},
      {"noise", {ns.g2, ns.trace, ns.count}},
      {"last_metrics", last_metrics_},
      {"optimizer", optimizer_->name()},
      {"optimizer_scalars", optimizer_->state_scalars()},
      {"ranks", ctx_.comm->size()},
  };
  if (adaptive_) meta["adaptive"] = adaptive_state();
  // The arenas live in the backend's memory (a GPU's too): the file holds host copies, so a
  // checkpoint written on one device resumes on any other.
  kernels::Memory& mem = params.memory();
  std::vector<std::vector<float>> host;
  host.push_back(mem.to_host(params.values(), params.arena_size()));
  host.push_back(mem.to_host(params.state_values(), params.state_size()));
  const auto opt = optimizer_->state_arenas();
  for (const auto& a : opt) host.push_back(mem.to_host(a.data(), static_cast<std::int64_t>(a.size())));
  std::vector<ArenaRef> arenas = {{"values", arena(host[0].data(), params.arena_size())},
                                  {"state", arena(host[1].data(), params.state_size())}};
  for (std::size_t i = 0; i < opt.size(); ++i)
    arenas.push_back({fmt::format("optimizer.{}", i), std::span<const float>(host[2 + i])});
  auto path = write_checkpoint(ctx_.checkpoint_dir, step, meta, arenas);
  if (!path) return std::unexpected(path.error());
  if (auto s = report(protocol::RecordKind::checkpoint, step, {}, path->string()); !s)
    return std::unexpected(s.error());
  return path->string();
}

Result<std::int64_t> Trainer::resume() {
  if (ctx_.checkpoint_dir.empty()) return -1;
  auto note = [&](const std::string& text) -> Status {
    std::fprintf(stderr, "dlsweep-train: %s\n", text.c_str());
    return report(protocol::RecordKind::log, 0, {}, text);
  };
  std::vector<std::string> skipped;
  auto found = load_newest(ctx_.checkpoint_dir, skipped);
  for (const auto& why : skipped)
    if (auto s = note("skipping " + why); !s) return std::unexpected(s.error());
  std::int64_t step = -1;
  if (found) {
    const auto& [path, ckpt] = *found;
    auto& params = model_->parameters();
    const auto& m = ckpt.meta;
    const auto* values = ckpt.arena("values");
    const auto* state = ckpt.arena("state");
    auto opt = optimizer_->state_arenas();
    std::string mismatch;
    // batch_ramp adaptive: the batches decided so far come from the checkpoint (put back below
    // if it is not resumed).
    const std::optional<schedule::AdaptiveLayout> fresh_layout = adaptive_;
    const Adaptive fresh_state = ad_;
    if (m.value("format", "") != kFormat) mismatch = "not written by dlsweep-train";
    else if (m.value("fingerprint", nlohmann::json()) !=
             (m.value("fingerprint_version", 1) >= 2 ? fingerprint(m.value("fingerprint_epoch", 0.0))
                                                     : legacy_fingerprint(config_)))
      mismatch = "written with different parameters (params.json changed)";
    else if (adaptive_ && !(m.contains("adaptive") && adaptive_restore(m.at("adaptive"))))
      mismatch = "it holds no valid adaptive batch decisions";
    else if (const std::int64_t s = m.value("step", std::int64_t{-1});
             s < 0 || (!adaptive_ && s > total_steps_) || epoch_after(s) != m.value("epoch", -1.0) ||
             samples_after(s) != m.value("samples", std::int64_t{-1}))
      mismatch = "its step is at another place in the data under this run's batch plan";
    else if (!values || static_cast<std::int64_t>(values->size()) != params.arena_size() || !state ||
             static_cast<std::int64_t>(state->size()) != params.state_size())
      mismatch = "its model does not match this one";
    else if (m.value("optimizer", "") != optimizer_->name()) mismatch = "written by another optimizer";
    for (std::size_t i = 0; mismatch.empty() && i < opt.size(); ++i) {
      const auto* a = ckpt.arena(fmt::format("optimizer.{}", i));
      if (!a || a->size() != opt[i].size()) mismatch = "its optimizer state does not match";
    }
    if (mismatch.empty() && !optimizer_->set_state_scalars(m.at("optimizer_scalars").get<std::vector<double>>()))
      mismatch = "its optimizer state does not match";
    if (!mismatch.empty()) {
      adaptive_ = fresh_layout;
      ad_ = fresh_state;
      if (auto s = note(fmt::format("not resuming from {}: {}; starting from step 0", path.string(), mismatch)); !s)
        return std::unexpected(s.error());
    } else {
      kernels::Memory& mem = params.memory();
      mem.upload(params.values(), values->data(), params.arena_size());
      if (params.state_size() > 0) mem.upload(params.state_values(), state->data(), params.state_size());
      for (std::size_t i = 0; i < opt.size(); ++i) {
        const auto* a = ckpt.arena(fmt::format("optimizer.{}", i));
        mem.upload(opt[i].data(), a->data(), static_cast<std::int64_t>(a->size()));
      }
      step = m.at("step").get<std::int64_t>();
      if (ctx_.comm->rank() == 0) {  // the reduced statistics belong to one rank only
        const auto iv = m.at("interval").get<std::vector<double>>();
        iv_ = Interval{iv.at(0), iv.at(1), iv.at(2), iv.at(3), iv.at(4), iv.at(5)};
      }
      const auto ns = m.at("noise");
      noise_.restore({ns.at(0).get<double>(), ns.at(1).get<double>(), ns.at(2).get<std::int64_t>()});
      last_metrics_ = m.at("last_metrics").get<std::map<std::string, double>>();
      wall_offset_ = m.at("wall_s").get<double>();
      // Records continue after the checkpoint's (seq never goes back over records a lost
      // metrics file held) — unless this is a new trial forked from another trial's copied
      // checkpoint (pbt, a branching study): its own metrics file starts at 0.
      const bool forked = ctx_.reporter && ctx_.reporter->started_empty() && m.contains("written_in") &&
                          m.value("written_in", std::string()) != ctx_.checkpoint_dir.string();
      if (ctx_.reporter && !forked) ctx_.reporter->ensure_next_seq(m.value("seq", std::int64_t{0}));
      if (auto s = report(protocol::RecordKind::log, step, {},
                          fmt::format("resumed from {} at step {} (epoch {:.4g})", path.string(), step,
                                      epoch_after(step)));
          !s)
        return std::unexpected(s.error());
    }
  }
  // Every rank read the directory itself: they must have picked the same step.
  double agree[2] = {static_cast<double>(step), static_cast<double>(step) * static_cast<double>(step)};
  if (auto s = ctx_.comm->allreduce_sum(std::span<double>(agree)); !s) return std::unexpected(s.error());
  const double n = ctx_.comm->size();
  if (agree[0] * agree[0] != n * agree[1])
    return fail("ranks resumed from different checkpoints", ctx_.checkpoint_dir.string(),
                "give every rank the same trial directory (a shared filesystem)");
  return step;
}

Status Trainer::broadcast_state() {
  auto& params = model_->parameters();
  kernels::Memory& mem = params.memory();
  // Through a host copy where the arenas are device memory (comm: mpi with a GPU).
  auto bcast = [&](float* p, std::int64_t n) -> Status {
    if (n <= 0) return {};
    if (mem.host_visible()) return ctx_.comm->broadcast(std::span<float>(p, static_cast<std::size_t>(n)), 0);
    std::vector<float> h = mem.to_host(p, n);
    if (auto s = ctx_.comm->broadcast(std::span<float>(h), 0); !s) return s;
    mem.upload(p, h.data(), n);
    return {};
  };
  if (auto s = bcast(params.values(), params.arena_size()); !s) return s;
  if (auto s = bcast(params.state_values(), params.state_size()); !s) return s;
  for (auto a : optimizer_->state_arenas())
    if (auto s = bcast(a.data(), static_cast<std::int64_t>(a.size())); !s) return s;
  auto scalars = optimizer_->state_scalars();
  if (auto s = ctx_.comm->broadcast(std::span<double>(scalars), 0); !s) return s;
  optimizer_->set_state_scalars(scalars);
  return {};
}

}  // namespace dlsweep::trainer
