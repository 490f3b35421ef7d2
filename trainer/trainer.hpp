// trainer.hpp — the training loop of dlsweep-train: data-parallel minibatch training over a
// Communicator, the LR schedule and batch plan of schedule/, evaluation every `eval_every`
// epochs, protocol records to a Reporter, stop requests from a StopMonitor, checkpoints.
//
// Semantics (what a record's numbers mean):
//  - the batch plan (schedule/batch_plan.hpp) fixes each update's global batch B_t and where
//    it reads: the epoch's order is data::epoch_order(seed, epoch), rank r of P takes
//    positions [r·B/P, (r+1)·B/P) of each global batch, so P ranks follow the trajectory of
//    one rank with batch B up to float rounding; the loss is averaged over the GLOBAL batch;
//  - batch_ramp adaptive (trainer_adaptive.cpp, schedule/adaptive_batch.hpp): the batches are
//    decided as the run goes; update t reads the next B_t samples of the epochs' permutations
//    laid end to end (a batch may straddle two epochs), evaluations follow the update that
//    crosses a multiple of eval_every epochs, and the run ends at the update that has read
//    `epochs` (or stop_epoch) epochs of samples;
//  - evaluation after every round(eval_every · steps_per_epoch) updates of the current stage
//    and after the last; the test set is split across ranks and the sums reduced;
//  - stop_epoch > 0: the run ends at the update where the plan reaches that epoch
//    (steps_until_epoch) with an evaluation, a checkpoint and the final record, as if
//    `epochs` ended there, but every LR is that of the whole `epochs` run (decay, warmup);
//  - train_loss/train_acc average the training batches since the previous evaluation;
//    samples_per_s counts training samples over training time (data + compute + exposed
//    communication, no evaluation); time_compute_s is forward + backward + update,
//    time_allreduce_exposed_s the time spent waiting for collectives (gradient buckets not
//    hidden behind backward, the per-step loss/flag reduction), time_data_s the batch gather;
//  - grad_noise_scale = B_simple, with grad_norm_sq and grad_trace_sigma (noise_scale.hpp),
//    measured every noise_scale_every updates: with P > 1 ranks b_small = B/P (|G_small|² =
//    mean over ranks of the local gradient's squared norm, one extra scalar allreduce),
//    b_big = B; on one rank the measured step runs forward/backward on the two halves of the
//    batch (the same gradient, summed; costs the two half-size passes' lower efficiency,
//    one arena copy and add, and three norm passes; batch norm then normalises each half by
//    its own statistics, as two ranks would);
//  - a non-finite training loss stops the run before that step's update (status diverged);
//  - on one rank each layer is updated as soon as backward has its gradients (cache-hot);
//    with more ranks gradients are averaged in buckets that overlap backward (grad_sync.hpp),
//    then updated in one pass;
//  - ranks agree on stopping: the per-step loss reduction carries the stop/checkpoint flags;
//    rank 0 alone writes records and checkpoints; batch-norm running statistics stay local
//    to each rank (each evaluates its share of the test set with its own; rank 0's are
//    checkpointed and broadcast on resume);
//  - checkpoints (checkpoint.hpp) every checkpoint_every_s seconds and on SIGUSR2/SIGTERM/
//    SIGINT hold everything that determines the rest of the run (parameters and model state,
//    optimizer state, step, interval statistics, noise-scale averages, wall clock); the data
//    position and LR are pure functions of the step. run() resumes from the newest valid one
//    in TrainContext::checkpoint_dir, so an interrupted run ends with the same metrics.
// Same config, backend, rank and thread count → identical records except the timing fields.
#pragma once

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/data/dataset.hpp"
#include "trainer/grad_sync.hpp"
#include "trainer/kernels/cuda/loss_scale.hpp"
#include "trainer/kernels/matrix.hpp"
#include "trainer/kernels/memory.hpp"
#include "trainer/noise_scale.hpp"
#include "trainer/reporter.hpp"
#include "trainer/schedule/adaptive_batch.hpp"
#include "trainer/schedule/batch_plan.hpp"
#include "trainer/schedule/lr_schedule.hpp"
#include "trainer/stop_monitor.hpp"
#include "trainer/train_config.hpp"

