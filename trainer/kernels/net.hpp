// net.hpp — a NetGraph compiled by a backend for one batch size and one mode: every buffer
// allocated, every primitive built, the forward and backward passes reduced to lists that
// are replayed each step (oneDNN's examples/cnn_training_f32.cpp pattern).
//
// Contract (every backend; tests/trainer/net_conformance_test.cpp checks it against the
// double-precision reference math):
//  - input() is the [n, input size] matrix (rows of NCHW floats, row stride input().ld as the
//    backend chose it; padding zero) the caller fills; output() is the [n, output size]
//    matrix of the last node in the same kind of layout;
//  - forward() computes every node in order. In training mode batch norms normalise with the
//    batch statistics and update their running statistics; in evaluation mode they use the
//    running statistics and nothing is written outside the net;
//  - backward() (training mode only) reads output_grad() (dL/doutput, filled by the caller)
//    and OVERWRITES every parameter gradient of the graph; it calls on_ready(tag) as soon as
//    the gradients of the layer with that tag are final, in reverse layer order;
//    when NetOptions::input_grad is set it also writes input_grad() (dL/dinput);
//    gradients of tensors read by several nodes are the sums of the contributions;
//  - ReLU derivatives are taken as 1 where the ReLU's output is > 0 and 0 elsewhere; max
//    pooling sends each output's gradient to one maximal input of its window;
//  - Precision::bf16: every activation, activation gradient and weight copy a layer reads is
//    rounded to bfloat16 (round to nearest even); products accumulate in fp32 and parameter
//    gradients are fp32. Backends without native bf16 arithmetic emulate exactly this by
//    rounding fp32 values (the result is the same up to accumulation order and where a
//    rounded value lands one bf16 step apart); input(), output(), output_grad() and
//    input_grad() are fp32 buffers either way;
//  - forward()/backward() allocate nothing; results are deterministic for a given backend,
//    thread count, graph and batch size.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trainer/kernels/bf16.hpp"
#include "trainer/kernels/matrix.hpp"
#include "trainer/kernels/net_graph.hpp"

namespace dlsweep::trainer::kernels {

struct NetOptions {
  std::int64_t batch = 1;
  bool train = true;
  Precision precision = Precision::fp32;
  bool input_grad = false;  ///< also compute dL/dinput (tests; models never need it)
  /// bf16 by rounding fp32 tensors even where the backend has native bf16 kernels (the
  /// parity tests compare the two paths; the reference backend always emulates).
  bool emulate_bf16 = false;
  /// Deterministic algorithms only, so a run repeats bit for bit (the GPU's tensor-core nets
  /// honour false by taking cuDNN's fastest algorithms; every other net is always deterministic).
  bool deterministic = true;
};

/// Called by Net::backward with the tag of a layer whose parameter gradients are final.
using LayerReadyFn = std::function<void(int tag)>;

class Net {
 public:
  virtual ~Net() = default;
  virtual MatrixView input() = 0;
  virtual MatrixView output() = 0;
  /// Training mode only: the buffer backward() reads dL/doutput from.
  virtual MatrixView output_grad() = 0;
  /// Only with NetOptions::input_grad: dL/dinput after backward().
  virtual MatrixView input_grad() = 0;
  virtual void forward() = 0;
  virtual void backward(const LayerReadyFn& on_ready = {}) = 0;
  /// One line per node: what it computes and which implementation runs it.
  virtual std::vector<std::string> describe() const = 0;
};

}  // namespace dlsweep::trainer::kernels
