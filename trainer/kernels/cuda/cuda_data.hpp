// cuda_data.hpp — kernels::DeviceData on one GPU: the training and test sets uploaded once
// (Fashion-MNIST as its bytes and the byte-to-float table, 47 MB for the training set; float
// datasets as floats), each step's indices copied (4 bytes a sample) and the batch gathered
// on the stream straight into the net's device input, labels beside it. Augmented datasets
// (random crops and flips) are not gathered here: make_cuda_data returns null for them and
// the trainer gathers on the host.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <cuda_runtime_api.h>

#include "trainer/kernels/cuda/cuda_net.hpp"
#include "trainer/kernels/cuda/data_kernels.hpp"
#include "trainer/kernels/kernels.hpp"

namespace dlsweep::trainer::kernels::cuda {

class CudaData final : public DeviceData {
 public:
  CudaData(cudaStream_t stream, NetInputs& inputs, std::span<const data::Dataset* const> datasets);
  ~CudaData() override;
  const std::int32_t* gather(int slot, const std::uint32_t* idx, std::int64_t n, MatrixView x) override;
  const std::int32_t* gather_range(int slot, std::int64_t first, std::int64_t n, MatrixView x) override;
  /// True for the label arrays gather() returns (softmax_cross_entropy then reads them as is).
  bool owns(const std::int32_t* labels) const;

 private:
  struct Slot {
    DeviceSet set;
    std::int32_t* labels_out = nullptr;
    std::uint32_t* idx = nullptr;
    std::int64_t capacity = 0;
  };
  const std::int32_t* run(int slot, const std::uint32_t* idx, std::int64_t first, std::int64_t n, MatrixView x);
  void* upload(const void* src, std::size_t bytes);

  cudaStream_t stream_;
  NetInputs& inputs_;
  std::vector<Slot> slots_;
  std::vector<void*> owned_;
};

/// null when any dataset is augmented (gathered on the host then).
std::unique_ptr<CudaData> make_cuda_data(cudaStream_t stream, NetInputs& inputs,
                                         std::span<const data::Dataset* const> datasets);

}  // namespace dlsweep::trainer::kernels::cuda
