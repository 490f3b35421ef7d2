// trainer_adaptive.cpp — the loop glue of `batch_ramp: adaptive` (the decision rule and the
// data layout are schedule/adaptive_batch.hpp's). What the run measures and why:
//  - throughput(B) = B / T(B/P). T is measured in this run. At the start (unless a checkpoint
//    brought the timings, or adaptive_step_time gives T) up to four candidate per-rank batches
//    spanning [min, top]/P are timed (top: as high as 5% of the run's samples allow, at least
//    4x min; schedule::profile_batches), forward + backward three times each (the first warms
//    the kernels' plans up and is discarded), without an update; the model's state (batch-norm
//    statistics) is restored afterwards, so the run's numbers are those it would have had.
//    These give the slope in the batch; the parts a real update adds (the optimizer's pass,
//    the loss/flag reduction, gradient allreduce) cost the same at every batch (they scale
//    with the parameters), so the model is the profile's fit plus the mean residual of the
//    run's own steps. Once the run has measured batch sizes 4x apart over >= 5 steps each, T
//    is fitted on the run's steps alone (they are whole updates, including communication;
//    sizes closer than that differ by less than the timing noise of a step);
//  - the decision is taken from rank 0's noise scale and model, broadcast, so every rank
//    picks the same batch;
//  - the checkpoint holds the layout (every decision so far), the timings and the running
//    stage's time: a resumed run takes its next decision from the same state. With a given
//    adaptive_step_time every input of a decision is a function of the training numbers, so
//    an interrupted run ends bit-identical to an uninterrupted one; with a measured T the
//    decisions after the resume depend on that run's timings, as any two runs' would.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trainer/models/model.hpp"
#include "trainer/trainer.hpp"

namespace dlsweep::trainer {

namespace {

using clock_type = std::chrono::steady_clock;

constexpr double kMinRunSteps = 5;   // steps at a batch before the run's own timings replace the profile
constexpr double kMaxWeight = 20;    // a point's weight in the fit is its steps, capped
constexpr double kMinSpread = 4;     // largest/smallest batch the run's steps must span to be fitted alone,
                                     // and the smallest span the start-up profile times
constexpr double kProfileShare = 0.05;  // the start-up profile reads at most this share of the run's samples
constexpr int kProfileReps = 3;         // passes per profiled size (the first warms the kernels up, discarded)

nlohmann::json times_json(const std::map<std::int64_t, std::pair<double, double>>& m) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [b, v] : m) out.push_back({b, v.first, v.second});
  return out;
}

std::map<std::int64_t, std::pair<double, double>> times_from(const nlohmann::json& j) {
  std::map<std::int64_t, std::pair<double, double>> m;
  for (const auto& e : j) m[e.at(0).get<std::int64_t>()] = {e.at(1).get<double>(), e.at(2).get<double>()};
  return m;
}

}  // namespace

schedule::DataPosition Trainer::position(std::int64_t step) const {
  return adaptive_ ? adaptive_->position(step) : plan_.position(step);
}
double Trainer::epoch_after(std::int64_t step) const {
  return adaptive_ ? adaptive_->epoch_after(step) : plan_.epoch_after(step);
}
std::int64_t Trainer::samples_after(std::int64_t step) const {
  return adaptive_ ? adaptive_->samples_after(step) : plan_.samples_after(step);
}

Status Trainer::adaptive_init() {
  const TrainConfig& c = config_;
  const std::int64_t n = data_.train.size, ranks = ctx_.comm->size();
  const std::int64_t lo = c.adaptive_min_batch > 0 ? c.adaptive_min_batch : c.batch_size;
  const std::int64_t hi = std::min(n, c.adaptive_max_batch > 0 ? c.adaptive_max_batch : 16 * c.batch_size);
  if (lo < ranks)
    return fail(fmt::format("adaptive_min_batch {} is below the {} ranks (each needs a sample)", lo, ranks),
                "adaptive_min_batch", fmt::format("use an adaptive_min_batch >= {}", ranks));
  ad_.candidates = schedule::candidate_batches(lo, hi, ranks);
  ad_.adascale = c.adaptive_lr == "adascale";
  ad_.measured = c.adaptive_step_time.empty();
  if (!ad_.measured) ad_.model = {c.adaptive_step_time.at(0), c.adaptive_step_time.at(1)};
  auto& L = ad_.lr;
  L.base_lr = c.base_lr;
  if (auto st = schedule::parse_lr_schedule(c.lr_schedule); st) L.lr_stages = *st;
  L.train_size = n;
  L.warmup = c.warmup_steps > 0 ? c.warmup_steps * c.batch_size : std::llround(c.warmup_epochs * static_cast<double>(n));
  L.start = c.warmup_start;
  L.decay.kind = c.decay;
  for (double m : effective_milestones(c)) L.decay.milestone_steps.push_back(std::llround(m * static_cast<double>(n)));
  L.decay.factor = c.decay_factor;
  L.decay.floor = c.lr_floor;
  L.decay.power = c.decay_power;
  L.total = std::llround(c.epochs * static_cast<double>(n));
  // Before the first noise measurement the LR scale is lr_rule's (1 at batch_size = base_batch).
  adaptive_.emplace(n, c.batch_size, schedule::lr_scale(c.lr_rule, c.batch_size, c.base_batch));
  return {};
}