namespace dlsweep::trainer {

namespace kernels {
class Kernels;
class DeviceData;
}  // namespace kernels
namespace models { class Model; }
namespace optim { class Optimizer; }

/// Where a run reports to and what can stop it; everything optional but comm.
struct TrainContext {
  comm::Communicator* comm = nullptr;      ///< required
  Reporter* reporter = nullptr;            ///< metrics.jsonl writer (rank 0); null = no records
  StopMonitor* stop = nullptr;             ///< null = never asked to stop
  std::FILE* progress = nullptr;           ///< one human-readable line per evaluation; null = quiet
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();  ///< wall_s origin
  std::string kernels = "onednn";          ///< compute backend name (kernels_registry.hpp)
  std::filesystem::path checkpoint_dir;    ///< where checkpoints go / are resumed from; empty = none
};

enum class TrainStatus { done, stopped, diverged };

struct TrainResult {
  TrainStatus status = TrainStatus::done;
  std::int64_t steps = 0;                   ///< updates applied
  std::int64_t resumed_from = -1;           ///< the checkpoint's step when the run resumed, else -1
  std::string checkpoint;                   ///< the last checkpoint written (empty if none)
  std::map<std::string, double> metrics;    ///< the last evaluation's metrics (empty if none)
  std::string message;                      ///< why it stopped or diverged
};

class Trainer {
 public:
  /// Checks the config against the data (bad input: the error names the parameter and the
  /// fix), sets the compute threads, builds the backend, model and optimizer.
  static Result<std::unique_ptr<Trainer>> create(const TrainConfig& config, data::DataSplits data, TrainContext ctx);
  ~Trainer();

  /// Trains to the end, a stop request, or divergence. An error here is a runtime failure
  /// (e.g. metrics.jsonl cannot be written), not bad input.
  Result<TrainResult> run();

  std::int64_t steps_per_epoch() const { return steps_per_epoch_; }
  std::int64_t total_steps() const { return total_steps_; }
  /// The step the run ends at: total_steps(), or the one stop_epoch falls on.
  std::int64_t end_step() const { return end_step_; }
  const schedule::BatchPlan& plan() const { return plan_; }
  /// batch_ramp adaptive: the batches picked so far (null otherwise).
  const schedule::AdaptiveLayout* adaptive_layout() const { return adaptive_ ? &*adaptive_ : nullptr; }
  /// Where update `step` reads, and the epochs/samples read after `step` updates: the batch
  /// plan's, or under batch_ramp adaptive the layout of the batches picked so far.
  schedule::DataPosition position(std::int64_t step) const;
  double epoch_after(std::int64_t step) const;
  std::int64_t samples_after(std::int64_t step) const;
  const schedule::LrSchedule& lr_schedule() const { return lr_; }
  std::int64_t eval_interval() const { return eval_interval_; }
  models::Model& model() { return *model_; }

 private:
  Trainer(const TrainConfig& config, data::DataSplits data, TrainContext ctx);
  struct EvalStats {
    double loss = 0, acc = 0;
  };
  /// Statistics of the interval since the last evaluation (local to this rank).
  struct Interval {
    double loss_sum = 0, correct = 0, seen = 0, t_compute = 0, t_data = 0, t_comm = 0;
  };
  /// One training step's outcome (local to this rank, before reduction).
  struct StepStats {
    double loss_sum = 0;
    std::int64_t correct = 0;
  };
  EvalStats evaluate();
  double wall_s() const;
  Status report(protocol::RecordKind kind, std::int64_t step, const std::map<std::string, double>& metrics,
                const std::string& text = {});
  Status log_start();
  /// How precision bf16 runs ("native" or "emulated"); empty in fp32.
  std::string precision_path() const;
  /// Gathers the n samples idx[0..n), runs forward and the loss (scaled by 1/batch, which
  /// fills the logits gradient for backward). Adds its data and compute time to iv_.
  StepStats forward_part(const std::uint32_t* idx, std::int64_t n, std::int64_t batch);
  /// One rank, measured step: forward and backward on the two halves of the batch, gradients
  /// summed into the arena; feeds the noise estimator.
  StepStats split_step(const std::uint32_t* idx, std::int64_t b, std::int64_t batch);
  Status evaluate_and_report(std::int64_t step, double lr, std::int64_t batch);
  /// `records_after`: records this run writes after the checkpoint's own before it can end
  /// (the final record at a stop_epoch), so that a resumed run's seq continues past them.
  Result<std::string> save_checkpoint(std::int64_t step, int records_after = 0);
  /// Restores the newest valid checkpoint, if any. Returns its step, or -1.
  Result<std::int64_t> resume();
  /// Makes every rank's parameters, model state and optimizer state equal rank 0's.
  Status broadcast_state();
  /// The parameters that shaped the trajectory up to `epoch` (a checkpoint's): a run resumes
  /// only from a checkpoint with the same fingerprint (trainer_checkpoint.cpp).
  nlohmann::json fingerprint(double epoch) const;

