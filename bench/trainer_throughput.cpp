// trainer_throughput.cpp — how close dlsweep-train's training step comes to the machine's
// matmul ceiling. For MLP 784-512-512-10, fp32, on synthetic data it measures, in one run:
//   1. a oneDNN f32 matmul 2048³ (best of N): the CPU's practical GEMM ceiling;
//   2. per batch size, the GEMMs of one training step (forward, dW, dX — the same shapes and
//      padded layouts the trainer uses), each best of N: the step's own GEMM ceiling;
//   3. full training steps (forward + loss + backward + SGD momentum update, warm-up
//      excluded) through the trainer's own Mlp/OnednnKernels/Sgd.
// and prints per batch: samples/s, achieved GFLOP/s counting 6·params·batch FLOPs per step
// (2 forward + 4 backward; the trainer skips the input layer's dX, so it executes fewer),
// that figure as % of the 2048³ matmul, the step's GEMM time as % of the step, and the time
// outside oneDNN kernels as % of the step (split into SGD update, loss, and the rest).
//
// usage: bench_trainer_throughput [--threads N] [--batches 64,256,1024,4096] [--seconds S]
//                                 [--update fused|after] [--verbose]
// --update fused (default, what dlsweep-train does on one rank): each layer's SGD update runs
// as soon as its gradients are ready; after: one update pass after the whole backward.
// --verbose: also the oneDNN implementation chosen for each layer.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "trainer/data/dataset.hpp"
#include "trainer/data/synthetic.hpp"
#include "trainer/kernels/kernels_registry.hpp"
#include "trainer/kernels/onednn_kernels.hpp"
#include "trainer/models/mlp.hpp"
#include "trainer/optim/sgd.hpp"

namespace {

namespace tk = dlsweep::trainer::kernels;
namespace tm = dlsweep::trainer::models;
using clock_type = std::chrono::steady_clock;
using dnnl::memory;

double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

/// Best-of-`reps` seconds of one matmul C[M,N] = op(A)[M,K] · op(B)[K,N] with the given strides.
double time_matmul(const dnnl::engine& eng, dnnl::stream& s, std::int64_t M, std::int64_t K, std::int64_t N,
                   bool trans_a, bool trans_b, bool padded, int reps) {
  auto ld = [&](std::int64_t c) { return padded ? tk::padded_ld(c) : c; };
  auto md = [&](std::int64_t r, std::int64_t c, bool t) {
    return t ? memory::desc({r, c}, memory::data_type::f32, memory::dims{1, ld(r)})
             : memory::desc({r, c}, memory::data_type::f32, memory::dims{ld(c), 1});
  };
  auto a = md(M, K, trans_a), b = md(K, N, trans_b), c = md(M, N, false);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), eng);
  dnnl::matmul mm(pd);
  tk::AlignedBuffer A(static_cast<std::int64_t>(a.get_size() / 4)), B(static_cast<std::int64_t>(b.get_size() / 4)),
      C(static_cast<std::int64_t>(c.get_size() / 4));
  std::fill(A.data(), A.data() + A.size(), 0.5f);
  std::fill(B.data(), B.data() + B.size(), 0.25f);
  memory ma(a, eng, A.data()), mb(b, eng, B.data()), mc(c, eng, C.data());
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
  double best = 1e30;
  for (int r = 0; r < reps + 2; ++r) {
    auto t0 = clock_type::now();
    mm.execute(s, args);
    s.wait();
    if (r >= 2) best = std::min(best, since(t0));
  }
  return best;
}

struct GemmCeiling {
  double seconds = 0;  ///< sum of the best times of the step's GEMMs
  double flops = 0;    ///< FLOPs those GEMMs execute
};

/// The GEMMs of one MLP training step (layers in → out, [in,out] weights, padded strides).
GemmCeiling step_gemms(const dnnl::engine& eng, dnnl::stream& s, std::int64_t batch,
                       const std::vector<std::int64_t>& widths, int reps) {
  GemmCeiling g;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    const std::int64_t in = widths[l], out = widths[l + 1];
    g.seconds += time_matmul(eng, s, batch, in, out, false, false, true, reps);  // y = x·W
    g.seconds += time_matmul(eng, s, in, batch, out, true, false, true, reps);   // dW = xᵀ·dz
    g.flops += 4.0 * batch * in * out;
    if (l > 0) {  // dX = dz·Wᵀ (not for the input layer)
      g.seconds += time_matmul(eng, s, batch, out, in, false, true, true, reps);
      g.flops += 2.0 * batch * in * out;
    }
  }
  return g;
}

