#include "trainer/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trainer/data/epoch_order.hpp"
#include "trainer/rng.hpp"
#include "trainer/kernels/onednn/bf16_peak.hpp"
#include "trainer/kernels/kernels_registry.hpp"
#include "trainer/kernels/onednn/onednn_isa.hpp"
#include "trainer/kernels/plugin_loader.hpp"
#include "trainer/models/model_registry.hpp"
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

// device: auto's one line when no GPU backend could be made.
std::string device_fallback_message(const Error& why) {
  return fmt::format("device auto: training on the CPU, because {}", why.what);
}

std::string layer_sizes(std::int64_t in, const std::vector<std::int64_t>& hidden, std::int64_t out) {
  return fmt::format("{}-{}-{}", in, fmt::join(hidden, "-"), out);
}

}  // namespace

Trainer::Trainer(const TrainConfig& config, data::DataSplits data, TrainContext ctx)
    : config_(config), data_(std::move(data)), ctx_(ctx), noise_(config.noise_scale_ema) {}

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
  auto lr_stages = schedule::parse_lr_schedule(config.lr_schedule);
  if (!lr_stages) return std::unexpected(lr_stages.error());
  if (config.stop_epoch < 0 || config.stop_epoch > config.epochs)
    return fail(fmt::format("stop_epoch {:g} is after the end of training (epochs {:g})", config.stop_epoch,
                            config.epochs),
                "stop_epoch", fmt::format("use a stop_epoch <= {:g}, or 0 for none", config.epochs));
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

  // device: cuda runs on the GPU backend; auto does where this build has CUDA and a GPU
  // answers (else the CPU backend the context names).
  std::unique_ptr<kernels::Kernels> gpu;
  if (config.device == "cuda" || config.device == "auto") {
    auto made = kernels::make_kernels("cuda");
    if (made) {
      gpu = std::move(*made);
      ctx.kernels = "cuda";
    } else if (config.device == "cuda") {
      return std::unexpected(made.error());
    } else if (ctx.reporter && ctx.comm->rank() == 0) {
      // auto falls back to the CPU, and says why (the reason of device: cuda's error), once.
      protocol::Record r;
      r.kind = protocol::RecordKind::log;
      r.wall_s = seconds_since(ctx.start);
      r.text = device_fallback_message(made.error());
      if (auto s = ctx.reporter->write(std::move(r)); !s) return std::unexpected(s.error());
    }
  }
  if (ctx.kernels != "cuda" && (config.precision == "tf32" || config.precision == "fp16"))
    return fail(fmt::format("precision {} is a GPU format, but this run trains on the CPU", config.precision),
                "precision", "use precision: fp32 or bf16 on the CPU, or device: cuda");
  std::unique_ptr<Trainer> t(new Trainer(config, std::move(data), ctx));
  kernels::set_compute_threads(config.threads);
  auto backend = gpu ? Result<std::unique_ptr<kernels::Kernels>>(std::move(gpu)) : kernels::make_kernels(ctx.kernels);
  if (!backend) return std::unexpected(backend.error());
  t->kernels_ = std::move(*backend);
  {
    const data::Dataset& d = t->data_.train;
    models::ModelSpec ms;
    ms.name = config.model;
    ms.hidden = config.hidden;
    ms.input = d.height > 0 ? kernels::Shape{d.channels, d.height, d.width} : kernels::Shape{d.features, 1, 1};
    ms.classes = d.classes;
    ms.seed = config.seed;
    auto precision = kernels::parse_precision(config.precision);
    if (!precision) return std::unexpected(precision.error());
    ms.precision = *precision;
    ms.emulate_bf16 = config.bf16_kernels == "emulated";
    ms.deterministic = config.deterministic;
    if (*precision == kernels::Precision::bf16 && config.bf16_kernels == "native" &&
        !(ctx.kernels == "onednn" && kernels::onednn_has_native_bf16()))
      // What this node lacks, not a bad parameter: a failure (another node may have it).
      return ctx.kernels == "onednn"
                 ? fail_as(ErrorKind::resources,
                           fmt::format("native bf16 kernels asked for, but oneDNN has none on this CPU (oneDNN isa "
                                       "{}; they need AVX512-BF16 or AMX)",
                                       kernels::onednn_isa_name()),
                           "bf16_kernels",
                           "use bf16_kernels: auto (native where the CPU has bf16 kernels, emulated elsewhere) or "
                           "emulated, or run on a CPU with AVX512-BF16 or AMX")
                 : fail(fmt::format("native bf16 kernels asked for, but the {} kernels have no bf16 arithmetic",
                                    ctx.kernels),
                        "bf16_kernels", "use bf16_kernels: auto or emulated with these kernels, or the onednn kernels");
    auto model = models::make_model(ms, *t->kernels_);
    if (!model) return std::unexpected(model.error());
    t->model_ = std::move(*model);
  }
  optim::OptimizerSpec os;
  os.name = config.optimizer;
  os.momentum = config.momentum;
  os.nesterov = config.nesterov;
  os.weight_decay = config.weight_decay;
  os.decay_biases = config.decay_bias_norm;
  os.momentum_correction = config.momentum_correction;
  os.beta1 = config.beta1;
  os.beta2 = config.beta2;
  os.adam_eps = config.adam_eps;
  os.lamb_eps = config.lamb_eps;
  os.lars_trust = config.lars_trust_coefficient;
  os.lars_eps = config.lars_eps;
  os.lars_exclude_bias_norm = config.lars_exclude_bias_norm;
  os.larc_trust = config.larc_trust_coefficient;
  os.larc_eps = config.larc_eps;
  os.larc_clip = config.larc_mode == "clip";
  auto opt = t->kernels_->make_optimizer(os, t->model_->parameters());
  if (!opt) return std::unexpected(opt.error());
  t->optimizer_ = std::move(*opt);
  if (config.precision == "fp16") t->scaler_ = std::make_unique<kernels::cuda::LossScaler>();

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
  ls.lr_stages = std::move(*lr_stages);
  t->lr_ = schedule::make_lr_schedule(ls, t->plan_);
  const auto& first = t->plan_.stages().front();
  t->steps_per_epoch_ = first.steps_per_epoch;
  t->total_steps_ = t->plan_.total_steps();
  t->end_step_ = config.stop_epoch > 0
                     ? std::clamp<std::int64_t>(t->plan_.steps_until_epoch(config.stop_epoch), 1, t->total_steps_)
                     : t->total_steps_;
  t->eval_interval_ = std::max<std::int64_t>(1, schedule::epochs_to_steps(config.eval_every, t->steps_per_epoch_));
  if (ramp->kind == schedule::BatchRamp::Kind::adaptive)
    if (auto s = t->adaptive_init(); !s) return std::unexpected(s.error());
  // The first stage's training net now: a backend that cannot run this model says so here,
  // as bad input naming the model, not as an internal error in the middle of the run.
  try {
    t->model_->prepare(t->plan_.stages().front().batch / ranks, models::Mode::train);
  } catch (const std::invalid_argument& e) {
    return fail(e.what(), "model");
  }
  if (ranks > 1) t->sync_ = std::make_unique<GradSync>(*ctx.comm, t->model_->parameters(), config.bucket_mb);
  // GPU backends keep both splits in device memory and gather batches there.
  const data::Dataset* splits[2] = {&t->data_.train, &t->data_.test};
  t->device_data_ = t->kernels_->attach_data(splits);
  return t;
}

