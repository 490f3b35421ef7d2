// kernels.hpp — the compute-backend interface of dlsweep-train. A backend (oneDNN on CPU,
// cuDNN/cuBLAS on GPU later, plain loops for tests) builds per-layer kernels bound to
// buffers the model owns, or whole networks (net.hpp) whose buffers and layouts it chooses;
// the model then replays them every step.
//
// Contract (every implementation; tests/trainer/kernels_conformance_test.cpp checks it):
//  - make_dense() does all the expensive work (primitive selection, descriptor creation,
//    argument lists). forward()/backward() allocate nothing and only run the computation.
//    A kernel is built for ONE batch size; models keep one set of kernels per batch size.
//  - Dense layer, shapes from the binding (n = batch rows):
//        forward : y[n,out] = act(x[n,in] · w[in,out] + b[out])
//        backward: dz = dy ⊙ act'(y)           (written over dy, in place)
//                  dw = xᵀ · dz,  db = Σ_rows dz  (overwritten, not accumulated)
//                  dx = dz · wᵀ                   (only when dx is bound)
//    backward() requires that forward() ran on the same x and w and that y is unchanged.
//  - Buffers follow matrix.hpp: row-major, padded strides, padding zero and kept zero.
//  - softmax_cross_entropy: per row r, p = softmax(logits[r]); loss_r = -log p[label_r];
//    returns Σ loss_r and the number of rows whose argmax (first maximum) equals the label;
//    when dlogits is bound writes dlogits[r] = (p - onehot(label_r)) * grad_scale.
//  - Results are deterministic for a given backend, thread count and shapes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/result.hpp"
#include "trainer/kernels/matrix.hpp"
#include "trainer/kernels/memory.hpp"

namespace dlsweep::trainer::models { class ParameterSet; }
namespace dlsweep::trainer::data { struct Dataset; }
namespace dlsweep::trainer::optim {
class Optimizer;
struct OptimizerSpec;
}  // namespace dlsweep::trainer::optim

namespace dlsweep::trainer::kernels {

enum class Activation { none, relu };

class Net;
class NetGraph;
struct NetOptions;

/// The buffers one dense layer reads and writes, bound once when its kernel is built.
/// Forward-only kernels (evaluation) leave dy, dw, db and dx empty.
struct DenseBinding {
  MatrixView x;            ///< [n, in]  input
  MatrixView y;            ///< [n, out] output after the activation
  MatrixView w;            ///< [in, out] weights
  float* b = nullptr;      ///< [out] bias (contiguous; padded to padded_ld(out) with zeros)
  MatrixView dy;           ///< [n, out] gradient w.r.t. y; overwritten with dz by backward()
  MatrixView dw;           ///< [in, out] weight gradient (same stride as w)
  float* db = nullptr;     ///< [out] bias gradient (padded like b)
  MatrixView dx;           ///< [n, in] input gradient; empty for the first layer
  bool trainable() const { return !dy.empty(); }
};

/// One fully connected layer at one batch size, with its activation fused.
class DenseKernel {
 public:
  virtual ~DenseKernel() = default;
  /// y = act(x·w + b).
  virtual void forward() = 0;
  /// dz (in dy), dw, db and, when bound, dx. Precondition: binding.trainable().
  virtual void backward() = 0;
  /// Which implementation runs each part, for diagnostics ("fwd=gemm:jit bwd_w=...").
  virtual std::string describe() const { return {}; }
};

/// Sum of per-sample losses and count of correct predictions of a batch.
struct LossStats {
  double loss_sum = 0;
  std::int64_t correct = 0;
};

/// Time spent inside a backend's own kernels, for benchmarks (zero when not profiling).
struct KernelProfile {
  double seconds = 0;
  std::int64_t calls = 0;
};

/// Datasets kept in a backend's memory (GPU backends), so that no sample crosses the bus per
/// step: a batch is gathered where the net reads it. Same rows, same order, same floats as
/// data::gather / data::gather_range (each value a function of its stored byte or float).
class DeviceData {
 public:
  virtual ~DeviceData() = default;
  /// Samples idx[0..n) of dataset `slot` (the order attach_data got them in) into `x`, a view
  /// this backend's net returned from input(); returns their labels, in backend memory, for
  /// softmax_cross_entropy.
  virtual const std::int32_t* gather(int slot, const std::uint32_t* idx, std::int64_t n, MatrixView x) = 0;
  /// The contiguous samples [first, first + n) (evaluation).
  virtual const std::int32_t* gather_range(int slot, std::int64_t first, std::int64_t n, MatrixView x) = 0;
};

/// A compute backend: builds kernels and runs the loss.
class Kernels {
 public:
  virtual ~Kernels() = default;
  /// "onednn", "reference", ...
  virtual std::string_view name() const = 0;
  /// Builds a dense-layer kernel bound to `binding` (see the contract above).
  virtual std::unique_ptr<DenseKernel> make_dense(Activation act, const DenseBinding& binding) = 0;
  /// Compiles a layer graph for one batch size and mode into a Net (contract in net.hpp).
  /// Throws std::invalid_argument when the backend cannot run the graph as asked.
  virtual std::unique_ptr<Net> make_net(const NetGraph& graph, const NetOptions& options) = 0;
  /// Softmax + cross-entropy over the rows of `logits`. `dlogits` may be empty (evaluation).
  /// `labels`: a host array, or what this backend's DeviceData::gather returned.
  virtual LossStats softmax_cross_entropy(MatrixView logits, const std::int32_t* labels,
                                          float grad_scale, MatrixView dlogits) = 0;
  /// Where this backend's arrays live (memory.hpp): parameter, gradient and state arenas
  /// are allocated here, and the loop's whole-arena operations run here.
  virtual Memory& memory() { return host_memory(); }
  /// The optimizer named in `spec` over `params` (whose arenas live in memory()), running
  /// where the arenas live. The default: the host optimizers of optim/ (make_optimizer).
  virtual Result<std::unique_ptr<optim::Optimizer>> make_optimizer(const optim::OptimizerSpec& spec,
                                                                   models::ParameterSet& params);
  /// Keeps `datasets` in the backend's memory and gathers there from now on; nullptr when the
  /// backend gathers on the host (the CPU backends) or cannot hold them (augmented data).
  /// The datasets must outlive the backend.
  virtual DeviceData* attach_data(std::span<const data::Dataset* const> datasets) {
    (void)datasets;
    return nullptr;
  }
  /// One line about the device for the run's first log line ("cpu", or the GPU's name,
  /// driver and memory).
  virtual std::string device_description() const { return "cpu"; }
  /// Turns timing of the backend's own kernels on or off and resets the counters.
  virtual void set_profiling(bool on) { (void)on; }
  virtual KernelProfile profile() const { return {}; }
};

}  // namespace dlsweep::trainer::kernels
