#include "trainer/comm/nccl_hierarchical_communicator.hpp"

#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "trainer/comm/hierarchical_plan.hpp"
#include "trainer/comm/nccl_support.hpp"
#include "trainer/kernels/cuda/device_select.hpp"

namespace dlsweep::trainer::comm {
namespace {

constexpr std::string_view kWhere = "comm: nccl-hierarchical";
constexpr std::size_t kAlignFloats = 64;  // staging offsets: 256 bytes

class NcclHierarchical final : public Communicator {
 public:
  static Result<std::unique_ptr<NcclHierarchical>> create(const HostCommFactory& make_world,
                                                         const NodeSplitFactory& split);
  ~NcclHierarchical() override;

  std::string_view name() const override { return "nccl-hierarchical"; }
  int rank() const override { return world_->rank(); }
  int size() const override { return world_->size(); }
  Status allreduce_sum(std::span<float> data) override { return world_->allreduce_sum(data); }
  Status allreduce_sum(std::span<double> data) override { return world_->allreduce_sum(data); }
  Status broadcast(std::span<float> data, int root) override { return world_->broadcast(data, root); }
  Status broadcast(std::span<double> data, int root) override { return world_->broadcast(data, root); }
  Status barrier() override { return world_->barrier(); }
  Status start_allreduce_sum(std::span<float> data) override { return world_->start_allreduce_sum(data); }
  void progress() override;
  Status wait_all() override;
  bool reduces_device_buffers() const override { return true; }
  Status start_device_allreduce_sum(std::span<float> data, void* stream) override;
  Status device_wait_all(void* stream) override;
  std::uint64_t host_staged_bytes() const override { return staged_bytes_; }

 private:
  struct Bucket {
    float* dev = nullptr;
    std::size_t count = 0, offset = 0;  ///< floats; offset into the host staging
  };
  NcclHierarchical() = default;
  Status ensure_staging(std::size_t floats);
  Status ensure_events(std::size_t n);
  Status start_cross(std::size_t upto);
  /// Enqueues the rest of every started device sum (cross-node sums, broadcasts).
  Status complete();
  Status async_error();

