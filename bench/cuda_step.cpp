// bench_cuda_step — one training step of the MLP 784-512-512-10 (ReLU) on the GPU through
// dlsweep's own CUDA kernels (trainer/kernels/cuda/: three cuBLASLt dense layers with the
// bias+ReLU epilogue, softmax cross-entropy, the fused multi-tensor SGD with momentum), and
// the same step in PyTorch (bench/pytorch_cuda_step.py, eager, fused SGD) in the same run.
//
// The figure: samples/s per (precision, batch), ours launched on a stream, replayed as a CUDA
// graph, and replayed with autotuned GEMM algorithms (CublasLtDense's `autotune`), and the
// best of ours over PyTorch's, measured in the same invocation on the same GPU.
// Data are synthetic and already on the device (no copies in the timed region); the step is
// forward, loss, backward, update — exactly the work dlsweep-train's step does per batch.
//
//   build-gpu/bin/bench_cuda_step --batches 64,256,1024,4096 --steps 300
//
// Exits 77 (and says why) without a usable GPU.
#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "trainer/kernels/cuda/cublaslt_dense.hpp"
#include "trainer/kernels/cuda/cuda_info.hpp"
#include "trainer/kernels/cuda/device_kernels.hpp"
#include "trainer/kernels/matrix.hpp"

namespace kc = dlsweep::trainer::kernels::cuda;
using dlsweep::trainer::kernels::padded_ld;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_cuda_step: %s\n", what.c_str());
  std::exit(1);
}
void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorString(e));
}

struct Layer {
  std::int64_t in, out;
  bool relu;
};
constexpr Layer kLayers[] = {{784, 512, true}, {512, 512, true}, {512, 10, false}};
constexpr double kFlopsPerSample = 6.0 * (784 * 512 + 512 * 512 + 512 * 10);  // fwd + 2 bwd GEMMs