double Trainer::wall_s() const { return wall_offset_ + seconds_since(ctx_.start); }

Status Trainer::report(protocol::RecordKind kind, std::int64_t step, const std::map<std::string, double>& metrics,
                       const std::string& text) {
  if (!ctx_.reporter || ctx_.comm->rank() != 0) return {};
  protocol::Record r;
  r.kind = kind;
  r.step = step;
  r.epoch = epoch_after(step);
  r.samples = samples_after(step);
  r.wall_s = wall_s();
  r.metrics = metrics;
  r.text = text;
  return ctx_.reporter->write(std::move(r));
}

std::string Trainer::precision_path() const {
  if (config_.precision != "bf16") return {};
  if (config_.bf16_kernels == "emulated" || ctx_.kernels != "onednn") return "emulated";
  return std::string(kernels::bf16_path_name());
}

Status Trainer::log_start() {
  const data::Dataset& train = data_.train;
  std::string stages;
  for (const auto& st : plan_.stages())
    stages += fmt::format("{}{:g}:{}", stages.empty() ? "" : ",", st.start_epoch, st.batch);
  if (adaptive_)
    stages = fmt::format("adaptive (the batch of the largest goodput among {} sizes {}..{}, decided every {} steps; "
                         "LR by {}; step time {}) from {}",
                         ad_.candidates.size(), ad_.candidates.front(), ad_.candidates.back(), config_.adaptive_every,
                         ad_.adascale ? "AdaScale's gain" : fmt::format("lr_rule {}", schedule::to_string(config_.lr_rule)),
                         ad_.measured ? "measured in this run"
                                      : fmt::format("given: {:g} + {:g} x batch/ranks s", ad_.model.alpha, ad_.model.beta),
                         config_.batch_size);
  std::string precision;
  if (config_.precision == "bf16" && ctx_.kernels == "onednn") {
    precision = " " + kernels::bf16_path_description(config_.bf16_kernels == "emulated");
    // Native bf16 can be the slower choice (Intel's AVX512-BF16 without AMX): say so, measured
    // (on rank 0 only, which alone writes the log). With AMX oneDNN's bf16 kernels use its
    // tiles, which this instruction does not measure. Below 0.75x the halved memory traffic
    // of bf16 cannot make up for the arithmetic (0.5x measured gave 0.5-0.6x steps).
    if (ctx_.comm->rank() == 0 && precision_path() == "native" && !kernels::onednn_has_amx())
      if (const kernels::Bf16Peak peak = kernels::measure_bf16_peak(); peak.measured && peak.ratio() < 0.75)
        precision += fmt::format(" [{}, so native bf16 is likely slower than fp32 here; bf16_kernels: emulated "
                                 "computes the same numbers up to accumulation order at about the fp32 rate]",
                                 kernels::describe(peak));
  } else if (config_.precision != "fp32") {
    precision = " " + config_.precision + " " + precision_path();
  }
  return report(protocol::RecordKind::log, 0, {},
                fmt::format("dlsweep-train: {} {} ({} parameters), {}{} {} train / {} test, batch {} on {} rank(s) "
                            "({} comm), {} steps/epoch, {} steps, lr {:g} ({} rule from {:g} at batch {}, warmup {} "
                            "steps from {}, decay {}{}), optimizer {}, batch stages {}{}, {} kernels on {}, {}, {} thread(s)",
                            model_->name(),
                            (config_.model == "mlp" ? layer_sizes(train.features, config_.hidden, train.classes)
                                                    : fmt::format("{}x{}x{}->{}", train.channels, train.height,
                                                                  train.width, train.classes)) +
                                precision,
                            model_->parameters().count(), config_.dataset,
                            config_.standardize && config_.dataset != "cifar10" ? " (standardised)" : "", train.size,
                            data_.test.size,
                            config_.batch_size, ctx_.comm->size(), ctx_.comm->name(),
                            adaptive_ ? std::string("(adaptive)") : std::to_string(steps_per_epoch_),
                            adaptive_ ? std::string("(adaptive)") : std::to_string(total_steps_),
                            lr_.target_lr, schedule::to_string(config_.lr_rule), lr_.base_lr, config_.base_batch,
                            lr_.warmup_steps, schedule::to_string(config_.warmup_start),
                            schedule::to_string(lr_.decay.kind),
                            config_.lr_schedule == "none" ? "" : ", base lr by epoch " + config_.lr_schedule,
                            optimizer_->name(), stages,
                            end_step_ < total_steps_
                                ? fmt::format(", stopping at step {} (epoch {:g})", end_step_, config_.stop_epoch)
                                : "",
                            ctx_.kernels, kernels_->device_description(),
                            kernels::backend_version(), kernels::compute_threads()));
}

