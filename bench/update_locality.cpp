// update_locality.cpp — why the MLP's small-batch step runs below the matmul ceiling: what the
// SGD momentum update of a layer's weights costs the matmuls that read them next, by how the
// update is split over the threads. One dense layer of the benchmark MLP (784 -> 512, rows
// padded to padded_ld(512) floats as the trainer lays them out), oneDNN's f32 matmuls with the
// trainer's memory descriptors (forward x·w, dW = xᵀ·dz, dX = dz·wᵀ; onednn_kernels.cpp), then
// the trainer's own momentum_slice over w, g and v (3 x 1.65 MB), repeated as a training loop
// does, per variant:
//   no update      the matmuls alone: the weights stay clean in both cores' caches;
//   rows           the trainer's split (optim::thread_slice: a contiguous slice per thread);
//   columns        each thread half of every row;
//   one thread     the whole update on the calling thread;
//   read only      rows, but w is only read (its new value goes to g; v is updated): the same
//                  arrays and bytes, without writing the weights;
//   sum post-op    dW accumulated straight into the velocity by a oneDNN sum post-op
//                  (v = dW + momentum·v, the PyTorch form's velocity), then w -= lr·v by rows:
//                  the gradient array disappears (what the README weighs against its cost);
//   ping-pong      the new weights are written into the gradient's array and the two arrays
//                  swap roles every step (the matmuls alternate between two bindings);
//   owned, none    each thread runs single-threaded matmuls on its own half of the output
//                  columns (forward, dW, and dX as two partial products and a sum), no update;
//   owned cols     the same, and each thread updates the columns it owns: no core ever reads
//                  weights the other core wrote (no coherence traffic on w at all).
// It prints per batch and variant the mean ms of each phase over the best of 5 repetitions
// and the forward's time relative to "no update".
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
#include "trainer/kernels/onednn/onednn_exec.hpp"
#include "trainer/optim/sgd.hpp"
#include "trainer/optim/tensor_math.hpp"