Status Trainer::adaptive_profile() {
  if (!ad_.measured || !ad_.profile.empty()) return {};
  auto& params = model_->parameters();
  kernels::Memory& mem = params.memory();
  const std::int64_t ranks = ctx_.comm->size();
  // The share of what this process trains: to stop_epoch where the run stops there (a
  // population-based interval, a branch), else to epochs.
  const double epochs = config_.stop_epoch > 0 ? config_.stop_epoch : config_.epochs;
  const double budget = kProfileShare * epochs * static_cast<double>(data_.train.size) / static_cast<double>(ranks);
  const std::vector<std::int64_t> sizes =
      schedule::profile_batches(ad_.candidates, ranks, budget, kProfileReps, kMinSpread);
  const auto p0 = clock_type::now();
  const std::vector<float> state = mem.to_host(params.state_values(), params.state_size());
  const Interval saved = iv_;
  std::vector<std::uint32_t> idx(static_cast<std::size_t>(sizes.back()));
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<std::uint32_t>(i);
  for (std::int64_t b : sizes) {
    model_->prepare(b, models::Mode::train);
    for (int rep = 0; rep < kProfileReps; ++rep) {
      const auto t0 = clock_type::now();
      forward_part(idx.data(), b, b * ranks);
      model_->backward(b);
      const double t = std::chrono::duration<double>(clock_type::now() - t0).count();
      if (rep > 0) {
        ad_.profile[b].first += t;
        ad_.profile[b].second += 1;
      }
    }
  }
  // The largest batch's net is built now, untimed, as the profile up to it once did: a batch
  // too large for memory fails at the start, not at the decision that first picks it.
  if (ad_.candidates.back() / ranks > sizes.back()) model_->prepare(ad_.candidates.back() / ranks, models::Mode::train);
  if (params.state_size() > 0) mem.upload(params.state_values(), state.data(), params.state_size());
  iv_ = saved;
  const double seconds = std::chrono::duration<double>(clock_type::now() - p0).count();
  const std::int64_t top = sizes.back() * ranks;
  return report(protocol::RecordKind::log, 0, {{"profile_s", seconds}, {"profile_max_batch", static_cast<double>(top)}},
                fmt::format("adaptive profile: step time at per-rank batches {} ({} passes each, {:.3g} s){}",
                            fmt::join(sizes, ", "), kProfileReps, seconds,
                            top < ad_.candidates.back()
                                ? fmt::format("; batches above {} extrapolated until the run trains at them", top)
                                : std::string()));
}

void Trainer::adaptive_step_timed(std::int64_t per_rank_batch, double seconds) {
  auto& [sum, count] = ad_.run_times[per_rank_batch];
  sum += seconds;
  count += 1;
  ad_.stage_time += seconds;
  ++ad_.stage_steps;
}

