// cuda_memory.hpp — kernels::Memory on one CUDA device: arenas in device memory, every
// operation on the backend's one stream (so it is ordered with the kernels that read and
// write the arenas). upload/download/sum_squares/any_nonfinite synchronise the stream (their
// results are needed on the host); copy/add/scale are only enqueued. CUDA failures throw
// std::runtime_error naming the call (a device fault is not recoverable inside a run).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "trainer/kernels/memory.hpp"

namespace dlsweep::trainer::kernels::cuda {

/// Throws std::runtime_error("cuda: WHAT: error name (text)") when e is not cudaSuccess.
void check(cudaError_t e, const char* what);

class CudaMemory final : public Memory {
 public:
  CudaMemory(int device, cudaStream_t stream);
  ~CudaMemory() override;
  CudaMemory(const CudaMemory&) = delete;
  CudaMemory& operator=(const CudaMemory&) = delete;

  std::string device() const override { return "cuda:" + std::to_string(device_); }
  bool host_visible() const override { return false; }
  DeviceArray allocate(std::int64_t n) override;
  void upload(float* dst, const float* host_src, std::int64_t n) override;
  void download(float* host_dst, const float* src, std::int64_t n) override;
  void copy(float* dst, const float* src, std::int64_t n) override;
  double sum_squares(const float* x, std::int64_t n) override;
  void add(float* y, const float* x, std::int64_t n) override;
  void scale(float* y, float a, std::int64_t n) override;
  bool any_nonfinite(const float* x, std::int64_t n) override;
  void* native_stream() override { return stream_; }
  /// Page-locked (cudaMallocHost): the staging of comm: mpi on a GPU.
  std::shared_ptr<float[]> allocate_staging(std::int64_t n) override;

 protected:
  void release(float* p) noexcept override;

 private:
  int device_;
  cudaStream_t stream_;
  double* partial_ = nullptr;  ///< device: sum_squares' partials, then its total
  int* found_ = nullptr;       ///< device: any_nonfinite's flag
};

}  // namespace dlsweep::trainer::kernels::cuda
