// model.hpp — the interface the training loop drives. A model owns its parameters
// (ParameterSet) and, per (batch size, mode), a plan: the activation/gradient buffers and
// the backend kernels bound to them, built on first use and replayed afterwards.
//
// Contract:
//  - input(n, mode) returns the [n, input_size()] buffer the caller fills before forward();
//  - forward(n, mode) returns the logits [n, classes()];
//  - in train mode, logits_grad(n) is the buffer the loss writes dL/dlogits into, and
//    backward(n) then OVERWRITES parameters().grads() with dL/dparams of this batch;
//  - backward calls `on_ready` with the indices of the tensors whose gradients are final, as
//    soon as they are (last layer first), so callers can start work on them while the rest
//    of the backward pass runs: a gradient allreduce bucket, or the update of a 1-rank run
//    while the gradient is still in cache;
//  - nothing is allocated by forward()/backward() once a plan exists.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "trainer/kernels/matrix.hpp"
#include "trainer/models/parameter_set.hpp"

namespace dlsweep::trainer::models {

enum class Mode { train, eval };

/// Called by Model::backward with the indices (into ParameterSet) of tensors whose
/// gradients have just become final.
using GradReadyFn = std::function<void(std::span<const std::size_t> tensors)>;

class Model {
 public:
  virtual ~Model() = default;
  virtual std::string_view name() const = 0;
  virtual ParameterSet& parameters() = 0;
  virtual std::int64_t input_size() const = 0;
  virtual std::int64_t classes() const = 0;

  /// Builds the plan for (n, mode) now (otherwise built on first use).
  virtual void prepare(std::int64_t n, Mode mode) = 0;
  virtual kernels::MatrixView input(std::int64_t n, Mode mode) = 0;
  virtual kernels::MatrixView forward(std::int64_t n, Mode mode) = 0;
  virtual kernels::MatrixView logits_grad(std::int64_t n) = 0;
  virtual void backward(std::int64_t n, const GradReadyFn& on_ready = {}) = 0;
};

}  // namespace dlsweep::trainer::models