Status Trainer::adaptive_decide(std::int64_t step) {
  const std::int64_t ranks = ctx_.comm->size();
  const auto phi = noise_.noise_scale();
  if (ad_.measured && ctx_.comm->rank() == 0) {
    std::vector<schedule::TimingPoint> run;
    for (const auto& [b, v] : ad_.run_times)
      if (v.second >= kMinRunSteps)
        run.push_back({static_cast<double>(b), v.first / v.second, std::min(v.second, kMaxWeight)});
    // The run's own steps alone once they span a 4x range of batches: closer sizes differ by
    // less than the steps' timing noise, and their slope is not to be trusted over the profile's.
    const bool spread = run.size() >= 2 && run.back().per_rank_batch >= kMinSpread * run.front().per_rank_batch;
    if (spread) {
      ad_.model = schedule::fit_step_time(run);
    } else {
      std::vector<schedule::TimingPoint> prof;
      for (const auto& [b, v] : ad_.profile) prof.push_back({static_cast<double>(b), v.first / v.second, 1});
      ad_.model = schedule::fit_step_time(prof);
      double w = 0, resid = 0;
      for (const auto& [b, v] : ad_.run_times) {
        w += v.second;
        resid += v.first - v.second * ad_.model.seconds(static_cast<double>(b));
      }
      if (w > 0) ad_.model.alpha = std::max(0.0, ad_.model.alpha + resid / w);
    }
  }
  double in[4] = {phi ? *phi : 0.0, phi ? 1.0 : 0.0, ad_.model.alpha, ad_.model.beta};
  if (ranks > 1)
    if (auto s = ctx_.comm->broadcast(std::span<double>(in), 0); !s) return s;
  ad_.model = {in[2], in[3]};
  const std::int64_t before = adaptive_->stage_at(step).batch;
  const double measured = ad_.stage_time > 0 ? static_cast<double>(before * ad_.stage_steps) / ad_.stage_time : 0.0;
  std::map<std::string, double> m;
  std::string text;
  if (in[1] > 0) {
    const auto d = schedule::choose_batch(ad_.candidates, in[0], config_.base_batch, ad_.model, ranks);
    const double scale = ad_.adascale ? d.gain : schedule::lr_scale(config_.lr_rule, d.batch, config_.base_batch);
    adaptive_->change(step, d.batch, scale);
    m = {{"batch_size", static_cast<double>(d.batch)}, {"grad_noise_scale", in[0]},
         {"efficiency", d.efficiency}, {"adascale_gain", d.gain},
         {"predicted_samples_per_s", d.throughput}, {"goodput", d.goodput}};
    text = fmt::format("adaptive: batch {} -> {} (B_simple {:.4g}, efficiency {:.4g}, gain {:.4g})", before, d.batch,
                       in[0], d.efficiency, d.gain);
  } else {
    m = {{"batch_size", static_cast<double>(before)}};
    text = fmt::format("adaptive: batch {} kept (no positive noise-scale estimate yet)", before);
  }
  m["lr"] = adaptive_lr_at(step);
  m["measured_samples_per_s"] = measured;
  m["step_time_alpha_s"] = ad_.model.alpha;
  m["step_time_beta_s"] = ad_.model.beta;
  ad_.stage_time = 0;
  ad_.stage_steps = 0;
  return report(protocol::RecordKind::log, step, m, text);
}

double Trainer::adaptive_lr_at(std::int64_t step) const {
  return schedule::adaptive_lr(ad_.lr, adaptive_->samples_after(step), adaptive_->stage_at(step).lr_scale);
}

bool Trainer::adaptive_done(std::int64_t step) const {
  const double target = config_.stop_epoch > 0 ? config_.stop_epoch : config_.epochs;
  return step > 0 && adaptive_->samples_after(step) >= std::llround(target * static_cast<double>(data_.train.size));
}

bool Trainer::adaptive_eval_after(std::int64_t step) const {
  if (adaptive_done(step + 1)) return true;
  const double every = config_.eval_every;
  return std::floor(adaptive_->epoch_after(step + 1) / every + 1e-9) >
         std::floor(adaptive_->epoch_after(step) / every + 1e-9);
}

nlohmann::json Trainer::adaptive_state() const {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : adaptive_->stages())
    stages.push_back({s.first_step, s.batch, s.samples_before, s.lr_scale});
  return {{"stages", stages},
          {"profile", times_json(ad_.profile)},
          {"run_times", times_json(ad_.run_times)},
          {"stage_time", ad_.stage_time},
          {"stage_steps", ad_.stage_steps},
          {"model", {ad_.model.alpha, ad_.model.beta}}};
}

bool Trainer::adaptive_restore(const nlohmann::json& j) {
  try {
    std::vector<schedule::AdaptiveStage> stages;
    for (const auto& e : j.at("stages"))
      stages.push_back({e.at(0).get<std::int64_t>(), e.at(1).get<std::int64_t>(), e.at(2).get<std::int64_t>(),
                        e.at(3).get<double>()});
    schedule::AdaptiveLayout layout;
    if (!schedule::AdaptiveLayout::restore(data_.train.size, std::move(stages), layout)) return false;
    adaptive_ = std::move(layout);
    ad_.profile = times_from(j.at("profile"));
    ad_.run_times = times_from(j.at("run_times"));
    ad_.stage_time = j.at("stage_time").get<double>();
    ad_.stage_steps = j.at("stage_steps").get<std::int64_t>();
    ad_.model = {j.at("model").at(0).get<double>(), j.at("model").at(1).get<double>()};
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace dlsweep::trainer
