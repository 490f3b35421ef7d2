#include "trainer/comm/nccl_support.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "trainer/comm/nccl_bootstrap.hpp"
#include "trainer/kernels/cuda/device_select.hpp"

namespace dlsweep::trainer::comm::nccl {

static_assert(kNcclIdBytes == NCCL_UNIQUE_ID_BYTES, "nccl_bootstrap.hpp's id size is NCCL's");

Status cuda_check(cudaError_t e, std::string_view what, std::string_view where) {
  if (e == cudaSuccess) return {};
  return fail_as(ErrorKind::resources, fmt::format("{}: {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e)),
                 std::string(where), "check the GPU and its driver (nvidia-smi)");
}

Status nccl_check(ncclResult_t r, std::string_view what, std::string_view where) {
  if (r == ncclSuccess) return {};
  return fail_as(ErrorKind::resources, fmt::format("{}: {}", what, ncclGetErrorString(r)), std::string(where),
                 "run with NCCL_DEBUG=INFO to see why");
}

Result<int> pick_device(std::string_view where) {
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
  if (auto s = cuda_check(cudaSetDevice(*dev), "cudaSetDevice", where); !s) return std::unexpected(s.error());
  return *dev;
}

Result<ncclComm_t> init_over(Communicator& host, std::string_view where) {
  const std::string w(where);
  auto id = bootstrap_unique_id(host, [&w]() -> Result<NcclId> {
    ncclUniqueId u;
    if (auto s = nccl_check(ncclGetUniqueId(&u), "ncclGetUniqueId", w); !s) return std::unexpected(s.error());
    NcclId out;
    std::memcpy(out.data(), u.internal, kNcclIdBytes);
    return out;
  });
  if (!id) return std::unexpected(id.error());
  ncclUniqueId u;
  std::memcpy(u.internal, id->data(), kNcclIdBytes);
  ncclComm_t comm = nullptr;
  if (auto s = nccl_check(ncclCommInitRank(&comm, host.size(), u, host.rank()), "ncclCommInitRank", where); !s)
    return std::unexpected(s.error());
  return comm;
}

StreamOrder::~StreamOrder() {
  if (stream_) cudaStreamSynchronize(stream_);
  if (ready_) cudaEventDestroy(ready_);
  if (done_) cudaEventDestroy(done_);
  if (stream_) cudaStreamDestroy(stream_);
}

Status StreamOrder::create(std::string_view where) {
  if (auto s = cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate", where); !s)
    return s;
  if (auto s = cuda_check(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming), "cudaEventCreate", where); !s)
    return s;
  return cuda_check(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "cudaEventCreate", where);
}

Status StreamOrder::before(void* caller, std::string_view where) {
  // One event serves every bucket: a wait takes the event's most recent record at the time of
  // the call, i.e. exactly the caller's work enqueued so far.
  if (auto s = cuda_check(cudaEventRecord(ready_, static_cast<cudaStream_t>(caller)), "cudaEventRecord", where); !s)
    return s;
  return cuda_check(cudaStreamWaitEvent(stream_, ready_, 0), "cudaStreamWaitEvent", where);
}

Status StreamOrder::after(void* caller, std::string_view where) {
  if (auto s = cuda_check(cudaEventRecord(done_, stream_), "cudaEventRecord", where); !s) return s;
  return cuda_check(cudaStreamWaitEvent(static_cast<cudaStream_t>(caller), done_, 0), "cudaStreamWaitEvent", where);
}

}  // namespace dlsweep::trainer::comm::nccl