Trainer::EvalStats Trainer::evaluate() {
  // This rank's contiguous share of the test set; the caller reduces the sums.
  const data::Dataset& d = data_.test;
  const std::int64_t ranks = ctx_.comm->size(), rank = ctx_.comm->rank();
  const std::int64_t lo = d.size * rank / ranks, hi = d.size * (rank + 1) / ranks;
  std::vector<std::int32_t> labels(static_cast<std::size_t>(std::min(kEvalBatch, std::max<std::int64_t>(1, hi - lo))));
  double loss = 0;
  std::int64_t correct = 0;
  for (std::int64_t first = lo; first < hi; first += kEvalBatch) {
    const std::int64_t n = std::min(kEvalBatch, hi - first);
    const std::int32_t* lab = labels.data();
    if (device_data_) lab = device_data_->gather_range(1, first, n, model_->input(n, models::Mode::eval));
    else data::gather_range(d, first, model_->input(n, models::Mode::eval), labels.data());
    auto st = kernels_->softmax_cross_entropy(model_->forward(n, models::Mode::eval), lab, 1.0f, {});
    loss += st.loss_sum;
    correct += st.correct;
  }
  return {loss, static_cast<double>(correct)};
}

Status Trainer::evaluate_and_report(std::int64_t step, double lr, std::int64_t batch) {
  const auto te = clock_type::now();
  const EvalStats ev = evaluate();
  double sums[8] = {iv_.loss_sum, iv_.correct, iv_.seen, iv_.t_compute, iv_.t_data, iv_.t_comm, ev.loss, ev.acc};
  if (auto s = ctx_.comm->allreduce_sum(std::span<double>(sums)); !s) return s;
  const double ranks = ctx_.comm->size(), test_n = static_cast<double>(data_.test.size);
  const double train_time = (sums[3] + sums[4] + sums[5]) / ranks;
  std::map<std::string, double> m = {{"train_loss", sums[0] / sums[2]},
                                     {"train_acc", sums[1] / sums[2]},
                                     {"val_loss", sums[6] / test_n},
                                     {"val_acc", sums[7] / test_n},
                                     {"lr", lr},
                                     {"batch_size", static_cast<double>(batch)},
                                     {"samples_per_s", train_time > 0 ? sums[2] / train_time : 0.0},
                                     {"time_compute_s", sums[3] / ranks},
                                     {"time_data_s", sums[4] / ranks},
                                     {"time_allreduce_exposed_s", sums[5] / ranks},
                                     {"time_eval_s", seconds_since(te)}};
  if (auto g = noise_.grad_norm_sq()) m["grad_norm_sq"] = *g;
  if (auto t = noise_.trace_sigma()) m["grad_trace_sigma"] = *t;
  if (auto b = noise_.noise_scale()) m["grad_noise_scale"] = *b;
  // Which bf16 path ran (1 native bf16 kernels, 0 emulated by rounding), also as the record's
  // text "precision_path=native|emulated" (metrics are numbers); both absent in fp32.
  if (scaler_) {
    m["loss_scale"] = scaler_->scale();
    m["skipped_steps"] = static_cast<double>(scaler_->skipped_steps());
  }
  const std::string path = precision_path();
  if (!path.empty()) m["bf16_native"] = path == "native" ? 1.0 : 0.0;
  last_metrics_ = m;
  iv_ = Interval{};
  if (auto s = report(protocol::RecordKind::eval, step, m, path.empty() ? "" : "precision_path=" + path); !s)
    return s;
  if (ctx_.progress && ctx_.comm->rank() == 0) {
    std::fprintf(ctx_.progress,
                 "epoch %7.2f  step %7lld  train_loss %.4f  train_acc %.4f  val_loss %.4f  val_acc %.4f  "
                 "lr %.4g  batch %lld  %.0f samples/s\n",
                 epoch_after(step), static_cast<long long>(step), m["train_loss"], m["train_acc"], m["val_loss"],
                 m["val_acc"], lr, static_cast<long long>(batch), m["samples_per_s"]);
    std::fflush(ctx_.progress);
  }
  return {};
}

