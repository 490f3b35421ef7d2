// update_locality.cpp — why the MLP's small-batch step runs below the matmul ceiling: what the
// SGD momentum update of a layer's weights costs the matmuls that read them next, by how the
// update is split over the threads. One dense layer of the benchmark MLP (784 -> 512, rows
// padded to 528 floats as the trainer lays them out), oneDNN's f32 matmuls exactly as
// OnednnDense binds them (forward x·w, dW = xᵀ·dz, dX = dz·wᵀ), then the trainer's own
// momentum_slice over w, g and v (3 x 1.65 MB), repeated as a training loop does, per variant:
//   no update      the matmuls alone: the weights stay clean in both cores' caches;
//   rows           the trainer's split: each thread a contiguous half of the tensor;
//   columns        each thread half of every row;
//   one thread     the whole update on the calling thread;
//   no gradient    rows, with the gradient written into (and read from) the velocity: the
//                  memory traffic of accumulating dW straight into the momentum buffer (a
//                  oneDNN sum post-op), which would drop the gradient array (the numbers
//                  are not an SGD's; only the traffic is measured).
// It prints per batch and variant the mean ms of each phase over the best of 5 repetitions
// and the forward's time relative to "no update": whether the forward's loss depends on
// the split (coherence: which core wrote the weights) or not (capacity: w, g and v do not fit
// in the cores' L2 together, so the update evicts the weights the forward reads).
//
// usage: bench_update_locality [--threads N] [--batches 64,256] [--steps K]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "trainer/kernels/kernels_registry.hpp"
#include "trainer/kernels/matrix.hpp"
#include "trainer/optim/sgd.hpp"

