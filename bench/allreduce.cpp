// allreduce.cpp — bench_allreduce: the gradient allreduce of data parallelism by transport and
// message size, OSU-style (osu_allreduce: latency per call, then bandwidth), every column
// measured in the same run so that the ratios compare like with like. CUDA builds only.
//
// Columns (each where this build and launch can run it; "n/a" and why otherwise):
//   mpi-host     MPI_Allreduce of a host array (comm: mpi on the CPU)
//   mpi-staged   a device array copied to page-locked host memory, MPI, copied back
//                (comm: mpi on a GPU: GradSync's staged path)
//   nccl         ncclAllReduce in place on the device, on the communicator's own stream,
//                ordered after and before the caller's stream by events (comm: nccl's device path)
//   nccl-hier    comm: nccl-hierarchical's device path (NCCL in the node, MPI among leaders)
// Per size: latency in microseconds (mean of --iters calls after --warmup, each completed:
// the caller's stream synchronised), algorithm bandwidth bytes/latency in GB/s, bus bandwidth
// algbw * 2(P-1)/P (NCCL's convention), and nccl/mpi-staged as a speedup ratio.
//
// usage: [mpirun -np P] bench_allreduce [--sizes 4K,64K,1M,16M,64M] [--iters 50] [--warmup 5]
//                                       [--methods mpi-host,mpi-staged,nccl,nccl-hier]
// One rank works without MPI (the transports then reduce over one rank: what is measured is
// each path's fixed cost and its copies). Several ranks on one GPU: NCCL refuses to share a
// device, so run P ranks on P GPUs for the NCCL columns.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "trainer/comm/comm_registry.hpp"
#include "trainer/comm/communicator.hpp"

namespace comm = dlsweep::trainer::comm;

namespace {

struct Options {
  std::vector<std::size_t> sizes = {4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20};
  int iters = 50, warmup = 5;
  std::vector<std::string> methods = {"mpi-host", "mpi-staged", "nccl", "nccl-hier"};
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

std::size_t parse_size(const std::string& s) {
  std::size_t mult = 1;
  std::string n = s;
  if (!n.empty() && (n.back() == 'K' || n.back() == 'k')) mult = 1 << 10;
  if (!n.empty() && (n.back() == 'M' || n.back() == 'm')) mult = 1 << 20;
  if (mult != 1) n.pop_back();
  return static_cast<std::size_t>(std::stoull(n)) * mult;
}

void cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "bench_allreduce: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

using clock_type = std::chrono::steady_clock;

struct Buffers {
  float* dev = nullptr;
  float* pinned = nullptr;
  std::vector<float> host;
  std::size_t floats = 0;
};

// One call of `method` on `floats` floats; returns false with `why` when it cannot run.
bool one_call(const std::string& method, comm::Communicator& c, Buffers& b, std::size_t floats, cudaStream_t stream,
              std::string& why) {
  const std::size_t bytes = floats * sizeof(float);
  if (method == "mpi-host") {
    auto s = c.allreduce_sum(std::span<float>(b.host.data(), floats));
    if (!s) why = s.error().what;
    return static_cast<bool>(s);
  }
  if (method == "mpi-staged") {
    cuda_ok(cudaMemcpyAsync(b.pinned, b.dev, bytes, cudaMemcpyDeviceToHost, stream), "copy to host");
    cuda_ok(cudaStreamSynchronize(stream), "sync");
    auto s = c.allreduce_sum(std::span<float>(b.pinned, floats));
    if (!s) {
      why = s.error().what;
      return false;
    }
    cuda_ok(cudaMemcpyAsync(b.dev, b.pinned, bytes, cudaMemcpyHostToDevice, stream), "copy to device");
    cuda_ok(cudaStreamSynchronize(stream), "sync");
    return true;
  }
  auto s = c.start_device_allreduce_sum(std::span<float>(b.dev, floats), stream);
  if (s) s = c.device_wait_all(stream);
  if (!s) {
    why = s.error().what;
    return false;
  }
  cuda_ok(cudaStreamSynchronize(stream), "sync");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_allreduce: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--sizes") {
      o.sizes.clear();
      for (const auto& s : split(next())) o.sizes.push_back(parse_size(s));
    } else if (a == "--iters") o.iters = std::stoi(next());
    else if (a == "--warmup") o.warmup = std::stoi(next());
    else if (a == "--methods") o.methods = split(next());
    else {
      std::fprintf(stderr, "usage: bench_allreduce [--sizes 4K,1M,64M] [--iters N] [--warmup N] [--methods ...]\n");
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) {
    std::printf("SKIP: no usable CUDA device: bench_allreduce did not run\n");
    return 77;
  }
  // The communicators: NCCL ones first (they choose and set the device before MPI starts).
  std::map<std::string, std::unique_ptr<comm::Communicator>> comms;
  std::map<std::string, std::string> unavailable;
  for (const auto& m : o.methods) {
    if (m != "mpi-host" && m != "mpi-staged" && m != "nccl" && m != "nccl-hier") {
      std::fprintf(stderr, "bench_allreduce: unknown method %s (mpi-host, mpi-staged, nccl, nccl-hier)\n", m.c_str());
      return 2;
    }
    std::string kind = m == "nccl" ? "nccl" : m == "nccl-hier" ? "nccl-hierarchical" : "mpi";
    if (kind == "mpi" && !comm::mpi_built()) {
      if (comm::launched_with_ranks()) {
        unavailable[m] = "this build has no MPI";
        continue;
      }
      kind = "local";  // one rank: what is measured is the path's fixed cost and its copies
    }
    auto c = comm::make_communicator(kind);
    if (!c) unavailable[m] = c.error().what;
    else comms[m] = std::move(*c);
  }
  int rank = 0, ranks = 1;
  for (auto& [m, c] : comms) {
    rank = c->rank();
    ranks = c->size();
  }
  cudaStream_t stream = nullptr;
  cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const std::size_t max_bytes = *std::max_element(o.sizes.begin(), o.sizes.end());
  Buffers b;
  b.floats = max_bytes / sizeof(float) + 1;
  cuda_ok(cudaMalloc(reinterpret_cast<void**>(&b.dev), b.floats * sizeof(float)), "cudaMalloc");
  cuda_ok(cudaMallocHost(reinterpret_cast<void**>(&b.pinned), b.floats * sizeof(float)), "cudaMallocHost");
  cuda_ok(cudaMemset(b.dev, 0, b.floats * sizeof(float)), "cudaMemset");
  b.host.assign(b.floats, 0.0f);