  std::unique_ptr<Communicator> world_;  // destroyed last (MPI_Finalize after the splits are freed)
  NodeSplits splits_;
  NodeLayout layout_;
  HierarchicalPlan plan_;
  int device_ = 0;
  ncclComm_t nccl_ = nullptr;
  nccl::StreamOrder order_;
  std::vector<Bucket> buckets_;   ///< started since the last device_wait_all, in launch order
  std::vector<cudaEvent_t> copied_ev_;
  std::vector<char> copied_;
  std::size_t cross_started_ = 0;
  float* staging_ = nullptr;      ///< page-locked (leaders of several nodes only)
  std::size_t staging_cap_ = 0, staging_used_ = 0;
  std::uint64_t staged_bytes_ = 0;
};

Result<std::unique_ptr<NcclHierarchical>> NcclHierarchical::create(const HostCommFactory& make_world,
                                                                   const NodeSplitFactory& split) {
  auto dev = nccl::pick_device(kWhere);
  if (!dev) return std::unexpected(dev.error());
  auto local = kernels::cuda::local_rank([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
  if (!local) return std::unexpected(local.error());
  auto world = make_world();
  if (!world) return std::unexpected(world.error());
  std::unique_ptr<NcclHierarchical> c(new NcclHierarchical());
  c->world_ = std::move(*world);
  c->device_ = *dev;
  // One rank alone knows no local size: it is its node.
  const int local_size = c->world_->size() == 1 ? 1 : local->size;
  auto layout = node_layout(c->world_->rank(), c->world_->size(), local->rank, local_size);
  if (!layout) return std::unexpected(layout.error());
  c->layout_ = *layout;
  c->plan_ = hierarchical_plan(c->layout_);
  auto splits = split(*c->world_, c->layout_);
  if (!splits) return std::unexpected(splits.error());
  c->splits_ = std::move(*splits);
  if (auto s = c->order_.create(kWhere); !s) return std::unexpected(s.error());
  auto comm = nccl::init_over(*c->splits_.node, kWhere);
  if (!comm) return std::unexpected(comm.error());
  c->nccl_ = *comm;
  return c;
}

NcclHierarchical::~NcclHierarchical() {
  if (order_.stream()) cudaStreamSynchronize(order_.stream());
  if (nccl_) ncclCommDestroy(nccl_);
  for (cudaEvent_t e : copied_ev_) cudaEventDestroy(e);
  if (staging_) cudaFreeHost(staging_);
  splits_ = {};  // before world_ (member order does the rest)
}

Status NcclHierarchical::async_error() {
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(nccl_, &async);
  return nccl::nccl_check(async, "NCCL (asynchronous error)", kWhere);
}

Status NcclHierarchical::ensure_events(std::size_t n) {
  while (copied_ev_.size() < n) {
    cudaEvent_t e = nullptr;
    if (auto s = nccl::cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate", kWhere); !s)
      return s;
    copied_ev_.push_back(e);
  }
  return {};
}

Status NcclHierarchical::ensure_staging(std::size_t floats) {
  if (staging_used_ + floats <= staging_cap_) return {};
  // Grows between steps only when a step outgrows it: complete what uses the old buffer first.
  const std::size_t want = staging_used_ + floats;
  if (!buckets_.empty()) {
    if (auto s = nccl::cuda_check(cudaStreamSynchronize(order_.stream()), "NCCL stream", kWhere); !s) return s;
    if (auto s = start_cross(buckets_.size()); !s) return s;
    if (auto s = splits_.cross->wait_all(); !s) return s;
  }
  float* bigger = nullptr;
  if (auto s = nccl::cuda_check(cudaMallocHost(reinterpret_cast<void**>(&bigger), want * sizeof(float)),
                                "cudaMallocHost (staging)", kWhere);
      !s)
    return s;
  if (staging_) {
    std::memcpy(bigger, staging_, staging_used_ * sizeof(float));
    cudaFreeHost(staging_);
  }
  staging_ = bigger;
  staging_cap_ = want;
  return {};
}

Status NcclHierarchical::start_cross(std::size_t upto) {
  for (; cross_started_ < upto; ++cross_started_) {
    const Bucket& b = buckets_[cross_started_];
    if (auto s = splits_.cross->start_allreduce_sum(std::span<float>(staging_ + b.offset, b.count)); !s) return s;
  }
  return {};
}

Status NcclHierarchical::start_device_allreduce_sum(std::span<float> data, void* stream) {
  if (data.empty()) return {};
  if (auto s = order_.before(stream, kWhere); !s) return s;
  cudaStream_t st = order_.stream();
  Bucket b{data.data(), data.size(), 0};
  if (plan_.has(HierPhase::node_allreduce))
    if (auto s = nccl::nccl_check(ncclAllReduce(b.dev, b.dev, b.count, ncclFloat32, ncclSum, nccl_, st),
                                  "ncclAllReduce", kWhere);
        !s)
      return s;
  if (plan_.has(HierPhase::node_reduce))
    if (auto s = nccl::nccl_check(ncclReduce(b.dev, b.dev, b.count, ncclFloat32, ncclSum, plan_.node_root, nccl_, st),
                                  "ncclReduce", kWhere);
        !s)
      return s;
  if (plan_.stages_host()) {
    if (auto s = ensure_staging((b.count + kAlignFloats - 1) / kAlignFloats * kAlignFloats); !s) return s;
    if (auto s = ensure_events(buckets_.size() + 1); !s) return s;
    b.offset = staging_used_;
    staging_used_ += (b.count + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
    if (auto s = nccl::cuda_check(cudaMemcpyAsync(staging_ + b.offset, b.dev, b.count * sizeof(float),
                                                  cudaMemcpyDeviceToHost, st),
                                  "copy to host", kWhere);
        !s)
      return s;
    if (auto s = nccl::cuda_check(cudaEventRecord(copied_ev_[buckets_.size()], st), "cudaEventRecord", kWhere); !s)
      return s;
    staged_bytes_ += b.count * sizeof(float);
    copied_.push_back(0);
  }
  buckets_.push_back(b);
  progress();
  return {};
}

void NcclHierarchical::progress() {
  if (!plan_.stages_host()) {
    world_->progress();
    return;
  }
  for (std::size_t i = cross_started_; i < buckets_.size() && !copied_[i]; ++i) {
    if (cudaEventQuery(copied_ev_[i]) != cudaSuccess) break;
    copied_[i] = 1;
  }
  (void)start_cross(cross_startable(copied_, cross_started_));  // a failure shows again in device_wait_all
  splits_.cross->progress();
}

Status NcclHierarchical::device_wait_all(void* stream) {
  if (auto s = async_error(); !s) return s;
  if (buckets_.empty()) return {};
  if (auto s = complete(); !s) return s;
  return order_.after(stream, kWhere);
}

Status NcclHierarchical::complete() {
  if (buckets_.empty()) return {};
  cudaStream_t st = order_.stream();
  if (plan_.stages_host()) {
    for (std::size_t i = cross_started_; i < buckets_.size(); ++i)
      if (auto s = nccl::cuda_check(cudaEventSynchronize(copied_ev_[i]), "copy to host", kWhere); !s) return s;
    if (auto s = start_cross(buckets_.size()); !s) return s;
    if (auto s = splits_.cross->wait_all(); !s) return s;
    for (const Bucket& b : buckets_) {
      if (auto s = nccl::cuda_check(cudaMemcpyAsync(b.dev, staging_ + b.offset, b.count * sizeof(float),
                                                    cudaMemcpyHostToDevice, st),
                                    "copy to device", kWhere);
          !s)
        return s;
      staged_bytes_ += b.count * sizeof(float);
    }
  }
  if (plan_.has(HierPhase::node_broadcast))
    for (const Bucket& b : buckets_)
      if (auto s = nccl::nccl_check(ncclBroadcast(b.dev, b.dev, b.count, ncclFloat32, plan_.node_root, nccl_, st),
                                    "ncclBroadcast", kWhere);
          !s)
        return s;
  buckets_.clear();
  copied_.clear();
  cross_started_ = 0;
  staging_used_ = 0;
  return {};
}

Status NcclHierarchical::wait_all() {
  if (auto s = complete(); !s) return s;
  if (auto s = world_->wait_all(); !s) return s;
  return nccl::cuda_check(cudaStreamSynchronize(order_.stream()), "NCCL stream", kWhere);
}

}  // namespace

Result<std::unique_ptr<Communicator>> make_nccl_hierarchical_communicator(const HostCommFactory& make_world,
                                                                         const NodeSplitFactory& split) {
  auto c = NcclHierarchical::create(make_world, split);
  if (!c) return std::unexpected(c.error());
  return std::unique_ptr<Communicator>(std::move(*c));
}

}  // namespace dlsweep::trainer::comm
