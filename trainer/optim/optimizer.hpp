// optimizer.hpp — the interface every optimizer implements: SGD, Adam, AdamW, LARS, LARC,
// LAMB (exact math in docs/math.md; one file each), and the base class with what they share.
//
// Contract:
//  - an optimizer is bound to one ParameterSet at construction and owns its state (velocity,
//    moments) in arenas laid out like the parameters (padding zero, kept zero);
//  - step(lr) updates every tensor in place from the gradient arena, which must already hold
//    the gradient of the loss averaged over the GLOBAL batch (allreduced when data-parallel);
//  - per-tensor state (update count, the LR of the previous update) lives per tensor, so
//    step(lr, tensors) called once for every tensor equals step(lr) for all optimizers here
//    (the layer-wise ones, LARS/LARC/LAMB, use per-tensor norms only);
//  - step() allocates nothing and gives the same result for any thread count (norms are
//    summed in double over fixed blocks, in a fixed order);
//  - biases and normalisation parameters (ParamTensor::is_bias) get no weight decay unless
//    decay_bias_norm is set.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "trainer/models/parameter_set.hpp"

namespace dlsweep::trainer::optim {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string_view name() const = 0;
  /// One update of all parameters at learning rate `lr`.
  virtual void step(double lr) = 0;
  /// The same update restricted to some tensors (indices into the ParameterSet), for
  /// updating layer by layer as gradients become ready.
  virtual void step(double lr, std::span<const std::size_t> tensors) = 0;
  /// False for optimizers whose update of one tensor depends on others (e.g. global norm clipping).
  virtual bool supports_partial_step() const { return true; }

  /// The state arenas (velocity; Adam's m and v), each ParameterSet::arena_size() floats, in
  /// a fixed order: what a checkpoint saves and restores.
  virtual std::vector<std::span<float>> state_arenas() = 0;
  /// Scalar state (per-tensor update counts and previous LRs), for checkpoints.
  virtual std::vector<double> state_scalars() const = 0;
  /// Restores state_scalars(); false if the size does not match this optimizer.
  virtual bool set_state_scalars(std::span<const double> s) = 0;
};

/// Settings of the optimizers (params.json names in comments).
struct OptimizerSpec {
  std::string name = "sgd";              ///< optimizer: sgd|adam|adamw|lars|larc|lamb
  double momentum = 0.9;                 ///< momentum (sgd, lars, larc)
  bool nesterov = false;                 ///< nesterov (sgd, lars, larc)
  double weight_decay = 0;               ///< weight_decay
  bool decay_biases = false;             ///< decay_bias_norm: weight decay on biases/norm params too
  bool momentum_correction = true;       ///< momentum_correction (sgd, lars, larc)
  double beta1 = 0.9, beta2 = 0.999;     ///< beta1, beta2 (adam, adamw, lamb)
  double adam_eps = 1e-8;                ///< adam_eps (adam, adamw)
  double lamb_eps = 1e-6;                ///< lamb_eps
  double lars_trust = 0.001;             ///< lars_trust_coefficient
  double lars_eps = 0;                   ///< lars_eps
  bool lars_exclude_bias_norm = true;    ///< lars_exclude_bias_norm
  double larc_trust = 0.02;              ///< larc_trust_coefficient
  double larc_eps = 1e-8;                ///< larc_eps
  bool larc_clip = true;                 ///< larc_mode: clip (true) | scale
};

/// The optimizer names make_optimizer accepts.
std::span<const std::string_view> optimizer_names();

/// Builds the optimizer named in `spec` over `params`.
Result<std::unique_ptr<Optimizer>> make_optimizer(const OptimizerSpec& spec, models::ParameterSet& params);

/// What every optimizer here shares: the parameter set, the per-tensor scalar state, weight
/// decay per tensor, and the one-parallel-region-per-call update of tensor slices.
class TensorOptimizer : public Optimizer {
 public:
  void step(double lr) override { step(lr, all_); }
  void step(double lr, std::span<const std::size_t> tensors) override;
  std::vector<double> state_scalars() const override;
  bool set_state_scalars(std::span<const double> s) override;

 protected:
  TensorOptimizer(models::ParameterSet& params, double weight_decay, bool decay_biases);
  /// Updates tensor `i` (the whole tensor, or the slice [begin, end) of its span when
  /// `sliced()`; `count` is its update number from 1, `prev_lr` the LR of its previous update
  /// (0 before the first)).
  virtual void update(std::size_t i, std::int64_t begin, std::int64_t end, double lr, double prev_lr,
                      std::int64_t count) = 0;
  /// True: update() runs on slices of each tensor in one parallel region per call (purely
  /// element-wise optimizers). False: update() gets whole tensors, one after another, and
  /// parallelises inside (optimizers that need a tensor's norms first).
  virtual bool sliced() const { return true; }
  /// The weight decay of tensor i (0 on biases/norm parameters unless decay_biases).
  float wd(std::size_t i) const;

  models::ParameterSet& params_;
  float weight_decay_;
  bool decay_biases_;
  std::vector<std::size_t> all_;        ///< 0..tensors-1
  std::vector<std::int64_t> count_;     ///< updates applied, per tensor
  std::vector<double> last_lr_;         ///< LR of the previous update, per tensor
};

}  // namespace dlsweep::trainer::optim