namespace {

using dnnl::memory;
using clock_type = std::chrono::steady_clock;
namespace optim = dlsweep::trainer::optim;
using dlsweep::trainer::kernels::row_major;
using dlsweep::trainer::kernels::transposed;

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
  constexpr std::int64_t in = 784, out = 512, ld = dlsweep::trainer::kernels::padded_ld(out), n = in * ld;
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
    auto mm = [&](memory::desc a, float* pa, memory::desc bm, float* pb, memory::desc c, float* pc,
                  float sum_scale = 0) {
      dnnl::primitive_attr attr;
      if (sum_scale != 0) {
        dnnl::post_ops ops;
        ops.append_sum(sum_scale);
        attr.set_post_ops(ops);
      }
      dnnl::matmul p(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, bm, c), attr, eng));
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
    auto rows = [&](auto&& f) {  // the trainer's split
#pragma omp parallel
      {
        std::int64_t begin = 0, end = 0;
        optim::thread_slice(n, omp_get_num_threads(), omp_get_thread_num(), begin, end);
        if (begin < end) f(begin, end);
      }
    };
    // "owned columns": each thread runs its own single-threaded matmuls on its half of the
    // layer's output columns (oneDNN runs a primitive on the calling thread inside a parallel
    // region), so no core reads the weights the other core updates: forward y[:, c] = x·w[:, c],
    // dW[:, c] = xᵀ·dz[:, c], dX = Σ_c dz[:, c]·w[:, c]ᵀ as one partial product per thread and a
    // sum, and the update of columns c by the same thread.
    const int nt = threads;
    std::vector<std::int64_t> col(static_cast<std::size_t>(nt) + 1);
    for (int t = 0; t <= nt; ++t) col[t] = std::min<std::int64_t>(out, (out * t / nt + 15) / 16 * 16);
    std::vector<dnnl::stream> streams;
    std::vector<std::function<void()>> own_fwd, own_dw, own_dx;
    std::vector<dlsweep::trainer::kernels::AlignedBuffer> partial;
    streams.reserve(static_cast<std::size_t>(nt));  // the matmuls keep pointers to their stream
    partial.reserve(static_cast<std::size_t>(nt));
    for (int t = 0; t < nt; ++t) {
      streams.emplace_back(eng);
      partial.emplace_back(b * in);
      const std::int64_t c0 = col[t], w_cols = col[t + 1] - col[t];
      auto single = [&, t](memory::desc a, float* pa, memory::desc bm, float* pb, memory::desc c, float* pc) {
        dnnl::matmul p(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, bm, c), eng));
        std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(a, eng, pa)},
                                             {DNNL_ARG_WEIGHTS, memory(bm, eng, pb)},
                                             {DNNL_ARG_DST, memory(c, eng, pc)}};
        dnnl::stream* st = &streams[static_cast<std::size_t>(t)];
        return std::function<void()>([p, args, st]() mutable {
          p.execute(*st, args);
          st->wait();
        });
      };
      own_fwd.push_back(single(row_major(b, in, in), x.data(), row_major(in, w_cols, ld), w.data() + c0,
                               row_major(b, w_cols, ld), y.data() + c0));
      own_dw.push_back(single(transposed(in, b, in), x.data(), row_major(b, w_cols, ld), dz.data() + c0,
                              row_major(in, w_cols, ld), g.data() + c0));
      own_dx.push_back(single(row_major(b, w_cols, ld), dz.data() + c0, transposed(w_cols, in, ld), w.data() + c0,
                              row_major(b, in, in), partial.back().data()));
    }
    auto each = [&](std::vector<std::function<void()>>& f) {
#pragma omp parallel num_threads(nt)
      f[static_cast<std::size_t>(omp_get_thread_num())]();
    };
    auto owned_dx = [&] {
#pragma omp parallel num_threads(nt)
      {
        const int t = omp_get_thread_num();
        own_dx[static_cast<std::size_t>(t)]();
#pragma omp barrier
        std::int64_t begin = 0, end = 0;
        optim::thread_slice(b * in, nt, t, begin, end);
        for (std::int64_t i = begin; i < end; ++i) {
          float s = partial[0].data()[i];
          for (int u = 1; u < nt; ++u) s += partial[static_cast<std::size_t>(u)].data()[i];
          dx.data()[i] = s;
        }
      }
    };
    auto owned_update = [&] {
#pragma omp parallel num_threads(nt)
      {
        const int t = omp_get_thread_num();
        for (std::int64_t r = 0; r < in; ++r)
          slice(g.data(), r * ld + col[static_cast<std::size_t>(t)], r * ld + col[static_cast<std::size_t>(t) + 1]);
      }
    };
    // "sum post-op": v = dW + momentum·v inside the dW matmul.
    auto bwd_w_v = mm(transposed(in, b, in), x.data(), row_major(b, out, ld), dz.data(), row_major(in, out, ld),
                      v.data(), mom);
    // "ping-pong": the update writes the new weights into the gradient's array, and the two
    // arrays swap roles for the next step (two bindings of each matmul, alternating).
    int phase = 0;
    auto fwd_b = mm(row_major(b, in, in), x.data(), row_major(in, out, ld), g.data(), row_major(b, out, ld), y.data());
    auto bwd_w_b = mm(transposed(in, b, in), x.data(), row_major(b, out, ld), dz.data(), row_major(in, out, ld),
                      w.data());
    auto bwd_x_b = mm(row_major(b, out, ld), dz.data(), transposed(out, in, ld), g.data(), row_major(b, in, in),
                      dx.data());
    auto ping_pong_update = [&] {
      float* wp = phase == 0 ? w.data() : g.data();  // the weights this step read
      float* gp = phase == 0 ? g.data() : w.data();  // its gradient, overwritten by the new weights
      rows([&](std::int64_t b0, std::int64_t b1) {
        float* vp = v.data();
        for (std::int64_t i = b0; i < b1; ++i) {
          vp[i] = mom * vp[i] + gp[i];
          gp[i] = wp[i] - lr * vp[i];
        }
      });
      phase ^= 1;
    };
    struct Variant {
      std::string name;
      std::function<void()> fwd, dw, dx, update;
    };
    const std::vector<Variant> variants = {
        {"no update", fwd, bwd_w, bwd_x, [] {}},
        {"rows", fwd, bwd_w, bwd_x, [&] { rows([&](std::int64_t b0, std::int64_t b1) { slice(g.data(), b0, b1); }); }},
        {"columns", fwd, bwd_w, bwd_x,
         [&] {
#pragma omp parallel
           {
             const std::int64_t nth = omp_get_num_threads(), t = omp_get_thread_num();
             const std::int64_t c0 = ld * t / nth, c1 = ld * (t + 1) / nth;
             for (std::int64_t r = 0; r < in; ++r) slice(g.data(), r * ld + c0, r * ld + c1);
           }
         }},
        {"one thread", fwd, bwd_w, bwd_x, [&] { slice(g.data(), 0, n); }},
        {"read only", fwd, bwd_w, bwd_x,
         [&] {
           rows([&](std::int64_t b0, std::int64_t b1) {
             float* gp = g.data();
             float* vp = v.data();
             const float* wp = w.data();
             for (std::int64_t i = b0; i < b1; ++i) {
               vp[i] = mom * vp[i] + gp[i];
               gp[i] = wp[i] - lr * vp[i];  // w's new value lands in g: w itself is not written
             }
           });
         }},
        {"sum post-op", fwd, bwd_w_v, bwd_x,
         [&] {
           rows([&](std::int64_t b0, std::int64_t b1) {
             float* wp = w.data();
             const float* vp = v.data();
             for (std::int64_t i = b0; i < b1; ++i) wp[i] -= lr * vp[i];
           });
         }},
        {"ping-pong", [&] { phase == 0 ? fwd() : fwd_b(); }, [&] { phase == 0 ? bwd_w() : bwd_w_b(); },
         [&] { phase == 0 ? bwd_x() : bwd_x_b(); }, ping_pong_update},
        {"owned, none", [&] { each(own_fwd); }, [&] { each(own_dw); }, owned_dx, [] {}},
        {"owned cols", [&] { each(own_fwd); }, [&] { each(own_dw); }, owned_dx, owned_update},
    };
    double no_update_fwd = 0;
    for (const auto& var : variants) {
      Phases best;
      double best_total = 1e30;
      for (int rep = 0; rep < 6; ++rep) {  // the first repetition warms up
        Phases p;
        for (int k = 0; k < steps; ++k) {
          auto t = clock_type::now();
          var.fwd();
          p.fwd += since(t);
          t = clock_type::now();
          var.dw();
          p.dw += since(t);
          t = clock_type::now();
          var.dx();
          p.dx += since(t);
          t = clock_type::now();
          var.update();
          p.update += since(t);
        }
        if (rep > 0 && p.total() < best_total) {
          best_total = p.total();
          best = p;
        }
      }
      const double k = steps / 1e3;  // per step, in ms
      if (var.name == "no update") no_update_fwd = best.fwd;
      std::printf("%6lld %-12s %9.4f %9.4f %9.4f %9.4f %9.4f %11.2fx\n", static_cast<long long>(b), var.name.c_str(),
                  best.fwd / k, best.dw / k, best.dx / k, best.update / k, best.total() / k, best.fwd / no_update_fwd);
    }
  }
  std::printf("reproduce: cmake --build BUILD --target bench_update_locality && %s", argv[0]);
  for (int i = 1; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\n");
  return 0;
}
