#include "trainer/comm/nccl_communicator.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "trainer/comm/mpi_communicator.hpp"
#include "trainer/comm/nccl_bootstrap.hpp"
#include "trainer/kernels/cuda/device_select.hpp"

namespace dlsweep::trainer::comm {
namespace {

Status cuda_check(cudaError_t e, std::string_view what) {
  if (e == cudaSuccess) return {};
  return fail_as(ErrorKind::resources, fmt::format("{}: {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e)),
                 "comm: nccl", "check the GPU and its driver (nvidia-smi)");
}

Status nccl_check(ncclResult_t r, std::string_view what) {
  if (r == ncclSuccess) return {};
  return fail_as(ErrorKind::resources, fmt::format("{}: {}", what, ncclGetErrorString(r)), "comm: nccl",
                 "run with NCCL_DEBUG=INFO to see why");
}

constexpr std::size_t kAlign = 256;  // staging offsets, for NCCL's and the copies' alignment

}  // namespace

class NcclCommunicator final : public Communicator {
 public:
  static Result<std::unique_ptr<NcclCommunicator>> create();
  ~NcclCommunicator() override;

  std::string_view name() const override { return "nccl"; }
  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  Status allreduce_sum(std::span<float> data) override;
  Status allreduce_sum(std::span<double> data) override;
  Status broadcast(std::span<float> data, int root) override;
  Status broadcast(std::span<double> data, int root) override;
  Status barrier() override;
  Status start_allreduce_sum(std::span<float> data) override;
  Status wait_all() override;
  int device() const { return device_; }

 private:
  explicit NcclCommunicator(std::unique_ptr<MpiCommunicator> mpi) : mpi_(std::move(mpi)) {}
  Status enqueue_sum(void* host, std::size_t bytes, std::size_t count, ncclDataType_t type);
  Status ensure_capacity(std::size_t bytes);

  std::unique_ptr<MpiCommunicator> mpi_;
  int device_ = 0;
  ncclComm_t nccl_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* staging_ = nullptr;
  std::size_t capacity_ = 0, used_ = 0;  ///< bytes of staging_; bytes taken by started sums
  bool pending_ = false;
};


Result<std::unique_ptr<NcclCommunicator>> NcclCommunicator::create() {
  // The device first: without one, fail before MPI is initialised.
  auto local = kernels::cuda::local_rank([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
  if (!local) return std::unexpected(local.error());
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) {
    devices = 0;
    (void)cudaGetLastError();
  }
  auto dev = kernels::cuda::select_device(local->rank, devices);
  if (!dev) {
    Error e = dev.error();
    e.where = "comm";  // the params.json key that asked for a GPU
    return std::unexpected(e);
  }
  auto mpi = MpiCommunicator::create();
  if (!mpi) return std::unexpected(mpi.error());
  std::unique_ptr<NcclCommunicator> c(new NcclCommunicator(std::move(*mpi)));
  c->device_ = *dev;
  if (auto s = cuda_check(cudaSetDevice(c->device_), "cudaSetDevice"); !s) return std::unexpected(s.error());
  if (auto s = cuda_check(cudaStreamCreateWithFlags(&c->stream_, cudaStreamNonBlocking), "cudaStreamCreate"); !s)
    return std::unexpected(s.error());
  auto id = bootstrap_unique_id(*c->mpi_, []() -> Result<NcclId> {
    ncclUniqueId u;
    if (auto s = nccl_check(ncclGetUniqueId(&u), "ncclGetUniqueId"); !s) return std::unexpected(s.error());
    NcclId out;
    std::memcpy(out.data(), u.internal, kNcclIdBytes);
    return out;
  });
  if (!id) return std::unexpected(id.error());
  ncclUniqueId u;
  std::memcpy(u.internal, id->data(), kNcclIdBytes);
  if (auto s = nccl_check(ncclCommInitRank(&c->nccl_, c->size(), u, c->rank()), "ncclCommInitRank"); !s)
    return std::unexpected(s.error());
  return c;
}

NcclCommunicator::~NcclCommunicator() {
  if (stream_) cudaStreamSynchronize(stream_);
  if (nccl_) ncclCommDestroy(nccl_);
  if (staging_) cudaFree(staging_);
  if (stream_) cudaStreamDestroy(stream_);
}

Status NcclCommunicator::ensure_capacity(std::size_t bytes) {
  if (used_ + bytes <= capacity_) return {};
  const std::size_t want = used_ + bytes;
  if (auto s = wait_all(); !s) return s;  // the started sums still use the old buffer
  if (staging_) cudaFree(staging_);
  staging_ = nullptr;
  capacity_ = 0;
  if (auto s = cuda_check(cudaMalloc(&staging_, want), "cudaMalloc (NCCL staging)"); !s) return s;
  capacity_ = want;
  return {};
}

Status NcclCommunicator::enqueue_sum(void* host, std::size_t bytes, std::size_t count, ncclDataType_t type) {
  if (bytes == 0) return {};
  const std::size_t padded = (bytes + kAlign - 1) / kAlign * kAlign;
  if (auto s = ensure_capacity(padded); !s) return s;
  void* dev = static_cast<char*>(staging_) + used_;
  used_ += padded;
  pending_ = true;
  if (auto s = cuda_check(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream_), "copy to device"); !s)
    return s;
  if (auto s = nccl_check(ncclAllReduce(dev, dev, count, type, ncclSum, nccl_, stream_), "ncclAllReduce"); !s) return s;
  return cuda_check(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, stream_), "copy to host");
}

Status NcclCommunicator::start_allreduce_sum(std::span<float> data) {
  return enqueue_sum(data.data(), data.size_bytes(), data.size(), ncclFloat32);
}

Status NcclCommunicator::allreduce_sum(std::span<float> data) {
  if (auto s = enqueue_sum(data.data(), data.size_bytes(), data.size(), ncclFloat32); !s) return s;
  return wait_all();
}

Status NcclCommunicator::allreduce_sum(std::span<double> data) {
  if (auto s = enqueue_sum(data.data(), data.size_bytes(), data.size(), ncclFloat64); !s) return s;
  return wait_all();
}

Status NcclCommunicator::broadcast(std::span<float> data, int root) {
  if (auto s = wait_all(); !s) return s;
  return mpi_->broadcast(data, root);
}

Status NcclCommunicator::broadcast(std::span<double> data, int root) {
  if (auto s = wait_all(); !s) return s;
  return mpi_->broadcast(data, root);
}

Status NcclCommunicator::barrier() {
  if (auto s = wait_all(); !s) return s;
  return mpi_->barrier();
}

Status NcclCommunicator::wait_all() {
  if (!pending_) return {};
  pending_ = false;
  used_ = 0;
  const cudaError_t e = cudaStreamSynchronize(stream_);
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(nccl_, &async);
  if (auto s = nccl_check(async, "NCCL (asynchronous error)"); !s) return s;
  return cuda_check(e, "NCCL stream");
}

Result<std::unique_ptr<Communicator>> make_nccl_communicator() {
  auto c = NcclCommunicator::create();
  if (!c) return std::unexpected(c.error());
  return std::unique_ptr<Communicator>(std::move(*c));
}

}  // namespace dlsweep::trainer::comm