namespace {

using dnnl::memory;
using clock_type = std::chrono::steady_clock;
namespace optim = dlsweep::trainer::optim;

memory::desc row_major(std::int64_t r, std::int64_t c, std::int64_t ld) {
  return memory::desc({r, c}, memory::data_type::f32, memory::dims{ld, 1});
}
memory::desc transposed(std::int64_t r, std::int64_t c, std::int64_t ld) {
  return memory::desc({r, c}, memory::data_type::f32, memory::dims{1, ld});
}
double since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

struct Phases {
  double fwd = 0, dw = 0, dx = 0, update = 0;
  double total() const { return fwd + dw + dx + update; }
};

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, steps = 200;
  std::vector<std::int64_t> batches = {64, 256};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--steps" && i + 1 < argc) steps = std::max(10, std::atoi(argv[++i]));
    else if (a == "--batches" && i + 1 < argc) {
      batches.clear();
      for (std::string s = argv[++i]; !s.empty();) {
        const auto c = s.find(',');
        batches.push_back(std::atoll(s.substr(0, c).c_str()));
        s = c == std::string::npos ? "" : s.substr(c + 1);
      }
    } else {
      std::fprintf(stderr, "usage: %s [--threads N] [--batches 64,256] [--steps K]\n", argv[0]);
      return 2;
    }
  }
  dlsweep::trainer::kernels::set_compute_threads(threads);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  constexpr std::int64_t in = 784, out = 512, ld = 528, n = in * ld;
  const float lr = 0.01f, mom = 0.9f;
  std::printf("bench_update_locality: one MLP layer %lldx%lld (ld %lld), oneDNN f32 matmuls + SGD momentum, %d thread(s)\n",
              static_cast<long long>(in), static_cast<long long>(out), static_cast<long long>(ld), threads);
  std::printf("%6s %-12s %9s %9s %9s %9s %9s %12s\n", "batch", "update", "fwd_ms", "dW_ms", "dX_ms", "update_ms",
              "total_ms", "fwd/no-upd");
  for (const std::int64_t b : batches) {
    dlsweep::trainer::kernels::AlignedBuffer x(b * in), y(b * ld), dz(b * ld), dx(b * in), w(n), g(n), v(n);
    std::fill_n(x.data(), b * in, 0.01f);
    std::fill_n(dz.data(), b * ld, 0.001f);
    std::fill_n(w.data(), n, 0.01f);
    std::fill_n(g.data(), n, 0.0f);
    std::fill_n(v.data(), n, 0.0f);
    auto mm = [&](memory::desc a, float* pa, memory::desc bm, float* pb, memory::desc c, float* pc) {
      dnnl::matmul p(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, bm, c), eng));
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(a, eng, pa)},
                                           {DNNL_ARG_WEIGHTS, memory(bm, eng, pb)},
                                           {DNNL_ARG_DST, memory(c, eng, pc)}};
      return [p, args, &strm]() mutable {
        p.execute(strm, args);
        strm.wait();
      };
    };
    auto fwd = mm(row_major(b, in, in), x.data(), row_major(in, out, ld), w.data(), row_major(b, out, ld), y.data());
    auto bwd_w = mm(transposed(in, b, in), x.data(), row_major(b, out, ld), dz.data(), row_major(in, out, ld), g.data());
    auto bwd_x = mm(row_major(b, out, ld), dz.data(), transposed(out, in, ld), w.data(), row_major(b, in, in), dx.data());
    auto slice = [&](float* grad, std::int64_t begin, std::int64_t end) {
      optim::momentum_slice(w.data() + begin, grad + begin, v.data() + begin, end - begin, lr, mom, 0.f, 1.f, false,
                            true);
    };
    const std::vector<std::pair<std::string, std::function<void()>>> variants = {
        {"no update", [] {}},
        {"rows",
         [&] {
#pragma omp parallel
           {
             const std::int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
             slice(g.data(), n * t / nt, n * (t + 1) / nt);
           }
         }},
        {"columns",
         [&] {
#pragma omp parallel
           {
             const std::int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
             const std::int64_t c0 = ld * t / nt, c1 = ld * (t + 1) / nt;
             for (std::int64_t r = 0; r < in; ++r) slice(g.data(), r * ld + c0, r * ld + c1);
           }
         }},
        {"one thread", [&] { slice(g.data(), 0, n); }},
        {"no gradient",
         [&] {
#pragma omp parallel
           {
             const std::int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
             slice(v.data(), n * t / nt, n * (t + 1) / nt);
           }
         }},
    };
    double no_update_fwd = 0;
    for (const auto& [name, update] : variants) {
      // "no gradient": dW lands in v, as a sum post-op into the momentum buffer would put it.
      auto bwd_w_v = mm(transposed(in, b, in), x.data(), row_major(b, out, ld), dz.data(), row_major(in, out, ld),
                        v.data());
      const bool into_v = name == "no gradient";
      Phases best;
      double best_total = 1e30;
      for (int rep = 0; rep < 6; ++rep) {  // the first repetition warms up
        Phases p;
        for (int k = 0; k < steps; ++k) {
          auto t = clock_type::now();
          fwd();
          p.fwd += since(t);
          t = clock_type::now();
          if (into_v) bwd_w_v();
          else bwd_w();
          p.dw += since(t);
          t = clock_type::now();
          bwd_x();
          p.dx += since(t);
          t = clock_type::now();
          update();
          p.update += since(t);
        }
        if (rep > 0 && p.total() < best_total) {
          best_total = p.total();
          best = p;
        }
      }
      const double k = steps / 1e3;  // per step, in ms
      if (name == "no update") no_update_fwd = best.fwd;
      std::printf("%6lld %-12s %9.4f %9.4f %9.4f %9.4f %9.4f %11.2fx\n", static_cast<long long>(b), name.c_str(),
                  best.fwd / k, best.dw / k, best.dx / k, best.update / k, best.total() / k, best.fwd / no_update_fwd);
    }
  }
  std::printf("reproduce: cmake --build BUILD --target bench_update_locality && %s", argv[0]);
  for (int i = 1; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\n");
  return 0;
}
