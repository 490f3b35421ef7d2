// parameter_set.hpp — a model's trainable tensors, stored in two flat arenas (values and
// gradients) with identical offsets. Optimizers update the arenas tensor by tensor;
// data-parallel gradient averaging (comm/) reduces the gradient arena in large fused buffers.
//
// The arenas live in the compute backend's memory (kernels/memory.hpp): host arrays for the
// CPU backends, device arrays for CUDA. Code outside the backend never dereferences them; it
// goes through memory() (upload, download, sums of squares).
//
// Invariants: every tensor is a [rows, cols] row-major matrix with the kernels' padded stride
// (a bias is [1, out]); each starts on a 64-byte boundary; padding and gaps are zero in both
// arenas and stay zero because no kernel or optimizer writes a non-zero there.
//
// Besides the trainable tensors, a model may keep non-trainable STATE (batch-norm running
// statistics) in a third arena: the forward pass writes it, optimizers and gradient
// averaging never see it, and checkpoints must save it with the values.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "trainer/kernels/matrix.hpp"
#include "trainer/kernels/memory.hpp"

namespace dlsweep::trainer::models {

/// One tensor in a ParameterSet.
struct ParamTensor {
  std::string name;          ///< "fc1.weight", "fc1.bias", ...
  std::int64_t offset = 0;   ///< in floats from the arena start
  std::int64_t rows = 0, cols = 0, ld = 0;
  bool is_bias = false;      ///< biases and normalisation parameters: no weight decay by default
  /// Floats spanned including padding (what elementwise optimizers loop over).
  std::int64_t span() const { return rows * ld; }
  /// Number of real parameters.
  std::int64_t count() const { return rows * cols; }
};

/// One non-trainable state vector (e.g. "bn1.running_mean").
struct StateTensor {
  std::string name;
  std::int64_t offset = 0;  ///< in floats from the state arena start
  std::int64_t count = 0;
  float initial = 0;        ///< value set by finalize()
};

class ParameterSet {
 public:
  /// Declares a tensor; call before finalize(). Returns its index.
  std::size_t add(std::string name, std::int64_t rows, std::int64_t cols, bool is_bias);
  /// Declares a state vector of `count` floats starting at `initial`; call before finalize().
  std::size_t add_state(std::string name, std::int64_t count, float initial);
  /// Allocates the arenas in `memory` (values and gradients zeroed, state at its initial
  /// values). No add() afterwards.
  void finalize(kernels::Memory& memory = kernels::host_memory());
  /// Where the arenas live (host memory before finalize()).
  kernels::Memory& memory() const { return *memory_; }

  std::span<const ParamTensor> tensors() const { return tensors_; }
  const ParamTensor& tensor(std::size_t i) const { return tensors_.at(i); }
  kernels::MatrixView value(std::size_t i) const;
  kernels::MatrixView grad(std::size_t i) const;

  /// Whole arenas (values, gradients), `arena_size()` floats each.
  float* values() const { return values_.data(); }
  float* grads() const { return grads_.data(); }
  std::int64_t arena_size() const { return arena_size_; }
  /// Number of real parameters (no padding).
  std::int64_t count() const;

  std::span<const StateTensor> states() const { return states_; }
  float* state(std::size_t i) const { return state_.data() + states_.at(i).offset; }
  /// The whole state arena, `state_size()` floats (what a checkpoint saves besides values()).
  float* state_values() const { return state_.data(); }
  std::int64_t state_size() const { return state_size_; }

 private:
  std::vector<ParamTensor> tensors_;
  std::int64_t arena_size_ = 0;
  bool finalized_ = false;
  kernels::Memory* memory_ = &kernels::host_memory();
  kernels::DeviceArray values_, grads_;
  std::vector<StateTensor> states_;
  std::int64_t state_size_ = 0;
  kernels::DeviceArray state_;
};

}  // namespace dlsweep::trainer::models
