// train_config.hpp — params.json → TrainConfig. Every key must be in the parameter table
// (train_params.hpp); absent keys take the table's defaults; each value is checked with
// check_param_value. Errors name the file and key ("trial/params.json: batch_size") and the fix.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "trainer/data/datasets.hpp"
#include "trainer/schedule/lr_schedule.hpp"

namespace dlsweep::trainer {

/// The resolved settings of one training run (one field per parameter-table entry).
struct TrainConfig {
  std::string model = "mlp";
  std::vector<std::int64_t> hidden = {512, 512};
  std::string dataset = "fashion-mnist";
  std::string data_dir;              ///< empty = the dataset's default directory
  bool augment = false;
  bool standardize = false;          ///< inputs (x - mean) / std with the training set's stats
  std::string device = "cpu";        ///< cpu | cuda | auto (where the run trains)
  std::string precision = "fp32";
  bool deterministic = true;  ///< cuda tensor-core nets: deterministic convolution algorithms only
  std::string bf16_kernels = "auto";  ///< auto | native | emulated: how precision bf16 runs
  std::int64_t train_subset = 0;
  std::int64_t test_subset = 0;
  double epochs = 10;
  double eval_every = 1;
  std::int64_t batch_size = 128;
  std::int64_t base_batch = 128;
  double base_lr = 0.1;
  schedule::LrRule lr_rule = schedule::LrRule::linear;
  double warmup_epochs = 0;
  schedule::WarmupStart warmup_start = schedule::WarmupStart::base;
  std::int64_t warmup_steps = 0;     ///< > 0: warmup length in updates (warmup_epochs must be 0)
  schedule::Decay decay = schedule::Decay::constant;
  std::vector<double> decay_milestones;  ///< epochs; empty = 50% and 75% of `epochs`
  double decay_factor = 0.1;
  double lr_floor = 0;               ///< fraction of the peak LR
  double decay_power = 2;
  std::string batch_ramp = "none";   ///< checked by schedule::parse_batch_ramp
  std::string lr_schedule = "none";  ///< base LR by epoch (replaces base_lr); schedule::parse_lr_schedule
  double stop_epoch = 0;             ///< > 0: end there (eval, checkpoint, final); the LR stays the full run's
  std::int64_t max_batch_size = 0;   ///< 0 = training set size
  // batch_ramp adaptive (trainer/schedule/adaptive_batch.hpp)
  std::int64_t adaptive_max_batch = 0;  ///< 0 = 16·batch_size (at most the training set)
  std::int64_t adaptive_min_batch = 0;  ///< 0 = batch_size
  std::int64_t adaptive_every = 50;     ///< updates between decisions
  std::string adaptive_lr = "adascale"; ///< adascale | rule (lr_rule)
  std::vector<double> adaptive_step_time;  ///< [alpha, beta] fixed step-time model; empty = measured
  std::string optimizer = "sgd";
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0;
  bool momentum_correction = true;
  bool decay_bias_norm = false;
  double beta1 = 0.9, beta2 = 0.999, adam_eps = 1e-8, lamb_eps = 1e-6;
  double lars_trust_coefficient = 0.001, lars_eps = 0;
  bool lars_exclude_bias_norm = true;
  double larc_trust_coefficient = 0.02, larc_eps = 1e-8;
  std::string larc_mode = "clip";
  std::uint64_t seed = 0;
  /// 0, or the data order is that of data_seed(seed, branch_seed): free in a checkpoint's
  /// fingerprint, so a branch resumed from its trunk's checkpoint sees the data anew from there.
  std::uint64_t branch_seed = 0;
  int threads = 1;
  int ranks = 1;  ///< ranks dlsweep launched the trial with (informational; the communicator knows the real count)
  std::string comm = "auto";
  double bucket_mb = 4;
  std::int64_t noise_scale_every = 10;
  double noise_scale_ema = 0.95;
  double checkpoint_every_s = 300;
};

/// Parses a params object. `where` names its source (the file) in errors.
Result<TrainConfig> parse_train_config(const nlohmann::json& params, const std::string& where);

/// Reads and parses a params.json file.
Result<TrainConfig> load_train_config(const std::filesystem::path& file);

/// The step-decay / Smith-ramp milestones in epochs: decay_milestones, or 50% and 75% of
/// the training length when that list is empty.
std::vector<double> effective_milestones(const TrainConfig& c);

/// What load_data needs for this run: dataset, directory, subsets, seed, augmentation,
/// standardisation, and for synthetic data the model's input shape.
data::DataSpec data_spec(const TrainConfig& c);

/// The config as a flat params object (every key present), e.g. to log what a run used.
nlohmann::json to_json(const TrainConfig& c);

}  // namespace dlsweep::trainer