Trainer::StepStats Trainer::forward_part(const std::uint32_t* idx, std::int64_t n, std::int64_t batch) {
  const auto t0 = clock_type::now();
  const std::int32_t* lab = labels_.data();
  if (device_data_) lab = device_data_->gather(0, idx, n, model_->input(n, models::Mode::train));
  else
    data::gather(data_.train, std::span<const std::uint32_t>(idx, static_cast<std::size_t>(n)),
                 model_->input(n, models::Mode::train), labels_.data(), order_epoch_);
  const auto t1 = clock_type::now();
  auto logits = model_->forward(n, models::Mode::train);
  const double loss_scale = scaler_ ? scaler_->scale() : 1.0;
  auto st = kernels_->softmax_cross_entropy(logits, lab, static_cast<float>(loss_scale / static_cast<double>(batch)),
                                            model_->logits_grad(n));
  iv_.t_data += std::chrono::duration<double>(t1 - t0).count();
  iv_.t_compute += seconds_since(t1);
  return {st.loss_sum, st.correct};
}

void Trainer::unscale_grads() {
  if (!scaler_) return;
  auto& params = model_->parameters();
  params.memory().scale(params.grads(), static_cast<float>(scaler_->inverse_scale()), params.arena_size());
}

bool Trainer::loss_scale_step_ok() {
  if (!scaler_) return true;
  auto& params = model_->parameters();
  // After the allreduce every rank holds the same gradients, so every rank decides alike.
  const bool found_inf = params.memory().any_nonfinite(params.grads(), params.arena_size());
  return scaler_->update(found_inf);
}

