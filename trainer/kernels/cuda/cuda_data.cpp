#include "trainer/kernels/cuda/cuda_data.hpp"

#include <stdexcept>

#include "trainer/data/dataset.hpp"
#include "trainer/kernels/cuda/cuda_memory.hpp"

namespace dlsweep::trainer::kernels::cuda {

void* CudaData::upload(const void* src, std::size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes > 0 ? bytes : 1), "cudaMalloc (dataset)");
  owned_.push_back(p);
  if (bytes > 0) check(cudaMemcpyAsync(p, src, bytes, cudaMemcpyHostToDevice, stream_), "dataset upload");
  return p;
}

CudaData::CudaData(cudaStream_t stream, NetInputs& inputs, std::span<const data::Dataset* const> datasets)
    : stream_(stream), inputs_(inputs) {
  for (const data::Dataset* d : datasets) {
    Slot s;
    s.set.features = d->features;
    if (d->byte_backed()) {
      s.set.pixels = static_cast<const std::uint8_t*>(upload(d->pixels.data(), d->pixels.size()));
      s.set.lut = static_cast<const float*>(upload(d->pixel_value.data(), sizeof(float) * 256));
    } else {
      s.set.images = static_cast<const float*>(upload(d->images.data(), d->images.size() * sizeof(float)));
    }
    s.set.labels = static_cast<const std::int32_t*>(upload(d->labels.data(), d->labels.size() * sizeof(std::int32_t)));
    slots_.push_back(s);
  }
  check(cudaStreamSynchronize(stream_), "dataset upload");
}

CudaData::~CudaData() {
  cudaStreamSynchronize(stream_);
  for (auto& s : slots_) {
    cudaFree(s.labels_out);
    cudaFree(s.idx);
  }
  for (void* p : owned_) cudaFree(p);
}

bool CudaData::owns(const std::int32_t* labels) const {
  for (const auto& s : slots_)
    if (labels == s.labels_out) return true;
  return false;
}

const std::int32_t* CudaData::run(int slot, const std::uint32_t* idx, std::int64_t first, std::int64_t n,
                                  MatrixView x) {
  Slot& s = slots_.at(static_cast<std::size_t>(slot));
  DeviceInputNet* net = inputs_.find(x.data);
  if (!net) throw std::logic_error("CudaData::gather: x is not the input of a net of this backend");
  if (n > s.capacity) {
    check(cudaStreamSynchronize(stream_), "gather");
    cudaFree(s.labels_out);
    cudaFree(s.idx);
    s.labels_out = nullptr;
    s.idx = nullptr;
    check(cudaMalloc(reinterpret_cast<void**>(&s.labels_out), n * sizeof(std::int32_t)), "cudaMalloc (labels)");
    check(cudaMalloc(reinterpret_cast<void**>(&s.idx), n * sizeof(std::uint32_t)), "cudaMalloc (indices)");
    s.capacity = n;
  }
  const std::uint32_t* idx_dev = nullptr;
  if (idx) {
    // From pageable memory: the call returns once it has read idx (the caller may reuse it).
    check(cudaMemcpyAsync(s.idx, idx, n * sizeof(std::uint32_t), cudaMemcpyHostToDevice, stream_), "indices");
    idx_dev = s.idx;
  }
  check(gather_rows(s.set, idx_dev, first, n, net->device_input(), x.ld, s.labels_out, stream_), "gather");
  net->input_on_device();
  return s.labels_out;
}

const std::int32_t* CudaData::gather(int slot, const std::uint32_t* idx, std::int64_t n, MatrixView x) {
  return run(slot, idx, 0, n, x);
}

const std::int32_t* CudaData::gather_range(int slot, std::int64_t first, std::int64_t n, MatrixView x) {
  return run(slot, nullptr, first, n, x);
}

std::unique_ptr<CudaData> make_cuda_data(cudaStream_t stream, NetInputs& inputs,
                                         std::span<const data::Dataset* const> datasets) {
  for (const data::Dataset* d : datasets)
    if (d->augment) return nullptr;
  return std::make_unique<CudaData>(stream, inputs, datasets);
}

}  // namespace dlsweep::trainer::kernels::cuda
