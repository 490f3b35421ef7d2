// goodput.hpp — a step-time model fitted on measured trials, combined with the batch-size
// model S(B) into a predicted time to target for batch B on N ranks, and the plan over N
// (Pollux, Qiao et al. OSDI'21; docs/math.md#the-plan).
//
//   T_comp(b)  = a_c + b_c b          per-step compute + data time at per-rank batch b = B/N,
//                                     fitted by least squares on relative error (weights 1/y^2);
//                                     a negative slope gives a constant, a negative intercept y = b x
//   T_net(N)   = 0 for N = 1; the measured mean exposed allreduce per step at N; between/beyond
//                measured N: Pollux's a + b max(N - 2, 0) when >= 2 rank counts were measured,
//                else the one measured value scaled by the ring-allreduce factor 2(N-1)/N
//   T_step     = T_comp(B/N) + T_net(N)   (the trainer measures the EXPOSED allreduce, i.e. what
//                                          overlap with backward did not hide, so the two add)
//   T(B, N)    = S(B) T_step + ceil(E(B) / I) T_eval(N) + T_start
// with I the samples between evaluations, T_eval(N) the measured time of one evaluation
// (T_eval(1)/N where N was not measured: the test set is split across ranks) and T_start
// the measured time before the first training step.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/batch_model.hpp"
#include "analysis/study_data.hpp"
#include "common/result.hpp"

namespace dlsweep::analysis {

/// Per-step timings of one trial, from its eval records (not the final one, which repeats
/// the last eval's metrics): the per-step time is the wall time between the first and the
/// last eval record, less the evaluations in between, over the steps in between (so it holds
/// whatever the interval timers do not see); the allreduce part is the sum of the exposed
/// allreduce timers over the same steps; compute_s is the rest.
struct StepSample {
  std::int64_t trial = 0;
  int ranks = 1;
  int threads = 1;
  std::int64_t batch = 0;         ///< global batch
  double per_rank_batch = 0;      ///< batch / ranks
  std::int64_t steps = 0;         ///< steps the timings cover
  double compute_s = 0;           ///< per-step time less the allreduce part (compute, data, overhead)
  double allreduce_s = 0;         ///< time_allreduce_exposed_s per step
  double eval_s = 0;              ///< mean time_eval_s per evaluation
  double start_s = 0;             ///< wall_s of the first eval record - its steps x step time - its eval
  double eval_interval_samples = 0;  ///< samples between consecutive evaluations
  bool eval_timed = false;        ///< some record carried time_eval_s (else eval_s = 0: evaluations count as steps)
  bool allreduce_timed = false;   ///< some record carried time_allreduce_exposed_s
};

/// One sample per trial of `study` in state COMPLETE with timing metrics and a single batch.
std::vector<StepSample> step_samples(const StudyData& study);

struct StepTimeModel {
  double a_c = 0, b_c = 0;        ///< T_comp(b) = a_c + b_c b
  std::size_t compute_points = 0;
  double compute_rms_rel = 0;     ///< RMS relative residual of the compute fit
  std::map<int, double> allreduce_measured;  ///< N -> mean exposed allreduce per step
  std::map<int, double> eval_measured;       ///< N -> mean seconds per evaluation
  double net_a = 0, net_b = 0;    ///< Pollux form, when fitted
  std::string net_rule;           ///< how T_net(N) is obtained, in words
  double start_s = 0;             ///< mean startup time
  double eval_interval_samples = 0;
  std::size_t eval_untimed = 0;       ///< samples without time_eval_s
  std::size_t allreduce_untimed = 0;  ///< multi-rank samples without time_allreduce_exposed_s
};

/// Needs >= 2 distinct per-rank batch sizes among the samples (else an Error saying so).
Result<StepTimeModel> fit_step_time(const std::vector<StepSample>& samples);
/// fit_step_time(step_samples(study)), refused with what the trials lack: which metric
/// (time_compute_s, ...) a user program must report, or which batch sizes to run.
Result<StepTimeModel> fit_step_time(const StudyData& study);

double compute_time(const StepTimeModel& m, double per_rank_batch);
double allreduce_time(const StepTimeModel& m, int ranks);
double eval_time(const StepTimeModel& m, int ranks);

struct Prediction {
  double batch = 0;
  int ranks = 1;
  double steps = 0;               ///< S(B)
  double samples = 0;             ///< E(B)
  double compute_s = 0, allreduce_s = 0, step_s = 0;  ///< per step
  double evals = 0, eval_s = 0;   ///< evaluations before the target, seconds each
  double start_s = 0;
  double time_s = 0;              ///< predicted time to target
  std::optional<Regime> regime;   ///< nullopt when B_crit is not determined
};

/// T(B, N) with S(B) from the fit (a regime only when fit.determined).
Prediction predict(const BatchFit& fit, const StepTimeModel& m, double batch, int ranks);
/// T(B, N) with a measured steps-to-target in place of S(B); a regime only with a b_crit.
Prediction predict_with_steps(double steps, const StepTimeModel& m, double batch, int ranks,
                              std::optional<double> b_crit);

struct PlanOptions {
  int candidates = 50;            ///< geometric grid of batch sizes (AdaptDL uses ~50)
  double batch_lo = 0, batch_hi = 0;  ///< 0: the fitted range of the batch-size model
};

struct PlanRow {
  int ranks = 1;
  Prediction best;                ///< the candidate with the least predicted time
  std::vector<Prediction> candidates;
};

struct Plan {
  std::vector<PlanRow> rows;
  std::vector<std::string> inputs;       ///< every measured input, in words with values
  std::vector<std::string> assumptions;  ///< every modelling assumption, in words
};

/// Errors on an empty or non-positive rank list.
Result<Plan> make_plan(const BatchFit& fit, const StepTimeModel& m, const std::vector<int>& ranks,
                       const PlanOptions& opt = {});

}  // namespace dlsweep::analysis
