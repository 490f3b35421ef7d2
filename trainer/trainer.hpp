// trainer.hpp — the training loop of dlsweep-train: data-parallel minibatch SGD over a
// Communicator, evaluation every `eval_every` epochs, protocol records to a Reporter, and
// stop requests from a StopMonitor.
//
// Semantics (what a record's numbers mean):
//  - steps_per_epoch = floor(N / batch_size) (the tail of each shuffled epoch is dropped);
//    total steps = round(epochs · steps_per_epoch) (at least 1); evaluation after every
//    round(eval_every · steps_per_epoch) steps and after the last step;
//  - the epoch's order is data::epoch_order(seed, epoch); rank r takes the r-th slice of each
//    global batch; the loss is averaged over the GLOBAL batch;
//  - train_loss/train_acc average the training batches since the previous evaluation;
//    samples_per_s counts training samples over training time only (data + compute, no eval);
//  - a non-finite training loss stops the run before that step's update (status diverged);
//  - on one rank each layer is updated as soon as backward has its gradients (cache-hot);
//    with more ranks the gradient arena is allreduced first, then updated in one pass.
// Same config, backend and thread count → identical records except the timing fields.
#pragma once

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "common/result.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/data/dataset.hpp"
#include "trainer/reporter.hpp"
#include "trainer/schedule/batch_plan.hpp"
#include "trainer/schedule/lr_schedule.hpp"
#include "trainer/stop_monitor.hpp"
#include "trainer/train_config.hpp"

namespace dlsweep::trainer {

namespace kernels { class Kernels; }
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
};

enum class TrainStatus { done, stopped, diverged };

struct TrainResult {
  TrainStatus status = TrainStatus::done;
  std::int64_t steps = 0;                   ///< updates applied
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
  const schedule::BatchPlan& plan() const { return plan_; }
  const schedule::LrSchedule& lr_schedule() const { return lr_; }
  std::int64_t eval_interval() const { return eval_interval_; }
  models::Model& model() { return *model_; }

 private:
  Trainer(const TrainConfig& config, data::DataSplits data, TrainContext ctx);
  struct EvalStats {
    double loss = 0, acc = 0;
  };
  EvalStats evaluate();
  double wall_s() const;
  Status report(protocol::RecordKind kind, std::int64_t step, const std::map<std::string, double>& metrics,
                const std::string& text = {});

  TrainConfig config_;
  data::DataSplits data_;
  TrainContext ctx_;
  std::unique_ptr<kernels::Kernels> kernels_;
  std::unique_ptr<models::Model> model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  schedule::BatchPlan plan_;
  schedule::LrSchedule lr_;
  std::int64_t local_batch_ = 0, steps_per_epoch_ = 0, total_steps_ = 0, eval_interval_ = 0;
};

}  // namespace dlsweep::trainer