Trainer::StepStats Trainer::split_step(const std::uint32_t* idx, std::int64_t b, std::int64_t batch) {
  auto& params = model_->parameters();
  kernels::Memory& mem = params.memory();
  const std::int64_t size = params.arena_size(), n1 = b / 2, n2 = b - n1;
  if (grad_acc_.size() != size) grad_acc_ = mem.allocate(size);
  float* g = params.grads();
  float* acc = grad_acc_.data();
  StepStats st = forward_part(idx, n1, batch);
  auto t0 = clock_type::now();
  model_->backward(n1);
  unscale_grads();
  mem.copy(acc, g, size);
  const double g1 = mem.sum_squares(acc, size);
  iv_.t_compute += seconds_since(t0);
  const StepStats st2 = forward_part(idx + n1, n2, batch);
  t0 = clock_type::now();
  model_->backward(n2);
  unscale_grads();
  const double g2 = mem.sum_squares(g, size);
  mem.add(g, acc, size);
  const double big = mem.sum_squares(g, size);
  // Each half's gradient is scaled by 1/batch: its mean gradient is batch/n_i times it.
  const double bb = static_cast<double>(batch), r1 = bb / static_cast<double>(n1), r2 = bb / static_cast<double>(n2);
  const double small = 0.5 * (r1 * r1 * g1 + r2 * r2 * g2);
  const double b_small = 2.0 / (1.0 / static_cast<double>(n1) + 1.0 / static_cast<double>(n2));
  noise_.add(small, b_small, big, bb);
  iv_.t_compute += seconds_since(t0);
  st.loss_sum += st2.loss_sum;
  st.correct += st2.correct;
  return st;
}

