#include "trainer/comm/nccl_communicator.hpp"

#include "trainer/comm/nccl_support.hpp"

namespace dlsweep::trainer::comm {
namespace {

constexpr std::string_view kWhere = "comm: nccl";
constexpr std::size_t kAlign = 256;  // staging offsets, for NCCL's and the copies' alignment

class NcclCommunicator final : public Communicator {
 public:
  static Result<std::unique_ptr<NcclCommunicator>> create(const HostCommFactory& make_host);
  ~NcclCommunicator() override;

  std::string_view name() const override { return "nccl"; }
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  Status allreduce_sum(std::span<float> data) override;
  Status allreduce_sum(std::span<double> data) override;
  Status broadcast(std::span<float> data, int root) override;
  Status broadcast(std::span<double> data, int root) override;
  Status barrier() override;
  Status start_allreduce_sum(std::span<float> data) override;
  Status wait_all() override;
  bool reduces_device_buffers() const override { return true; }
  Status start_device_allreduce_sum(std::span<float> data, void* stream) override;
  Status device_wait_all(void* stream) override;
  std::uint64_t host_staged_bytes() const override { return staged_bytes_; }

 private:
  explicit NcclCommunicator(std::unique_ptr<Communicator> host) : host_(std::move(host)) {}
  Status enqueue_staged(float* host, std::size_t count);
  Status ensure_capacity(std::size_t bytes);
  Status async_error();

  std::unique_ptr<Communicator> host_;
  int device_ = 0;
  ncclComm_t nccl_ = nullptr;
  nccl::StreamOrder order_;
  void* staging_ = nullptr;
  std::size_t capacity_ = 0, used_ = 0;  ///< bytes of staging_; bytes taken by started sums
  bool pending_ = false;                 ///< work enqueued on the stream since the last wait
  bool device_pending_ = false;          ///< device sums not yet waited for by a caller's stream
  std::uint64_t staged_bytes_ = 0;
};

Result<std::unique_ptr<NcclCommunicator>> NcclCommunicator::create(const HostCommFactory& make_host) {
  // The device first: without one, fail before MPI is initialised.
  auto dev = nccl::pick_device(kWhere);
  if (!dev) return std::unexpected(dev.error());
  auto host = make_host();
  if (!host) return std::unexpected(host.error());
  std::unique_ptr<NcclCommunicator> c(new NcclCommunicator(std::move(*host)));
  c->device_ = *dev;
  if (auto s = c->order_.create(kWhere); !s) return std::unexpected(s.error());
  auto comm = nccl::init_over(*c->host_, kWhere);
  if (!comm) return std::unexpected(comm.error());
  c->nccl_ = *comm;
  return c;
}

NcclCommunicator::~NcclCommunicator() {
  if (order_.stream()) cudaStreamSynchronize(order_.stream());
  if (nccl_) ncclCommDestroy(nccl_);
  if (staging_) cudaFree(staging_);
}

Status NcclCommunicator::async_error() {
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(nccl_, &async);
  return nccl::nccl_check(async, "NCCL (asynchronous error)", kWhere);
}

Status NcclCommunicator::ensure_capacity(std::size_t bytes) {
  if (used_ + bytes <= capacity_) return {};
  const std::size_t want = used_ + bytes;
  if (auto s = wait_all(); !s) return s;  // the started sums still use the old buffer
  if (staging_) cudaFree(staging_);
  staging_ = nullptr;
  capacity_ = 0;
  if (auto s = nccl::cuda_check(cudaMalloc(&staging_, want), "cudaMalloc (NCCL staging)", kWhere); !s) return s;
  capacity_ = want;
  return {};
}

Status NcclCommunicator::enqueue_staged(float* host, std::size_t count) {
  const std::size_t bytes = count * sizeof(float);
  if (bytes == 0) return {};
  const std::size_t padded = (bytes + kAlign - 1) / kAlign * kAlign;
  if (auto s = ensure_capacity(padded); !s) return s;
  void* dev = static_cast<char*>(staging_) + used_;
  used_ += padded;
  pending_ = true;
  staged_bytes_ += 2 * bytes;
  cudaStream_t st = order_.stream();
  if (auto s = nccl::cuda_check(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, st), "copy to device", kWhere);
      !s)
    return s;
  if (auto s = nccl::nccl_check(ncclAllReduce(dev, dev, count, ncclFloat32, ncclSum, nccl_, st), "ncclAllReduce", kWhere);
      !s)
    return s;
  return nccl::cuda_check(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, st), "copy to host", kWhere);
}

Status NcclCommunicator::start_allreduce_sum(std::span<float> data) { return enqueue_staged(data.data(), data.size()); }

Status NcclCommunicator::allreduce_sum(std::span<float> data) {
  if (auto s = enqueue_staged(data.data(), data.size()); !s) return s;
  return wait_all();
}

Status NcclCommunicator::allreduce_sum(std::span<double> data) { return host_->allreduce_sum(data); }

Status NcclCommunicator::broadcast(std::span<float> data, int root) {
  if (auto s = wait_all(); !s) return s;
  return host_->broadcast(data, root);
}

Status NcclCommunicator::broadcast(std::span<double> data, int root) {
  if (auto s = wait_all(); !s) return s;
  return host_->broadcast(data, root);
}

Status NcclCommunicator::barrier() {
  if (auto s = wait_all(); !s) return s;
  return host_->barrier();
}

Status NcclCommunicator::start_device_allreduce_sum(std::span<float> data, void* stream) {
  if (data.empty()) return {};
  if (auto s = order_.before(stream, kWhere); !s) return s;
  device_pending_ = true;
  pending_ = true;
  return nccl::nccl_check(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, ncclSum, nccl_,
                                        order_.stream()),
                          "ncclAllReduce", kWhere);
}

Status NcclCommunicator::device_wait_all(void* stream) {
  if (auto s = async_error(); !s) return s;
  if (!device_pending_) return {};
  device_pending_ = false;
  return order_.after(stream, kWhere);
}

Status NcclCommunicator::wait_all() {
  if (!pending_) return {};
  pending_ = false;
  device_pending_ = false;
  used_ = 0;
  const cudaError_t e = cudaStreamSynchronize(order_.stream());
  if (auto s = async_error(); !s) return s;
  return nccl::cuda_check(e, "NCCL stream", kWhere);
}

}  // namespace

Result<std::unique_ptr<Communicator>> make_nccl_communicator(const HostCommFactory& make_host) {
  auto c = NcclCommunicator::create(make_host);
  if (!c) return std::unexpected(c.error());
  return std::unique_ptr<Communicator>(std::move(*c));
}

}  // namespace dlsweep::trainer::comm