  if (rank == 0) {
    cudaDeviceProp p{};
    int dev = 0;
    cudaGetDevice(&dev);
    cudaGetDeviceProperties(&p, dev);
    std::printf("# bench_allreduce: %d rank(s), %s, %d iterations after %d warm-up, float sums in place\n", ranks,
                p.name, o.iters, o.warmup);
    for (const auto& [m, why] : unavailable) std::printf("# %s: n/a (%s)\n", m.c_str(), why.c_str());
    std::string head = fmt::format("{:>10}", "bytes");
    for (const auto& m : o.methods)
      if (comms.count(m)) head += fmt::format(" {:>12} {:>8} {:>8}", m + " us", "algGB/s", "busGB/s");
    if (comms.count("nccl") && comms.count("mpi-staged")) head += fmt::format(" {:>18}", "nccl/mpi-staged");
    std::printf("%s\n", head.c_str());
  }
  const double bus = ranks > 1 ? 2.0 * (ranks - 1) / ranks : 1.0;
  int failed = 0;
  for (std::size_t bytes : o.sizes) {
    const std::size_t floats = std::max<std::size_t>(1, bytes / sizeof(float));
    std::string line = fmt::format("{:>10}", floats * sizeof(float));
    std::map<std::string, double> us;
    for (const auto& m : o.methods) {
      auto it = comms.find(m);
      if (it == comms.end()) continue;
      std::string why;
      bool ok = true;
      for (int i = 0; i < o.warmup && ok; ++i) ok = one_call(m, *it->second, b, floats, stream, why);
      if (ok) ok = static_cast<bool>(it->second->barrier());
      const auto t0 = clock_type::now();
      for (int i = 0; i < o.iters && ok; ++i) ok = one_call(m, *it->second, b, floats, stream, why);
      const double t = std::chrono::duration<double>(clock_type::now() - t0).count() / std::max(1, o.iters);
      if (!ok) {
        ++failed;
        line += fmt::format(" {:>30}", "failed");
        if (rank == 0) std::fprintf(stderr, "bench_allreduce: %s: %s\n", m.c_str(), why.c_str());
        continue;
      }
      us[m] = t * 1e6;
      const double alg = static_cast<double>(floats * sizeof(float)) / t / 1e9;
      line += fmt::format(" {:>12.1f} {:>8.2f} {:>8.2f}", t * 1e6, alg, alg * bus);
    }
    if (us.count("nccl") && us.count("mpi-staged")) line += fmt::format(" {:>17.2f}x", us["mpi-staged"] / us["nccl"]);
    if (rank == 0) std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  if (rank == 0)
    for (const auto& [m, c] : comms)
      if (c->host_staged_bytes() > 0 || m == "nccl")
        std::printf("# %s: %llu bytes staged through the host by the communicator\n", m.c_str(),
                    static_cast<unsigned long long>(c->host_staged_bytes()));
  cudaFree(b.dev);
  cudaFreeHost(b.pinned);
  cudaStreamDestroy(stream);
  comms.clear();
  return failed == 0 ? 0 : 1;
}