Result<TrainResult> Trainer::run() {
  const std::int64_t rank = ctx_.comm->rank(), ranks = ctx_.comm->size();
  if (auto s = log_start(); !s) return std::unexpected(s.error());
  TrainResult result;
  auto resumed = resume();
  if (!resumed) return std::unexpected(resumed.error());
  result.resumed_from = *resumed;
  if (ranks > 1)
    if (auto s = broadcast_state(); !s) return std::unexpected(s.error());
  const std::int64_t first_step = std::max<std::int64_t>(0, *resumed);

  const bool measure_enabled = config_.noise_scale_every > 0;
  for (const auto& st : plan_.stages()) {
    if (adaptive_) break;  // adaptive: each batch's net is built on first use
    const std::int64_t b = st.batch / ranks;
    model_->prepare(b, models::Mode::train);
    if (measure_enabled && ranks == 1 && b >= 2) {
      model_->prepare(b / 2, models::Mode::train);
      model_->prepare(b - b / 2, models::Mode::train);
    }
  }
  order_.resize(static_cast<std::size_t>(data_.train.size));
  order_epoch_ = -1;
  labels_.resize(static_cast<std::size_t>((adaptive_ ? ad_.candidates.back() : plan_.max_batch()) / ranks));
  if (adaptive_)
    if (auto s = adaptive_profile(); !s) return std::unexpected(s.error());
  // The run's last update: end_step_, or under batch_ramp adaptive where its layout reaches
  // the end (known only as the run goes).
  auto ends_after = [&](std::int64_t step) { return adaptive_ ? adaptive_done(step) : step >= end_step_; };
  const auto& params = model_->parameters();
  // fp16: every gradient must be known finite before any is applied, so no per-layer update.
  const bool fused_update = ranks == 1 && optimizer_->supports_partial_step() && !scaler_;

  double lr = adaptive_ ? adaptive_lr_at(first_step) : lr_.at(first_step);
  std::int64_t batch = position(first_step).batch;
  // One rank: each layer is updated as soon as its gradients are final, while they are still
  // in cache. Built once: it reads the current `lr` by reference.
  const models::GradReadyFn update_layer = [&](std::span<const std::size_t> tensors) {
    optimizer_->step(lr, tensors);
  };
  const models::GradReadyFn sync_ready = [&](std::span<const std::size_t> tensors) { sync_->ready(tensors); };
  auto last_checkpoint = clock_type::now();

  // stop_epoch: the run ends at end_step_ (evaluation, checkpoint, final record) on the
  // schedule of the whole run.
  const bool stop_at_epoch = config_.stop_epoch > 0;
  std::int64_t step = first_step;
  while (!ends_after(step)) {
    const auto t_step = clock_type::now();
    if (adaptive_ && step > 0 && step % config_.adaptive_every == 0)
      if (auto s = adaptive_decide(step); !s) return std::unexpected(s.error());
    // Requests are polled before the step and acted on after it (the step in progress ends).
    double flags[3] = {0, 0, 0};  // {stop (pruned), stop with checkpoint (signal), timer checkpoint}
    std::string reason;
    if (ctx_.stop)
      if (auto req = ctx_.stop->poll()) {
        flags[req->checkpoint ? 1 : 0] = 1;
        reason = req->reason;
      }
    if (rank == 0 && config_.checkpoint_every_s > 0 && !ctx_.checkpoint_dir.empty() &&
        seconds_since(last_checkpoint) >= config_.checkpoint_every_s)
      flags[2] = 1;

    const schedule::DataPosition pos = position(step);
    batch = pos.batch;
    const std::int64_t b = batch / ranks;
    if (pos.epoch != order_epoch_) {
      const auto t0 = clock_type::now();
      data::epoch_order(data_seed(config_.seed, config_.branch_seed), pos.epoch, order_);
      order_epoch_ = pos.epoch;
      iv_.t_data += seconds_since(t0);
    }
    const std::uint32_t* idx = order_.data() + pos.offset + rank * b;
    if (const auto n = static_cast<std::int64_t>(order_.size()); pos.offset + batch > n) {
      // batch_ramp adaptive: the batch continues at the start of the next epoch's permutation
      // (adaptive_batch.hpp; batch <= N, so two at most); its samples are gathered as that epoch's.
      const auto t0 = clock_type::now();
      straddle_.assign(order_.begin() + pos.offset, order_.end());
      data::epoch_order(data_seed(config_.seed, config_.branch_seed), pos.epoch + 1, order_);
      order_epoch_ = pos.epoch + 1;
      straddle_.insert(straddle_.end(), order_.begin(), order_.begin() + (pos.offset + batch - n));
      idx = straddle_.data() + rank * b;
      iv_.t_data += seconds_since(t0);
    }
    lr = adaptive_ ? adaptive_lr_at(step) : lr_.at(step);
    const bool measure = measure_enabled && step % config_.noise_scale_every == 0;
    const bool split = measure && ranks == 1 && b >= 2;

    const StepStats st = split ? split_step(idx, b, batch) : forward_part(idx, b, batch);
    // The loss (divergence) and the stop flags are agreed on by all ranks in one reduction.
    auto tc = clock_type::now();
    double agreed[4] = {st.loss_sum, flags[0], flags[1], flags[2]};
    if (auto s = ctx_.comm->allreduce_sum(std::span<double>(agreed)); !s) return std::unexpected(s.error());
    iv_.t_comm += seconds_since(tc);
    if (!std::isfinite(agreed[0])) {
      result.status = TrainStatus::diverged;
      result.steps = step;
      result.message = fmt::format("diverged: the training loss became non-finite at step {} (epoch {:.2f}, "
                                   "lr {:g}); the update was not applied",
                                   step, epoch_after(step), lr);
      if (auto s = report(protocol::RecordKind::log, step, {{"lr", lr}}, result.message); !s)
        return std::unexpected(s.error());
      if (auto s = ctx_.comm->barrier(); !s) return std::unexpected(s.error());
      return result;
    }
    tc = clock_type::now();
    double comm_in_update = 0;  // waiting inside the update block is communication, not compute
    if (split) {
      if (loss_scale_step_ok()) optimizer_->step(lr);
    } else if (ranks == 1) {
      if (fused_update) model_->backward(b, update_layer);
      else {
        model_->backward(b);
        unscale_grads();
        if (loss_scale_step_ok()) optimizer_->step(lr);
      }
    } else {
      const double inv_scale = scaler_ ? scaler_->inverse_scale() : 1.0;
      sync_->begin(measure);
      model_->backward(b, sync_ready);
      auto waited = sync_->finish();
      if (!waited) return std::unexpected(waited.error());
      iv_.t_comm += *waited;
      comm_in_update += *waited;
      unscale_grads();
      if (measure) {
        // |G_small|² = mean over ranks of |P · local|² (the local gradient is scaled by 1/B,
        // and by the loss scale under fp16).
        const auto tm = clock_type::now();
        double small[1] = {static_cast<double>(ranks * ranks) * sync_->local_norm_sq() * inv_scale * inv_scale /
                           static_cast<double>(ranks)};
        if (auto s = ctx_.comm->allreduce_sum(std::span<double>(small)); !s) return std::unexpected(s.error());
        iv_.t_comm += seconds_since(tm);
        comm_in_update += seconds_since(tm);
        const double big = params.memory().sum_squares(params.grads(), params.arena_size());
        noise_.add(small[0], static_cast<double>(b), big, static_cast<double>(batch));
      }
      if (loss_scale_step_ok()) optimizer_->step(lr);
    }
    iv_.t_compute += seconds_since(tc) - comm_in_update;
    if (adaptive_) adaptive_step_timed(b, seconds_since(t_step));
    const bool eval_now = adaptive_ ? adaptive_eval_after(step)
                                    : plan_.eval_after(step, config_.eval_every) || step + 1 == end_step_;
    ++step;
    iv_.loss_sum += st.loss_sum;
    iv_.correct += static_cast<double>(st.correct);
    iv_.seen += static_cast<double>(b);

    if (eval_now)
      if (auto s = evaluate_and_report(step, lr, batch); !s) return std::unexpected(s.error());
    const bool stop = agreed[1] > 0 || agreed[2] > 0;
    const bool end_checkpoint = stop_at_epoch && ends_after(step);
    if (((agreed[2] > 0 || agreed[3] > 0) && !ends_after(step)) || end_checkpoint)
      if (!ctx_.checkpoint_dir.empty()) {
        // At a stop_epoch the final record follows the checkpoint's: a run resumed in this
        // directory continues after both.
        auto path = save_checkpoint(step, end_checkpoint ? 1 : 0);
        if (!path) return std::unexpected(path.error());
        result.checkpoint = *path;
        last_checkpoint = clock_type::now();
      }
    if (stop && !ends_after(step)) {
      result.status = TrainStatus::stopped;
      result.steps = step;
      result.metrics = last_metrics_;
      result.message = fmt::format("stopped on request ({}) after step {}{}", reason.empty() ? "seen by another rank" : reason,
                                   step, result.checkpoint.empty() ? "" : "; checkpoint " + result.checkpoint);
      if (auto s = report(protocol::RecordKind::log, step, {}, result.message); !s) return std::unexpected(s.error());
      if (auto s = ctx_.comm->barrier(); !s) return std::unexpected(s.error());  // rank 0 finishes writing
      return result;
    }
  }
  result.steps = step;
  result.metrics = last_metrics_;
  if (auto s = report(protocol::RecordKind::final, step, result.metrics); !s) return std::unexpected(s.error());
  return result;
}

}  // namespace dlsweep::trainer
