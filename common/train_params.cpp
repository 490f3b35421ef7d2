#include "common/train_params.hpp"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/batch_ramp.hpp"

namespace dlsweep::trainer {

namespace {

using T = ParamInfo::Type;
using nlohmann::json;

// The table. Defaults here are what dlsweep-train uses when params.json omits a key.
const std::vector<ParamInfo>& table() {
  static const std::vector<ParamInfo> t = {
      {"model", T::string, "mlp", {"mlp", "cnn", "resnet8", "resnet20"}, 0, 0, false,
       "network: MLP, the small CNN (2 conv + 2 fc), ResNet-8/20 (batch norm)"},
      {"hidden", T::int_list, json::array({512, 512}), {}, 1, 65536, false,
       "hidden layer widths of the MLP"},
      {"dataset", T::string, "fashion-mnist", {"fashion-mnist", "cifar10", "synthetic"}, 0, 0, false,
       "training data (synthetic: shaped like the model's input)"},
      {"data_dir", T::string, "", {}, 0, 0, false,
       "directory of the dataset files (default: $DLSWEEP_FMNIST_DIR or the Debian package's for "
       "fashion-mnist, $DLSWEEP_CIFAR10_DIR for cifar10)"},
      {"augment", T::boolean, false, {}, 0, 0, false,
       "random crop (pad 4) and horizontal flip of training images, seeded per (seed, epoch, sample)"},
      {"standardize", T::boolean, false, {}, 0, 0, false,
       "fashion-mnist/synthetic inputs as (x - mean) / std with the training set's mean and std (false: "
       "pixels scaled to [0, 1]); cifar10 is always standardised per channel"},
      {"device", T::string, "cpu", {"cpu", "cuda", "auto"}, 0, 0, false,
       "where the trial trains: cpu (oneDNN), cuda (the rank's GPU; CUDA builds), auto (cuda when the build "
       "has CUDA and a GPU answers, else cpu); the first log line says which device ran"},
      {"precision", T::string, "fp32", {"fp32", "bf16", "tf32", "fp16"}, 0, 0, false,
       "arithmetic of activations and weight copies (bf16: fp32 master weights and accumulation, cpu and cuda; "
       "tf32: tensor-core GEMMs on 10-bit mantissas with fp32 accumulation, device cuda only; fp16: as bf16 with "
       "half and dynamic loss scaling, device cuda only)"},
      {"deterministic", T::boolean, true, {}, 0, 0, false,
       "device cuda, precisions tf32/bf16/fp16: true (the default) takes cuDNN's fastest deterministic "
       "convolution algorithms, so a run repeats bit for bit; false allows its fastest of all (as PyTorch's "
       "default does). fp32 and the CPU are always deterministic"},
      {"bf16_kernels", T::string, "auto", {"auto", "native", "emulated"}, 0, 0, false,
       "how precision bf16 runs: auto (oneDNN's bf16 kernels where the CPU has them, else emulated), native "
       "(refuse to start without them), emulated (fp32 kernels on bf16-rounded operands: the same numbers up to "
       "accumulation order; faster than native on CPUs whose bf16 dot product is slower than their fp32 FMA); "
       "ignored in fp32"},
      {"train_subset", T::integer, 0, {}, 0, 60000, false,
       "use only the first N training images (0 = all)"},
      {"test_subset", T::integer, 0, {}, 0, 10000, false,
       "evaluate on only the first N test images (0 = all)"},
      {"epochs", T::number, 10, {}, 0, 10000, true, "training length in epochs"},
      {"eval_every", T::number, 1, {}, 0, 10000, true, "epochs between evaluations"},
      {"batch_size", T::integer, 128, {}, 1, 1 << 24, false, "global batch size B"},
      {"base_batch", T::integer, 128, {}, 1, 1 << 24, false,
       "reference batch B0 at which base_lr was tuned"},
      {"base_lr", T::number, 0.1, {}, 0, 1e6, true, "learning rate at the reference batch"},
      {"lr_rule", T::string, "linear", {"linear", "sqrt", "none"}, 0, 0, false,
       "LR scaling from base_batch to batch_size"},
      {"warmup_epochs", T::number, 0, {}, 0, 10000, false, "length of the linear warmup"},
      {"warmup_start", T::string, "base", {"base", "zero"}, 0, 0, false,
       "warmup starts at base_lr (Goyal) or at 0"},
      {"warmup_steps", T::integer, 0, {}, 0, 1e12, false,
       "warmup length in updates (instead of warmup_epochs; 0 = use warmup_epochs)"},
      {"decay", T::string, "constant", {"constant", "step", "cosine", "poly"}, 0, 0, false,
       "LR decay after warmup, over the rest of training"},
      {"decay_milestones", T::number_list, json::array(), {}, 0, 10000, false,
       "epochs at which decay=step multiplies the LR by decay_factor (empty: 50% and 75% of epochs)"},
      {"decay_factor", T::number, 0.1, {}, 0, 1, true, "LR multiplier per step-decay milestone"},
      {"lr_floor", T::number, 0, {}, 0, 1, false,
       "final LR of cosine/poly decay as a fraction of the peak LR"},
      {"decay_power", T::number, 2, {}, 0, 100, true, "exponent of poly decay (LARS paper: 2)"},
      {"batch_ramp", T::string, "none", {}, 0, 0, false,
       "batch-size ramp: none, smith (step-decay milestones become batch increases), or "
       "stages \"EPOCH:BATCH,...\" e.g. \"0:256,2:1024\""},
      {"lr_schedule", T::string, "none", {}, 0, 0, false,
       "piecewise-constant base LR by epoch, \"EPOCH:LR,...\" e.g. \"0:0.1,2:0.05\" (first at 0; replaces "
       "base_lr; lr_rule, warmup and decay apply on top), or none"},
      {"stop_epoch", T::number, 0, {}, 0, 10000, false,
       "stop at this epoch (<= epochs) with an evaluation, a checkpoint and the final record; the LR "
       "schedule stays that of the full `epochs` run (0 = no early stop; population-based training)"},
      {"max_batch_size", T::integer, 0, {}, 0, 1 << 24, false,
       "largest batch a smith ramp may reach; LR decay takes over beyond it (0 = training set size)"},
      {"adaptive_max_batch", T::integer, 0, {}, 0, 1 << 24, false,
       "batch_ramp adaptive: the largest global batch it may pick (0 = 16 x batch_size, at most the training set)"},
      {"adaptive_min_batch", T::integer, 0, {}, 0, 1 << 24, false,
       "batch_ramp adaptive: the smallest global batch it may pick (0 = batch_size)"},
      {"adaptive_every", T::integer, 50, {}, 1, 1e9, false,
       "batch_ramp adaptive: updates between batch decisions (each picks the batch of the largest goodput)"},
      {"adaptive_lr", T::string, "adascale", {"adascale", "rule"}, 0, 0, false,
       "batch_ramp adaptive: the LR follows AdaScale's gain for the chosen batch (adascale) or lr_rule (rule)"},
      {"adaptive_step_time", T::number_list, json::array(), {}, 0, 1e6, false,
       "batch_ramp adaptive: [alpha, beta], a fixed step-time model T = alpha + beta x (batch/ranks) seconds "
       "(reproducible decisions); empty = measure it in the run"},
      {"optimizer", T::string, "sgd", {"sgd", "adam", "adamw", "lars", "larc", "lamb"}, 0, 0, false,
       "optimizer (docs/math.md gives each one's exact update)"},
      {"momentum", T::number, 0.9, {}, 0, 1, false, "momentum coefficient (< 1) of sgd, lars, larc"},
      {"nesterov", T::boolean, false, {}, 0, 0, false, "Nesterov momentum (sgd, lars, larc)"},
      {"momentum_correction", T::boolean, true, {}, 0, 0, false,
       "scale the velocity by lr_t/lr_(t-1) when the LR changes (sgd, lars, larc; Goyal et al.)"},
      {"weight_decay", T::number, 0, {}, 0, 1, false,
       "weight decay: L2 in the gradient (sgd, adam, lars, larc, lamb's ratio), decoupled (adamw)"},
      {"decay_bias_norm", T::boolean, false, {}, 0, 0, false,
       "apply weight decay to biases and normalisation parameters too"},
      {"beta1", T::number, 0.9, {}, 0, 1, false, "first-moment decay (< 1) of adam, adamw, lamb"},
      {"beta2", T::number, 0.999, {}, 0, 1, false, "second-moment decay (< 1) of adam, adamw, lamb"},
      {"adam_eps", T::number, 1e-8, {}, 0, 1, true, "epsilon of adam and adamw"},
      {"lamb_eps", T::number, 1e-6, {}, 0, 1, true, "epsilon of lamb"},
      {"lars_trust_coefficient", T::number, 0.001, {}, 0, 100, true, "LARS trust coefficient eta"},
      {"lars_eps", T::number, 0, {}, 0, 1, false, "added to the LARS trust-ratio denominator"},
      {"lars_exclude_bias_norm", T::boolean, true, {}, 0, 0, false,
       "LARS: plain momentum for biases/norm parameters (TF contrib) instead of the trust ratio"},
      {"larc_trust_coefficient", T::number, 0.02, {}, 0, 100, true, "LARC trust coefficient (apex)"},
      {"larc_mode", T::string, "clip", {"clip", "scale"}, 0, 0, false,
       "LARC: clip the layer rate at lr (apex clip=True) or scale lr by the trust ratio"},
      {"larc_eps", T::number, 1e-8, {}, 0, 1, false, "added to the LARC trust-ratio denominator"},
      {"seed", T::integer, 0, {}, 0, 4294967295.0, false, "seed of init and data order"},
      {"branch_seed", T::integer, 0, {}, 0, 4294967295.0, false,
       "0, or the data order from a resumed checkpoint on is shuffled anew by (seed, branch_seed): a branching "
       "study's branches (set by dlsweep)"},
      {"threads", T::integer, 1, {}, 1, 1024, false, "compute threads per rank"},
      {"ranks", T::integer, 1, {}, 1, 1048576, false,
       "MPI ranks of the trial: dlsweep launches this many (use instead of trial.ranks to search over it)"},
      {"comm", T::string, "auto", {"auto", "local", "mpi", "nccl", "nccl-hierarchical"}, 0, 0, false,
       "collectives: mpi when started by mpirun/srun with more than one rank (auto), or forced; nccl "
       "(CUDA builds; README \"GPU\")"},
      {"bucket_mb", T::number, 4, {}, 0, 4096, true,
       "gradient allreduce bucket size in MiB (each bucket starts as soon as backward fills it)"},
      {"noise_scale_every", T::integer, 10, {}, 0, 1e9, false,
       "measure the gradient noise scale every N updates (0 = never)"},
      {"noise_scale_ema", T::number, 0.95, {}, 0, 1, false,
       "moving-average decay (< 1) of the noise-scale estimates"},
      {"checkpoint_every_s", T::number, 300, {}, 0, 1e9, false,
       "seconds between checkpoints (0 = only on SIGUSR2/SIGTERM)"},
  };
  return t;
}

std::string type_name(T t) {
  switch (t) {
    case T::integer: return "an integer";
    case T::number: return "a number";
    case T::string: return "a string";
    case T::boolean: return "true or false";
    case T::int_list: return "a list of integers";
    case T::number_list: return "a list of numbers";
  }
  return "a value";
}

// Integers print as integers ("[1, 16777216]"), numbers with enough digits to be exact.
std::string bound_text(double v) { return fmt::format("{:.15g}", v); }

Status check_bounds(const ParamInfo& info, double v) {
  bool low_ok = info.min_exclusive ? v > info.min : v >= info.min;
  if (!low_ok || v > info.max || !std::isfinite(v)) {
    std::string range = fmt::format("{}{}, {}]", info.min_exclusive ? "(" : "[", bound_text(info.min),
                                    bound_text(info.max));
    return fail(fmt::format("{:g} is out of range for {}", v, info.name), "",
                fmt::format("use a value in {}", range));
  }
  return {};
}

}  // namespace

std::span<const ParamInfo> param_table() { return table(); }

std::span<const std::string_view> reported_metrics() {
  static constexpr std::string_view metrics[] = {"val_acc", "val_loss", "train_loss", "train_acc"};
  return metrics;
}

const ParamInfo* find_param(const std::string& name) {
  for (const auto& p : table())
    if (p.name == name) return &p;
  return nullptr;
}

Status check_param_value(const ParamInfo& info, const json& value) {
  auto wrong_type = [&] {
    return fail(fmt::format("{} must be {}, got {}", info.name, type_name(info.type), value.dump()), "",
                fmt::format("write {} ({})", type_name(info.type), info.help));
  };
  switch (info.type) {
    case T::integer: {
      bool integral = value.is_number_integer() ||
                      (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>());
      if (!integral) return wrong_type();
      return check_bounds(info, value.get<double>());
    }
    case T::number:
      if (!value.is_number()) return wrong_type();
      if ((info.name == "momentum" || info.name == "beta1" || info.name == "beta2" ||
           info.name == "noise_scale_ema") &&
          value.get<double>() >= 1.0)
        return fail(fmt::format("{} must be below 1", info.name), "", "use a value in [0, 1)");
      return check_bounds(info, value.get<double>());
    case T::boolean:
      if (!value.is_boolean()) return wrong_type();
      return {};
    case T::string: {
      if (!value.is_string()) return wrong_type();
      if (info.name == "batch_ramp") {
        auto ramp = schedule::parse_batch_ramp(value.get<std::string>());
        if (!ramp) return fail(ramp.error().what, "", ramp.error().fix);
        return {};
      }
      if (info.name == "lr_schedule") {
        auto stages = schedule::parse_lr_schedule(value.get<std::string>());
        if (!stages) return fail(stages.error().what, "", stages.error().fix);
        return {};
      }
      if (info.allowed.empty()) return {};
      auto s = value.get<std::string>();
      for (const auto& a : info.allowed)
        if (a == s) return {};
      return fail(fmt::format("'{}' is not a valid {}", s, info.name), "",
                  fmt::format("use one of: {}", fmt::join(info.allowed, ", ")));
    }
    case T::number_list:
      if (!value.is_array()) return wrong_type();
      for (const auto& item : value) {
        if (!item.is_number()) return wrong_type();
        if (auto s = check_bounds(info, item.get<double>()); !s) return s;
      }
      if (info.name == "adaptive_step_time" && !value.empty() &&
          (value.size() != 2 || !(value[0].get<double>() + value[1].get<double>() > 0)))
        return fail(fmt::format("adaptive_step_time must be [] or [alpha, beta] with alpha + beta > 0, got {}",
                                value.dump()),
                    "", "write [alpha, beta] (seconds per step = alpha + beta x per-rank batch), e.g. [0.002, 0.00001], "
                        "or [] to measure the step time in the run");
      return {};
    case T::int_list: {
      if (!value.is_array() || value.empty()) return wrong_type();
      for (const auto& item : value) {
        if (!item.is_number_integer()) return wrong_type();
        if (auto s = check_bounds(info, item.get<double>()); !s) return s;
      }
      return {};
    }
  }
  return {};
}

}  // namespace dlsweep::trainer