std::vector<std::int64_t> parse_list(const std::string& s) {
  std::vector<std::int64_t> v;
  std::size_t pos = 0;
  while (pos < s.size()) {
    auto next = s.find(',', pos);
    v.push_back(std::stoll(s.substr(pos, next - pos)));
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  std::vector<std::int64_t> batches = {64, 256, 1024, 4096};
  double seconds = 2.0;
  bool verbose = false;
  bool fused = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--batches" && i + 1 < argc) batches = parse_list(argv[++i]);
    else if (a == "--seconds" && i + 1 < argc) seconds = std::atof(argv[++i]);
    else if (a == "--verbose") verbose = true;
    else if (a == "--update" && i + 1 < argc) fused = std::string(argv[++i]) != "after";
    else {
      std::fprintf(stderr, "usage: %s [--threads N] [--batches 64,256,1024,4096] [--seconds S] [--update fused|after] [--verbose]\n", argv[0]);
      return 2;
    }
  }
  tk::set_compute_threads(threads);
  const std::vector<std::int64_t> hidden = {512, 512};
  const std::vector<std::int64_t> widths = {784, 512, 512, 10};

  tk::OnednnKernels backend;
  dnnl::stream stream(backend.engine());
  std::printf("bench_trainer_throughput: MLP 784-512-512-10 fp32, SGD momentum, synthetic data\n");
  std::printf("cpu: %s, %d thread(s), %s, SGD update %s\n", cpu_name().c_str(), threads,
              tk::backend_version().c_str(), fused ? "per layer during backward" : "after backward");

  const double mm_s = time_matmul(backend.engine(), stream, 2048, 2048, 2048, false, false, false, 5);
  const double mm_gflops = 2.0 * 2048 * 2048 * 2048 / mm_s / 1e9;
  std::printf("oneDNN f32 matmul 2048x2048x2048: %.1f GFLOP/s (best of 5)\n\n", mm_gflops);

  std::printf("%6s %10s %8s %8s %8s %8s %8s %9s %7s %8s %9s %6s %6s %7s %8s\n", "batch", "samples/s", "step_ms",
              "GFLOP/s", "%mm2048", "exec_GF", "%mm2048", "gemm_GF/s", "%gemm", "onednn%", "outside%", "sgd%",
              "loss%", "other%", "data_ms");
  const std::int64_t max_batch = *std::max_element(batches.begin(), batches.end());
  dlsweep::trainer::data::SyntheticSpec ss;
  ss.train_size = std::max<std::int64_t>(4 * max_batch, 8192);
  ss.test_size = 1;
  const auto data = dlsweep::trainer::data::make_synthetic(ss);

  for (std::int64_t batch : batches) {
    const GemmCeiling g = step_gemms(backend.engine(), stream, batch, widths, 7);

    tm::Mlp model(backend, {784, hidden, 10}, 1);
    dlsweep::trainer::optim::Sgd sgd(model.parameters(), 0.9, false, 0.0, false);
    const double nominal_flops = 6.0 * static_cast<double>(model.parameters().count()) * static_cast<double>(batch);
    std::vector<std::uint32_t> idx(static_cast<std::size_t>(batch));
    std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
    std::int64_t cursor = 0;
    double t_data = 0, t_sgd = 0, t_loss = 0;
    auto step = [&](bool timed_parts) {
      auto t0 = clock_type::now();
      for (auto& i : idx) i = static_cast<std::uint32_t>(cursor++ % data.train.size);
      dlsweep::trainer::data::gather(data.train, idx, model.input(batch, tm::Mode::train), labels.data());
      auto t1 = clock_type::now();
      auto logits = model.forward(batch, tm::Mode::train);
      auto tl = clock_type::now();
      backend.softmax_cross_entropy(logits, labels.data(), 1.0f / static_cast<float>(batch), model.logits_grad(batch));
      auto tl2 = clock_type::now();
      double in_update = 0;
      if (fused) {  // as dlsweep-train does on one rank: each layer updated when its gradient is ready
        model.backward(batch, [&](std::span<const std::size_t> t) {
          auto u0 = clock_type::now();
          sgd.step(0.01, t);
          in_update += since(u0);
        });
      } else {
        model.backward(batch);
      }
      auto t2 = clock_type::now();
      if (!fused) sgd.step(0.01);
      auto t3 = clock_type::now();
      if (timed_parts) {
        t_data += std::chrono::duration<double>(t1 - t0).count();
        t_loss += std::chrono::duration<double>(tl2 - tl).count();
        t_sgd += fused ? in_update : std::chrono::duration<double>(t3 - t2).count();
      }
      return std::chrono::duration<double>(t3 - t1).count();  // the step without data gathering
    };
    for (int i = 0; i < 3; ++i) step(false);  // warm-up: plans built, caches and pages warm

    // Throughput: best of 5 repetitions of k steps (about `seconds` in all), without profiling.
    const double probe = step(false);
    const int k = std::max(3, static_cast<int>(seconds / 5 / std::max(probe, 1e-6)));
    double best_step = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      double sum = 0;
      for (int i = 0; i < k; ++i) sum += step(false);
      best_step = std::min(best_step, sum / k);
    }
    // Breakdown: 5 more repetitions with the oneDNN kernels timed; the fastest one is reported
    // (other processes on the machine perturb single repetitions, mostly the memory-bound parts).
    double prof_step = 1e30, onednn = 0, sgd_s = 0, loss_s = 0, data_s = 0;
    for (int rep = 0; rep < 5; ++rep) {
      backend.set_profiling(true);
      t_data = t_sgd = t_loss = 0;
      double sum = 0;
      for (int i = 0; i < k; ++i) sum += step(true);
      const auto prof = backend.profile();
      backend.set_profiling(false);
      if (sum / k < prof_step) {
        prof_step = sum / k;
        onednn = prof.seconds / k;
        sgd_s = t_sgd / k;
        loss_s = t_loss / k;
        data_s = t_data / k;
      }
    }

    const double gflops = nominal_flops / best_step / 1e9;
    const double exec_gflops = g.flops / best_step / 1e9;
    std::printf("%6lld %10.0f %8.3f %8.1f %7.1f%% %8.1f %7.1f%% %9.1f %6.1f%% %7.1f%% %8.1f%% %5.1f%% %5.1f%% %6.1f%% %8.3f\n",
                static_cast<long long>(batch), static_cast<double>(batch) / best_step, best_step * 1e3, gflops,
                100.0 * gflops / mm_gflops, exec_gflops, 100.0 * exec_gflops / mm_gflops, g.flops / g.seconds / 1e9,
                100.0 * g.seconds / best_step,
                100.0 * onednn / prof_step, 100.0 * (prof_step - onednn) / prof_step, 100.0 * sgd_s / prof_step,
                100.0 * loss_s / prof_step, 100.0 * (prof_step - onednn - sgd_s - loss_s) / prof_step, data_s * 1e3);
    if (verbose)
      for (const auto& d : model.describe(batch, tm::Mode::train)) std::printf("       %s\n", d.c_str());
    std::fflush(stdout);
  }
  std::printf(
      "\ncolumns: GFLOP/s counts 6*params*batch per step; %%mm2048 = that / the 2048^3 matmul; exec_GF = the\n"
      "FLOPs the step executes (no input-layer dX: ~0.8x the nominal count) / step time; gemm_GF/s = the step's\n"
      "GEMMs alone (same shapes/layouts, best of 7, executed FLOPs); %%gemm = their time / step time;\n"
      "onednn%% = time inside oneDNN primitives; outside%% = the rest of the step = sgd%% (the fused momentum\n"
      "update, memory-bound) + loss%% (softmax cross-entropy) + other%% (dispatch, timers: pure overhead);\n"
      "data_ms = batch gather per step (not part of the step).\n");
  std::printf("reproduce: cmake --build BUILD --target bench_trainer_throughput && %s", argv[0]);
  for (int i = 1; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("%s\n", argc == 1 ? " --threads 2 --batches 64,256,1024,4096 --seconds 2" : "");
  return 0;
}
