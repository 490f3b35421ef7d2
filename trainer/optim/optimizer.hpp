// optimizer.hpp — the interface every optimizer implements (SGD now; Adam, AdamW, LARS,
// LARC, LAMB later — exact math in REFERENCES.md).
//
// Contract:
//  - an optimizer is bound to one ParameterSet at construction and owns its state (velocity,
//    moments) in arenas laid out like the parameters (padding zero, kept zero);
//  - step(lr) updates every tensor in place from the gradient arena, which must already hold
//    the gradient of the loss averaged over the GLOBAL batch (allreduced when data-parallel);
//  - step() allocates nothing and gives the same result for any thread count.
#pragma once

#include <memory>
#include <span>
#include <string_view>

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
  /// updating layer by layer as gradients become ready. Calling it once for every tensor is
  /// equivalent to step(lr) for element-wise optimizers; optimizers that need global
  /// quantities must say so (supports_partial_step()).
  virtual void step(double lr, std::span<const std::size_t> tensors) = 0;
  /// False for optimizers whose update of one tensor depends on others (e.g. global norm clipping).
  virtual bool supports_partial_step() const { return true; }
};

/// Settings shared by the optimizers (params.json names in comments).
struct OptimizerSpec {
  std::string name = "sgd";     ///< optimizer
  double momentum = 0.9;        ///< momentum
  bool nesterov = false;        ///< nesterov
  double weight_decay = 0;      ///< weight_decay
  bool decay_biases = false;    ///< apply weight decay to biases/norm parameters too
};

/// Builds the optimizer named in `spec` over `params`.
Result<std::unique_ptr<Optimizer>> make_optimizer(const OptimizerSpec& spec, models::ParameterSet& params);

}  // namespace dlsweep::trainer::optim
