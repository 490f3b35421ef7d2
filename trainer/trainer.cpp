#include "trainer/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trainer/data/epoch_order.hpp"
#include "trainer/kernels/kernels_registry.hpp"
#include "trainer/models/mlp.hpp"
#include "trainer/optim/optimizer.hpp"
#include "trainer/schedule/lr_schedule.hpp"

namespace dlsweep::trainer {

namespace {

using clock_type = std::chrono::steady_clock;

// Evaluation runs forward-only in chunks of this many samples (one cached plan, plus one for
// a smaller tail): large enough for efficient GEMMs, small enough to keep activations in cache.
constexpr std::int64_t kEvalBatch = 1000;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::string layer_sizes(std::int64_t in, const std::vector<std::int64_t>& hidden, std::int64_t out) {
  return fmt::format("{}-{}-{}", in, fmt::join(hidden, "-"), out);
}

}  // namespace

Trainer::Trainer(const TrainConfig& config, data::DataSplits data, TrainContext ctx)
    : config_(config), data_(std::move(data)), ctx_(ctx) {}

Trainer::~Trainer() = default;

Result<std::unique_ptr<Trainer>> Trainer::create(const TrainConfig& config, data::DataSplits data, TrainContext ctx) {
  if (!ctx.comm) return fail("no communicator", "Trainer::create", "pass a comm::LocalCommunicator");
  const std::int64_t n = data.train.size, ranks = ctx.comm->size();
  if (n < 1) return fail("the training set is empty", data.train.name, "check the dataset files and train_subset");
  if (data.test.size < 1) return fail("the test set is empty", data.test.name, "check the dataset files and test_subset");
  if (config.batch_size > n)
    return fail(fmt::format("batch_size {} is larger than the training set ({} samples)", config.batch_size, n),
                "batch_size", fmt::format("use batch_size <= {}{}", n, config.train_subset > 0 ? " or a larger train_subset" : ""));
  if (config.batch_size % ranks != 0)
    return fail(fmt::format("batch_size {} does not divide evenly over {} ranks", config.batch_size, ranks),
                "batch_size", fmt::format("use a multiple of {}", ranks));
  auto ramp = schedule::parse_batch_ramp(config.batch_ramp);
  if (!ramp) return std::unexpected(ramp.error());
  if (ramp->kind == schedule::BatchRamp::Kind::smith && config.decay != schedule::Decay::step)
    return fail(fmt::format("batch_ramp smith turns the milestones of decay=step into batch increases, but decay is {}",
                            schedule::to_string(config.decay)),
                "batch_ramp", "set decay: step (with decay_milestones and decay_factor) or use another batch_ramp");
  schedule::PlanSpec ps;
  ps.train_size = n;
  ps.epochs = config.epochs;
  ps.batch_size = config.batch_size;
  ps.ramp = *ramp;
  ps.milestones = effective_milestones(config);
  ps.decay_factor = config.decay_factor;
  ps.max_batch = config.max_batch_size;
  ps.ranks = ranks;
  auto plan = schedule::BatchPlan::build(ps);
  if (!plan) return std::unexpected(plan.error());
  if (config.model != "mlp") return fail(fmt::format("unknown model '{}'", config.model), "model", "use mlp");

  std::unique_ptr<Trainer> t(new Trainer(config, std::move(data), ctx));
  kernels::set_compute_threads(config.threads);
  auto backend = kernels::make_kernels(ctx.kernels);
  if (!backend) return std::unexpected(backend.error());
  t->kernels_ = std::move(*backend);
  models::MlpSpec spec{t->data_.train.features, config.hidden, t->data_.train.classes};
  t->model_ = std::make_unique<models::Mlp>(*t->kernels_, spec, config.seed);
  optim::OptimizerSpec os{config.optimizer, config.momentum, config.nesterov, config.weight_decay, false};
  auto opt = optim::make_optimizer(os, t->model_->parameters());
  if (!opt) return std::unexpected(opt.error());
  t->optimizer_ = std::move(*opt);

  t->plan_ = std::move(*plan);
  schedule::LrSpec ls;
  ls.base_lr = config.base_lr;
  ls.rule = config.lr_rule;
  ls.base_batch = config.base_batch;
  ls.warmup_epochs = config.warmup_epochs;
  ls.warmup_steps = config.warmup_steps;
  ls.start = config.warmup_start;
  ls.decay = config.decay;
  ls.milestones = effective_milestones(config);
  ls.factor = config.decay_factor;
  ls.floor = config.lr_floor;
  ls.power = config.decay_power;
  ls.smith = ramp->kind == schedule::BatchRamp::Kind::smith;
  t->lr_ = schedule::make_lr_schedule(ls, t->plan_);
  const auto& first = t->plan_.stages().front();
  t->local_batch_ = first.batch / ranks;
  t->steps_per_epoch_ = first.steps_per_epoch;
  t->total_steps_ = t->plan_.total_steps();
  t->eval_interval_ = std::max<std::int64_t>(1, schedule::epochs_to_steps(config.eval_every, t->steps_per_epoch_));
  return t;
}

double Trainer::wall_s() const { return seconds_since(ctx_.start); }

Status Trainer::report(protocol::RecordKind kind, std::int64_t step, const std::map<std::string, double>& metrics,
                       const std::string& text) {
  if (!ctx_.reporter || ctx_.comm->rank() != 0) return {};
  protocol::Record r;
  r.kind = kind;
  r.step = step;
  r.epoch = plan_.epoch_after(step);
  r.samples = plan_.samples_after(step);
  r.wall_s = wall_s();
  r.metrics = metrics;
  r.text = text;
  return ctx_.reporter->write(std::move(r));
}

Trainer::EvalStats Trainer::evaluate() {
  const data::Dataset& d = data_.test;
  std::vector<std::int32_t> labels(static_cast<std::size_t>(std::min(kEvalBatch, d.size)));
  double loss = 0;
  std::int64_t correct = 0;
  for (std::int64_t first = 0; first < d.size; first += kEvalBatch) {
    const std::int64_t n = std::min(kEvalBatch, d.size - first);
    data::gather_range(d, first, model_->input(n, models::Mode::eval), labels.data());
    auto st = kernels_->softmax_cross_entropy(model_->forward(n, models::Mode::eval), labels.data(), 1.0f, {});
    loss += st.loss_sum;
    correct += st.correct;
  }
  return {loss / static_cast<double>(d.size), static_cast<double>(correct) / static_cast<double>(d.size)};
}

Result<TrainResult> Trainer::run() {
  const data::Dataset& train = data_.train;
  const auto& sched = lr_;
  const auto& params = model_->parameters();
  std::string ramp_text;
  for (const auto& st : plan_.stages())
    ramp_text += fmt::format("{}{:g}:{}", ramp_text.empty() ? "" : ",", st.start_epoch, st.batch);
  if (auto s = report(protocol::RecordKind::log, 0,
                      {},
                      fmt::format("dlsweep-train: {} {} ({} parameters), {} {} train / {} test, batch {} on {} "
                                  "rank(s), {} steps/epoch, {} steps, lr {:g} ({} rule from {:g} at batch {}, "
                                  "warmup {} steps from {}, decay {}), batch stages {}, {} kernels, {}, {} thread(s)",
                                  model_->name(), layer_sizes(train.features, config_.hidden, train.classes),
                                  params.count(), config_.dataset, train.size, data_.test.size, config_.batch_size,
                                  ctx_.comm->size(), steps_per_epoch_, total_steps_, sched.target_lr,
                                  schedule::to_string(config_.lr_rule), config_.base_lr, config_.base_batch,
                                  sched.warmup_steps, schedule::to_string(config_.warmup_start),
                                  schedule::to_string(sched.decay.kind), ramp_text, ctx_.kernels,
                                  kernels::backend_version(), kernels::compute_threads()));
      !s)
    return std::unexpected(s.error());

  const std::int64_t rank = ctx_.comm->rank(), ranks = ctx_.comm->size();
  for (const auto& st : plan_.stages()) model_->prepare(st.batch / ranks, models::Mode::train);
  std::vector<std::uint32_t> order(static_cast<std::size_t>(train.size));
  std::int64_t order_epoch = -1;  // the epoch whose permutation `order` holds
  std::vector<std::int32_t> labels(static_cast<std::size_t>(plan_.max_batch() / ranks));
  const std::span<float> grads(params.grads(), static_cast<std::size_t>(params.arena_size()));
  const bool fused_update = ranks == 1 && optimizer_->supports_partial_step();

  TrainResult result;
  // Statistics of the interval since the last evaluation (local to this rank).
  double loss_sum = 0, t_compute = 0, t_data = 0;
  std::int64_t correct = 0, seen = 0;
  double lr = sched.at(0);
  std::int64_t batch = plan_.stages().front().batch;
  // One rank: each layer is updated as soon as its gradients are final, while they are still
  // in cache (a few % of a small-batch step cheaper than one pass over the whole arena after
  // backward). Built once: it reads the current `lr` by reference.
  const models::GradReadyFn update_layer = [&](std::span<const std::size_t> tensors) {
    optimizer_->step(lr, tensors);
  };

  for (std::int64_t step = 0; step < total_steps_;) {
    // A stop request lets the step in progress finish (it is checked between steps).
    if (ctx_.stop) {
      if (auto req = ctx_.stop->poll()) {
        result.status = TrainStatus::stopped;
        result.steps = step;
        result.message = fmt::format("stopped on request ({}) after step {}", req->reason, step);
        if (auto s = report(protocol::RecordKind::log, step, {}, result.message); !s) return std::unexpected(s.error());
        return result;
      }
    }
    const schedule::DataPosition pos = plan_.position(step);
    batch = pos.batch;
    const std::int64_t b = batch / ranks;
    auto t0 = clock_type::now();
    if (pos.epoch != order_epoch) {
      data::epoch_order(config_.seed, pos.epoch, order);
      order_epoch = pos.epoch;
    }
    const std::span<const std::uint32_t> idx(order.data() + pos.offset + rank * b, static_cast<std::size_t>(b));
    data::gather(train, idx, model_->input(b, models::Mode::train), labels.data());
    auto t1 = clock_type::now();

    lr = sched.at(step);
    const float grad_scale = 1.0f / static_cast<float>(batch);
    auto logits = model_->forward(b, models::Mode::train);
    auto st = kernels_->softmax_cross_entropy(logits, labels.data(), grad_scale, model_->logits_grad(b));
    double step_loss[1] = {st.loss_sum};
    if (auto s = ctx_.comm->allreduce_sum(std::span<double>(step_loss)); !s) return std::unexpected(s.error());
    if (!std::isfinite(step_loss[0])) {
      result.status = TrainStatus::diverged;
      result.steps = step;
      result.message = fmt::format("diverged: the training loss became non-finite at step {} (epoch {:.2f}, "
                                   "lr {:g}); the update was not applied",
                                   step, plan_.epoch_after(step), lr);
      if (auto s = report(protocol::RecordKind::log, step, {{"lr", lr}}, result.message); !s)
        return std::unexpected(s.error());
      return result;
    }
    if (fused_update) {
      model_->backward(b, update_layer);
    } else {
      model_->backward(b);
      if (auto s = ctx_.comm->allreduce_sum(grads); !s) return std::unexpected(s.error());
      optimizer_->step(lr);
    }
    const bool eval_now = plan_.eval_after(step, config_.eval_every);
    ++step;
    auto t2 = clock_type::now();

    loss_sum += st.loss_sum;
    correct += st.correct;
    seen += b;
    t_data += std::chrono::duration<double>(t1 - t0).count();
    t_compute += std::chrono::duration<double>(t2 - t1).count();

    if (eval_now) {
      auto te = clock_type::now();
      EvalStats ev = evaluate();
      double sums[5] = {loss_sum, static_cast<double>(correct), static_cast<double>(seen), t_compute, t_data};
      if (auto s = ctx_.comm->allreduce_sum(std::span<double>(sums)); !s) return std::unexpected(s.error());
      const double nranks = static_cast<double>(ranks);
      const double train_time = (sums[3] + sums[4]) / nranks;
      result.metrics = {{"train_loss", sums[0] / sums[2]},
                        {"train_acc", sums[1] / sums[2]},
                        {"val_loss", ev.loss},
                        {"val_acc", ev.acc},
                        {"lr", lr},
                        {"batch_size", static_cast<double>(batch)},
                        {"samples_per_s", train_time > 0 ? sums[2] / train_time : 0.0},
                        {"time_compute_s", sums[3] / nranks},
                        {"time_data_s", sums[4] / nranks},
                        {"time_eval_s", seconds_since(te)}};
      if (auto s = report(protocol::RecordKind::eval, step, result.metrics); !s) return std::unexpected(s.error());
      if (ctx_.progress && rank == 0) {
        std::fprintf(ctx_.progress,
                     "epoch %7.2f  step %7lld  train_loss %.4f  train_acc %.4f  val_loss %.4f  val_acc %.4f  "
                     "lr %.4g  batch %lld  %.0f samples/s\n",
                     plan_.epoch_after(step), static_cast<long long>(step), result.metrics["train_loss"],
                     result.metrics["train_acc"], ev.loss, ev.acc, lr, static_cast<long long>(batch),
                     result.metrics["samples_per_s"]);
        std::fflush(ctx_.progress);
      }
      loss_sum = t_compute = t_data = 0;
      correct = seen = 0;
    }
  }
  result.steps = total_steps_;
  if (auto s = report(protocol::RecordKind::final, total_steps_, result.metrics); !s) return std::unexpected(s.error());
  return result;
}

}  // namespace dlsweep::trainer