  // batch_ramp adaptive (trainer_adaptive.cpp).
  struct Adaptive {
    std::vector<std::int64_t> candidates;
    schedule::AdaptiveLrSpec lr;
    bool adascale = true;                        ///< LR by AdaScale's gain, else by lr_rule
    bool measured = true;                        ///< step-time model measured in the run
    schedule::StepTimeModel model;               ///< the fitted (or given) model
    /// Per-rank batch -> (seconds sum, count): the start's timings (forward + backward only)
    /// and the run's own steps (rank 0's; whole updates).
    std::map<std::int64_t, std::pair<double, double>> profile, run_times;
    double stage_time = 0;                       ///< this stage's measured step seconds since its last decision
    std::int64_t stage_steps = 0;
  };
  /// Sets up adaptive_ (create): candidates, LR, the given model. Errors name the key.
  Status adaptive_init();
  /// The measured mode's start: times each of a few candidate per-rank batches (forward and
  /// backward, no update; the model state restored), unless a checkpoint brought the times.
  Status adaptive_profile();
  /// At a decision step: refits the step-time model, picks the batch (the same on every rank:
  /// rank 0's inputs are broadcast), changes the layout from `step` and writes the record.
  Status adaptive_decide(std::int64_t step);
  /// One training update's measured seconds (this rank's; only rank 0's enter the model).
  void adaptive_step_timed(std::int64_t per_rank_batch, double seconds);
  double adaptive_lr_at(std::int64_t step) const;
  /// True when an evaluation follows update `step` under the adaptive layout.
  bool adaptive_eval_after(std::int64_t step) const;
  /// The run's end: the update after which the layout has read `epochs` (or stop_epoch).
  bool adaptive_done(std::int64_t step) const;
  nlohmann::json adaptive_state() const;
  bool adaptive_restore(const nlohmann::json& j);

  TrainConfig config_;
  std::optional<schedule::AdaptiveLayout> adaptive_;
  Adaptive ad_;
  data::DataSplits data_;
  TrainContext ctx_;
  std::unique_ptr<kernels::Kernels> kernels_;
  kernels::DeviceData* device_data_ = nullptr;  ///< owned by kernels_; null: batches gathered on the host
  std::unique_ptr<models::Model> model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  schedule::BatchPlan plan_;
  schedule::LrSchedule lr_;
  std::unique_ptr<GradSync> sync_;          ///< ranks > 1
  NoiseScaleEstimator noise_;
  Interval iv_;
  std::map<std::string, double> last_metrics_;
  double wall_offset_ = 0;                  ///< wall_s of the checkpoint a resumed run started from
  std::vector<std::uint32_t> order_;
  std::vector<std::uint32_t> straddle_;     ///< adaptive: a global batch across two epochs' orders
  std::int64_t order_epoch_ = -1;
  std::vector<std::int32_t> labels_;
  /// fp16 only: dynamic loss scaling (kernels/cuda/loss_scale.hpp); the loss gradient is
  /// multiplied by its scale, gradients divided by it after backward, a step whose gradients
  /// hold inf/NaN skipped (counted in the records as skipped_steps).
  std::unique_ptr<kernels::cuda::LossScaler> scaler_;
  /// Divides the gradient arena by the loss scale (no-op without fp16).
  void unscale_grads();
  /// fp16: true when the averaged gradients are finite (the step is applied); updates the scale.
  bool loss_scale_step_ok();
  kernels::DeviceArray grad_acc_;           ///< one rank: the first half's gradient of a measured step
  std::int64_t steps_per_epoch_ = 0, total_steps_ = 0, eval_interval_ = 0;  ///< per epoch/eval: first stage
  std::int64_t end_step_ = 0;               ///< total_steps_, or the step of stop_epoch
};

}  // namespace dlsweep::trainer
