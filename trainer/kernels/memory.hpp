// memory.hpp — where a compute backend keeps its arrays, and the few whole-array operations
// the training loop needs on them. The backend owns the memory of the parameter, gradient,
// model-state and optimizer-state arenas (ParameterSet::finalize takes its Memory); the loop,
// gradient averaging, the noise scale and checkpoints reach those arenas only through these
// operations, so the same loop drives host arrays (oneDNN, reference) and device arrays
// (CUDA) without ever dereferencing an arena pointer itself.
//
// Contract (every implementation; tests/trainer/kernels/memory_conformance_test.cpp):
//  - allocate(n) returns n floats, zeroed, aligned to kBufferAlignment (64 bytes) at least;
//  - upload/download/copy move n floats (host <-> backend, backend <-> backend); upload and
//    download are complete when they return (the host array may be reused at once);
//  - sum_squares is Σ x² in double, DETERMINISTIC for a given n (fixed blocks in a fixed
//    order, independent of the thread count); the host's is optim::sum_squares;
//  - add (y += x), scale (y *= a) and any_nonfinite read and write whole spans, padding
//    included (padding is zero and stays zero);
//  - host_visible(): the arrays are host memory a CPU loop may read (true for the CPU backends);
//  - native_stream(): the backend's ordered queue of work on its arrays (a cudaStream_t) for
//    collectives that run on the device beside it (comm/communicator.hpp's device form), or
//    nullptr (host memory: every operation is complete when it returns);
//  - allocate_staging(n): n floats of HOST memory that upload/download move fastest (page-locked
//    on CUDA), for gradients reduced through the host (comm: mpi on a GPU); zeroed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dlsweep::trainer::kernels {

class Memory;

/// An owning array of floats in a backend's memory. Move-only.
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(Memory* owner, float* data, std::int64_t size) : owner_(owner), data_(data), size_(size) {}
  DeviceArray(DeviceArray&& o) noexcept
      : owner_(std::exchange(o.owner_, nullptr)), data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    if (this != &o) {
      reset();
      owner_ = std::exchange(o.owner_, nullptr);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { reset(); }

  float* data() const { return data_; }
  std::int64_t size() const { return size_; }
  std::span<float> span() const { return {data_, static_cast<std::size_t>(size_)}; }

 private:
  void reset() noexcept;
  Memory* owner_ = nullptr;
  float* data_ = nullptr;
  std::int64_t size_ = 0;
};

class Memory {
 public:
  virtual ~Memory() = default;
  /// "cpu", "cuda:0".
  virtual std::string device() const = 0;
  virtual bool host_visible() const = 0;
  /// n floats, zeroed.
  virtual DeviceArray allocate(std::int64_t n) = 0;
  virtual void upload(float* dst, const float* host_src, std::int64_t n) = 0;
  virtual void download(float* host_dst, const float* src, std::int64_t n) = 0;
  virtual void copy(float* dst, const float* src, std::int64_t n) = 0;
  virtual double sum_squares(const float* x, std::int64_t n) = 0;
  /// y += x.
  virtual void add(float* y, const float* x, std::int64_t n) = 0;
  /// y *= a.
  virtual void scale(float* y, float a, std::int64_t n) = 0;
  /// True when any of the n floats is inf or NaN.
  virtual bool any_nonfinite(const float* x, std::int64_t n) = 0;
  /// The stream the backend's work on its arrays is ordered on (cudaStream_t), nullptr on the host.
  virtual void* native_stream() { return nullptr; }
  /// n zeroed floats of host memory for staging (page-locked where the backend copies faster).
  virtual std::shared_ptr<float[]> allocate_staging(std::int64_t n) {
    return std::shared_ptr<float[]>(new float[static_cast<std::size_t>(n > 0 ? n : 1)]());
  }

  /// A host copy of n floats (checkpoints, broadcasts).
  std::vector<float> to_host(const float* src, std::int64_t n) {
    std::vector<float> v(static_cast<std::size_t>(n));
    if (n > 0) download(v.data(), src, n);
    return v;
  }

 protected:
  friend class DeviceArray;
  virtual void release(float* p) noexcept = 0;
};

inline void DeviceArray::reset() noexcept {
  if (owner_ && data_) owner_->release(data_);
  data_ = nullptr;
  size_ = 0;
}

/// Host memory (the CPU backends'): huge-page aligned like AlignedBuffer, deterministic
/// parallel reductions (optim/tensor_math.hpp). One process-wide instance.
Memory& host_memory();

}  // namespace dlsweep::trainer::kernels