// One MLP, its parameters in one arena (w, b per layer), activations for `n` rows.
class Mlp {
 public:
  Mlp(cublasLtHandle_t h, std::int64_t n, bool tf32, bool autotune) : n_(n) {
    std::int64_t arena = 0;
    for (const auto& l : kLayers) {
      off_w_.push_back(arena);
      arena += l.in * padded_ld(l.out);
      off_b_.push_back(arena);
      arena += padded_ld(l.out);
    }
    arena_ = arena;
    w_ = alloc<float>(arena);
    g_ = alloc<float>(arena);
    v_ = alloc<float>(arena);
    std::mt19937 rng(1);
    std::vector<float> host(arena, 0.0f);
    for (std::size_t i = 0; i < std::size(kLayers); ++i) {
      const auto& l = kLayers[i];
      std::normal_distribution<float> d(0.0f, std::sqrt(2.0f / static_cast<float>(l.in)));
      for (std::int64_t r = 0; r < l.in; ++r)
        for (std::int64_t c = 0; c < l.out; ++c) host[off_w_[i] + r * padded_ld(l.out) + c] = d(rng);
    }
    ck(cudaMemcpy(w_, host.data(), arena * sizeof(float), cudaMemcpyHostToDevice), "copy weights");
    std::vector<float> xs(n * padded_ld(784), 0.0f);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t c = 0; c < 784; ++c) xs[r * padded_ld(784) + c] = u(rng);
    std::vector<std::int32_t> labels(n);
    for (auto& l : labels) l = static_cast<std::int32_t>(rng() % 10);
    acts_.push_back(alloc<float>(xs.size()));
    ck(cudaMemcpy(acts_[0], xs.data(), xs.size() * sizeof(float), cudaMemcpyHostToDevice), "copy x");
    for (const auto& l : kLayers) {
      acts_.push_back(alloc<float>(n * padded_ld(l.out)));
      grads_.push_back(alloc<float>(n * padded_ld(l.out)));
    }
    labels_ = alloc<std::int32_t>(n);
    ck(cudaMemcpy(labels_, labels.data(), n * sizeof(std::int32_t), cudaMemcpyHostToDevice), "copy labels");
    row_loss_ = alloc<double>(n);
    row_correct_ = alloc<std::int32_t>(n);
    total_ = alloc<double>(1);
    count_ = alloc<long long>(1);
    ws_bytes_ = std::size_t{32} << 20;
    ws_ = alloc<char>(ws_bytes_);
    for (std::size_t i = 0; i < std::size(kLayers); ++i) {
      const auto& l = kLayers[i];
      kc::DenseShape s{n, l.in, l.out, padded_ld(l.in), padded_ld(l.out), padded_ld(l.out), i == 0 ? 0 : padded_ld(l.in)};
      auto d = kc::CublasLtDense::create(h, s, l.relu, tf32, ws_, ws_bytes_, autotune);
      if (!d) die("cuBLASLt dense: " + d.error().message());
      dense_.push_back(std::move(*d));
    }
    std::vector<kc::MtTensor> mt;
    for (std::size_t i = 0; i < std::size(kLayers); ++i) {
      const auto& l = kLayers[i];
      for (int b = 0; b < 2; ++b) {
        kc::MtTensor t;
        const std::int64_t off = b ? off_b_[i] : off_w_[i];
        t.w = w_ + off;
        t.g = g_ + off;
        t.s1 = v_ + off;
        t.n = b ? padded_ld(l.out) : l.in * padded_ld(l.out);
        t.wd = b ? 0.0f : 5e-4f;
        t.lr = 0.05;
        t.m_eff = 0.9f;
        max_n_ = std::max(max_n_, t.n);
        mt.push_back(t);
      }
    }
    mt_count_ = static_cast<int>(mt.size());
    mt_ = alloc<kc::MtTensor>(mt.size());
    ck(cudaMemcpy(mt_, mt.data(), mt.size() * sizeof(kc::MtTensor), cudaMemcpyHostToDevice), "copy tensors");
  }
  ~Mlp() {
    for (void* p : owned_) cudaFree(p);
  }

  // The phases of a step, for --phases (an event is recorded after each).
  static constexpr const char* kPhases[] = {"fwd 784-512", "fwd 512-512", "fwd 512-10", "loss",
                                            "dz,db 10",    "gemms 10",    "dz,db 512", "gemms 512-512",
                                            "dz,db 512",   "gemm 784-512", "sgd"};

  // One step; with `marks`, records marks[k] after phase k.
  void step(cudaStream_t s, cudaEvent_t* marks = nullptr) {
    int k = 0;
    auto mark = [&] {
      if (marks) ck(cudaEventRecord(marks[k++], s), "record");
    };
    const std::size_t L = std::size(kLayers);
    for (std::size_t i = 0; i < L; ++i) {
      if (auto st = dense_[i]->forward(acts_[i], w_ + off_w_[i], w_ + off_b_[i], acts_[i + 1], s); !st)
        die("forward: " + st.error().message());
      mark();
    }
    ck(kc::softmax_xent(acts_[L], n_, 10, padded_ld(10), labels_, 1.0f / static_cast<float>(n_), grads_[L - 1],
                        padded_ld(10), row_loss_, row_correct_, total_, count_, s),
       "softmax_xent");
    mark();
    for (std::size_t i = L; i-- > 0;) {
      float* dx = i == 0 ? nullptr : grads_[i - 1];
      if (auto st = dense_[i]->backward_epilogue(acts_[i + 1], grads_[i], g_ + off_b_[i], s); !st)
        die("backward: " + st.error().message());
      mark();
      if (auto st = dense_[i]->backward_gemms(acts_[i], w_ + off_w_[i], grads_[i], g_ + off_w_[i], dx, s); !st)
        die("backward: " + st.error().message());
      mark();
    }
    ck(kc::sgd_multi(mt_, mt_count_, max_n_, 0.9f, false, false, s), "sgd_multi");
    mark();
  }

 private:
  template <class T>
  T* alloc(std::size_t n) {
    T* p = nullptr;
    ck(cudaMalloc(reinterpret_cast<void**>(&p), std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMalloc");
    ck(cudaMemset(p, 0, std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMemset");
    owned_.push_back(p);
    return p;
  }
  std::int64_t n_;
  std::int64_t arena_ = 0, max_n_ = 0;
  std::vector<std::int64_t> off_w_, off_b_;
  float *w_ = nullptr, *g_ = nullptr, *v_ = nullptr;
  std::vector<float*> acts_, grads_;
  std::int32_t* labels_ = nullptr;
  double* row_loss_ = nullptr;
  std::int32_t* row_correct_ = nullptr;
  double* total_ = nullptr;
  long long* count_ = nullptr;
  char* ws_ = nullptr;
  std::size_t ws_bytes_ = 0;
  std::vector<std::unique_ptr<kc::CublasLtDense>> dense_;
  kc::MtTensor* mt_ = nullptr;
  int mt_count_ = 0;
  std::vector<void*> owned_;
};

// Samples/s of `steps` steps after `warm` untimed ones; best of 3 repetitions.
template <class F>
double time_steps(F&& launch, int steps, std::int64_t n, cudaStream_t s) {
  for (int i = 0; i < 20; ++i) launch();
  ck(cudaStreamSynchronize(s), "warm-up");
  cudaEvent_t a, b;
  ck(cudaEventCreate(&a), "event");
  ck(cudaEventCreate(&b), "event");
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    ck(cudaEventRecord(a, s), "record");
    for (int i = 0; i < steps; ++i) launch();
    ck(cudaEventRecord(b, s), "record");
    ck(cudaEventSynchronize(b), "sync");
    float ms = 0;
    ck(cudaEventElapsedTime(&ms, a, b), "elapsed");
    best = std::max(best, static_cast<double>(steps) * static_cast<double>(n) / (ms / 1e3));
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return best;
}

std::string fmt_ratio(double r) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2fx", r);
  return b;
}

std::vector<std::int64_t> parse_list(const std::string& s) {
  std::vector<std::int64_t> out;
  std::stringstream in(s);
  std::string tok;
  while (std::getline(in, tok, ','))
    if (!tok.empty()) out.push_back(std::stoll(tok));
  return out;
}

// PyTorch's figures, "prec batch samples_per_s" lines from bench/pytorch_cuda_step.py.
std::map<std::pair<std::string, std::int64_t>, double> run_pytorch(const std::string& python, const std::string& batches,
                                                                   int steps) {
  std::map<std::pair<std::string, std::int64_t>, double> out;
  const std::string cmd = "'" + python + "' '" DLSWEEP_PYTORCH_CUDA_STEP "' --batches " + batches +
                          " --steps " + std::to_string(steps);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char line[512];
  while (std::fgets(line, sizeof line, p)) {
    char prec[16];
    long long batch = 0;
    double sps = 0;
    if (std::sscanf(line, "pytorch %15s %lld %lf", prec, &batch, &sps) == 3) out[{prec, batch}] = sps;
    else std::fputs(line, stderr);
  }
  if (pclose(p) != 0) std::fprintf(stderr, "bench_cuda_step: the PyTorch peer failed (%s)\n", cmd.c_str());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string batches = "64,256,1024,4096", python = "python3";
  int steps = 300;
  bool phases = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--batches") batches = next();
    else if (a == "--steps") steps = std::stoi(next());
    else if (a == "--python") python = next();
    else if (a == "--phases") phases = true;
    else die("unknown argument " + a + " (--batches LIST --steps N --python PATH|none --phases)");
  }
  std::string why;
  if (kc::device_count(&why) < 1) {
    std::printf("SKIP: no usable CUDA device (%s)\n", why.c_str());
    return 77;
  }
  cudaDeviceProp prop{};
  ck(cudaGetDeviceProperties(&prop, 0), "device properties");
  std::printf("bench_cuda_step: %s, %s\n", prop.name, kc::build_versions().c_str());
  std::printf("command: bench_cuda_step --batches %s --steps %d\n", batches.c_str(), steps);
  const auto peer = python == "none" ? decltype(run_pytorch("", "", 0)){} : run_pytorch(python, batches, steps);

  cublasLtHandle_t h = nullptr;
  if (cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS) die("cublasLtCreate failed");
  cudaStream_t s = nullptr;
  ck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  std::printf("%-5s %6s %13s %13s %13s %8s %13s %9s\n", "prec", "batch", "stream/s", "graph/s", "tuned graph/s",
              "TFLOP/s", "pytorch/s", "best/pt");
  // Samples/s of the step replayed as a CUDA graph (0 when capture fails).
  auto graph_rate = [&](Mlp& mlp, std::int64_t n) {
    double sps = 0;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
      mlp.step(s);
      if (cudaStreamEndCapture(s, &graph) == cudaSuccess && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess)
        sps = time_steps([&] { ck(cudaGraphLaunch(exec, s), "graph launch"); }, steps, n, s);
    }
    cudaGetLastError();
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    return sps;
  };
  for (const char* prec : {"fp32", "tf32"}) {
    for (std::int64_t n : parse_list(batches)) {
      const bool tf32 = std::string(prec) == "tf32";
      Mlp mlp(h, n, tf32, false);
      const double stream_sps = time_steps([&] { mlp.step(s); }, steps, n, s);
      const double graph_sps = graph_rate(mlp, n);
      Mlp tuned(h, n, tf32, true);
      const double tuned_sps = graph_rate(tuned, n);
      const auto it = peer.find({prec, n});
      const double pt = it == peer.end() ? 0 : it->second;
      const double best = std::max({stream_sps, graph_sps, tuned_sps});
      std::printf("%-5s %6lld %13.0f %13.0f %13.0f %8.2f %13.0f %9s\n", prec, static_cast<long long>(n), stream_sps,
                  graph_sps, tuned_sps, best * kFlopsPerSample / 1e12, pt, pt > 0 ? fmt_ratio(best / pt).c_str() : "-");
    }
  }
  if (phases) {
    // Where a step's time goes: mean milliseconds per phase over `steps` steps, per batch.
    constexpr int P = static_cast<int>(std::size(Mlp::kPhases));
    for (const char* prec : {"fp32", "tf32"})
      for (std::int64_t n : parse_list(batches)) {
        Mlp mlp(h, n, std::string(prec) == "tf32", false);
        cudaEvent_t start, marks[P];
        ck(cudaEventCreate(&start), "event");
        for (auto& e : marks) ck(cudaEventCreate(&e), "event");
        double sum[P] = {};
        for (int i = 0; i < 10; ++i) mlp.step(s);
        for (int i = 0; i < steps; ++i) {
          ck(cudaEventRecord(start, s), "record");
          mlp.step(s, marks);
          ck(cudaEventSynchronize(marks[P - 1]), "sync");
          float ms = 0;
          for (int k = 0; k < P; ++k) {
            ck(cudaEventElapsedTime(&ms, k == 0 ? start : marks[k - 1], marks[k]), "elapsed");
            sum[k] += ms;
          }
        }
        std::printf("phases %s batch %lld (ms per step):", prec, static_cast<long long>(n));
        for (int k = 0; k < P; ++k) std::printf(" %s=%.3f", Mlp::kPhases[k], sum[k] / steps);
        std::printf("\n");
        cudaEventDestroy(start);
        for (auto& e : marks) cudaEventDestroy(e);
      }
  }
  cudaStreamDestroy(s);
  cublasLtDestroy(h);
  return 0;
}
