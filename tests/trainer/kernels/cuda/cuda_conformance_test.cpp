// GPU conformance: every CUDA kernel of trainer/kernels/cuda/ against the CPU path it must
// equal — the reference kernels (dense, softmax cross-entropy) and the CPU optimizers
// (SGD, Adam/AdamW, LARS). Tolerances, stated per check:
//   dense fp32: |gpu − ref| ≤ 1e-4·(1 + |ref|) (GEMM summation order differs); the backward
//     is checked on the GPU's own y (the ReLU mask of a y within rounding of 0 is arbitrary);
//   dense tf32: ≤ 2e-2·(1 + |ref|) (10-bit mantissa inputs);
//   softmax cross-entropy: loss sum relative 1e-12 (double), correct count exact,
//     gradient ≤ 1e-6 (the float rounding of a double);
//   SGD, Adam, AdamW: bit-identical (same float expressions, --fmad=false);
//   the backend's optimizers (make_cuda_optimizer, all six) on device arenas: SGD/Adam/AdamW
//     bit-identical, LARS/LARC/LAMB as LARS below;
//   LARS: 1e-6 relative to |w| + |w at the start| (norms summed in another order, so a
//     per-tensor rate may differ in its last bit; where w − update cancels, that bit is
//     large next to w but not next to the operands).
// Runs only where a GPU is present (cuda_test_main.cpp exits 77 = SKIPPED elsewhere).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "trainer/kernels/cuda/cublaslt_dense.hpp"
#include "trainer/kernels/cuda/cuda_memory.hpp"
#include "trainer/kernels/cuda/cuda_optimizer.hpp"
#include "trainer/kernels/cuda/device_kernels.hpp"
#include "trainer/kernels/reference/reference_kernels.hpp"
#include "trainer/models/parameter_set.hpp"
#include "trainer/optim/optimizer.hpp"

using namespace dlsweep::trainer;
namespace kc = dlsweep::trainer::kernels::cuda;
using kernels::MatrixView;

namespace {

#define CUDA_OK(expr) REQUIRE((expr) == cudaSuccess)

template <class T>
class Dev {
 public:
  explicit Dev(std::size_t n) : n_(n) {
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&p_), std::max<std::size_t>(n, 1) * sizeof(T)));
    CUDA_OK(cudaMemset(p_, 0, std::max<std::size_t>(n, 1) * sizeof(T)));
  }
  ~Dev() { cudaFree(p_); }
  Dev(const Dev&) = delete;
  T* get() const { return p_; }
  void put(const T* h) { CUDA_OK(cudaMemcpy(p_, h, n_ * sizeof(T), cudaMemcpyHostToDevice)); }
  void put(const std::vector<T>& h) { put(h.data()); }
  std::vector<T> take() const {
    std::vector<T> h(n_);
    CUDA_OK(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  T* p_ = nullptr;
  std::size_t n_;
};

void fill(float* p, std::int64_t rows, std::int64_t cols, std::int64_t ld, std::mt19937& rng, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> u(lo, hi);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < ld; ++c) p[r * ld + c] = c < cols ? u(rng) : 0.0f;
}

void check_close(const float* got, const float* want, std::int64_t rows, std::int64_t cols, std::int64_t ld, double tol,
                 const char* what) {
  int bad = 0;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < ld; ++c) {
      const double g = got[r * ld + c], w = want[r * ld + c];
      const bool ok = c < cols ? std::abs(g - w) <= tol * (1 + std::abs(w)) : g == 0.0;  // padding stays zero
      if (!ok && bad++ < 5) FAIL_CHECK(what << " [" << r << "," << c << "]: gpu " << g << " vs ref " << w);
    }
  CHECK(bad == 0);
}

struct DenseCase {
  std::int64_t n, in, out;
  bool relu, first;
};

void dense_case(const DenseCase& dc, bool tf32, bool autotune = false) {
  INFO("n=" << dc.n << " in=" << dc.in << " out=" << dc.out << " relu=" << dc.relu << " tf32=" << tf32
              << " autotune=" << autotune);
  const double tol = tf32 ? 2e-2 : 1e-4;
  std::mt19937 rng(42);
  const std::int64_t lx = kernels::padded_ld(dc.in), lw = kernels::padded_ld(dc.out), ly = kernels::padded_ld(dc.out);
  auto x = kernels::AlignedBuffer(dc.n * lx), w = kernels::AlignedBuffer(dc.in * lw),
       b = kernels::AlignedBuffer(lw), y = kernels::AlignedBuffer(dc.n * ly), dy = kernels::AlignedBuffer(dc.n * ly),
       dw = kernels::AlignedBuffer(dc.in * lw), db = kernels::AlignedBuffer(lw),
       dx = kernels::AlignedBuffer(dc.n * lx);
  fill(x.data(), dc.n, dc.in, lx, rng);
  fill(w.data(), dc.in, dc.out, lw, rng, -0.5f, 0.5f);
  fill(b.data(), 1, dc.out, lw, rng, -0.2f, 0.2f);
  fill(dy.data(), dc.n, dc.out, ly, rng);
  std::vector<float> dy0(dy.data(), dy.data() + dc.n * ly);

  kernels::ReferenceKernels ref;
  kernels::DenseBinding bind{x.view(dc.n, dc.in, lx), y.view(dc.n, dc.out, ly), w.view(dc.in, dc.out, lw), b.data(),
                             dy.view(dc.n, dc.out, ly), dw.view(dc.in, dc.out, lw), db.data(),
                             dc.first ? MatrixView{} : dx.view(dc.n, dc.in, lx)};
  auto k = ref.make_dense(dc.relu ? kernels::Activation::relu : kernels::Activation::none, bind);
  k->forward();

  Dev<float> gx(dc.n * lx), gw(dc.in * lw), gb(lw), gy(dc.n * ly), gdy(dc.n * ly), gdw(dc.in * lw), gdb(lw),
      gdx(dc.n * lx);
  gx.put(x.data());
  gw.put(w.data());
  gb.put(b.data());
  gdy.put(dy0);
  cublasLtHandle_t h = nullptr;
  REQUIRE(cublasLtCreate(&h) == CUBLAS_STATUS_SUCCESS);
  const std::size_t ws_bytes = std::size_t{32} << 20;
  Dev<char> ws(ws_bytes);
  kc::DenseShape shape{dc.n, dc.in, dc.out, lx, lw, ly, dc.first ? 0 : lx};
  auto dense = kc::CublasLtDense::create(h, shape, dc.relu, tf32, ws.get(), ws_bytes, autotune);
  REQUIRE(dense);
  REQUIRE((*dense)->forward(gx.get(), gw.get(), gb.get(), gy.get(), nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  const auto gpu_y = gy.take();
  check_close(gpu_y.data(), y.data(), dc.n, dc.out, ly, tol, "y");
  // The backward is checked on the GPU's own forward output: where y is within rounding of 0
  // (tf32 especially), the two forwards may disagree on relu'(y), which says nothing about
  // the backward kernels.
  std::copy(gpu_y.begin(), gpu_y.end(), y.data());
  k->backward();
  REQUIRE((*dense)->backward(gx.get(), gw.get(), gy.get(), gdy.get(), gdw.get(), gdb.get(),
                             dc.first ? nullptr : gdx.get(), nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  check_close(gdy.take().data(), dy.data(), dc.n, dc.out, ly, tol, "dz");
  check_close(gdw.take().data(), dw.data(), dc.in, dc.out, lw, tol, "dw");
  check_close(gdb.take().data(), db.data(), 1, dc.out, lw, tol, "db");
  if (!dc.first) check_close(gdx.take().data(), dx.data(), dc.n, dc.in, lx, tol, "dx");
  dense->reset();
  cublasLtDestroy(h);
}

}  // namespace

TEST_CASE("cuda dense (cuBLASLt, bias+ReLU epilogue) equals the reference kernels", "[cuda][conformance]") {
  const DenseCase cases[] = {{5, 7, 3, true, false},     {64, 128, 32, true, false}, {33, 256, 10, false, false},
                             {256, 784, 128, true, true}, {1, 1, 1, false, false},   {1024, 512, 256, true, false},
                             {3000, 64, 600, true, false}};  // db over 12 row chunks, 19 column blocks
  for (bool tf32 : {false, true})
    for (const auto& c : cases) dense_case(c, tf32);
  // Autotuned: whichever candidate algorithm wins the timing, the results hold the same bounds.
  for (bool tf32 : {false, true})
    for (const auto& c : {cases[3], cases[5], cases[6]}) dense_case(c, tf32, true);
}

TEST_CASE("cuda bias/ReLU backward: any stride, alignment and shape", "[cuda][conformance]") {
  // The dense cases above use padded strides (the float4 path); these take the scalar one too:
  // odd strides, a pointer off 16-byte alignment, columns not a multiple of 4, many chunks.
  struct Case {
    std::int64_t rows, cols, ld, offset;
    bool relu;
  };
  for (const Case c : {Case{700, 13, 13, 0, true}, Case{700, 13, 16, 1, true}, Case{1, 1, 1, 0, false},
                       Case{5000, 130, 132, 0, true}, Case{257, 512, 512, 0, false}, Case{0, 7, 7, 0, true}}) {
    INFO("rows=" << c.rows << " cols=" << c.cols << " ld=" << c.ld << " offset=" << c.offset << " relu=" << c.relu);
    std::mt19937 rng(11);
    std::vector<float> dy(c.offset + std::max<std::int64_t>(c.rows, 1) * c.ld), y(dy.size());
    std::uniform_real_distribution<float> u(-1, 1);
    for (auto& v : dy) v = u(rng);
    for (auto& v : y) v = u(rng);
    std::vector<float> want_dz = dy;
    std::vector<double> want_db(c.cols, 0.0);
    for (std::int64_t r = 0; r < c.rows; ++r)
      for (std::int64_t j = 0; j < c.cols; ++j) {
        float& v = want_dz[c.offset + r * c.ld + j];
        if (c.relu && !(y[c.offset + r * c.ld + j] > 0.0f)) v = 0.0f;
        want_db[j] += v;
      }
    Dev<float> gdy(dy.size()), gy(y.size()), gdb(c.cols);
    Dev<char> scratch(kc::bias_grad_scratch_bytes(c.rows, c.cols));
    gdy.put(dy);
    gy.put(y);
    CUDA_OK(kc::bias_act_backward(gdy.get() + c.offset, gy.get() + c.offset, gdb.get(), c.rows, c.cols, c.ld, c.relu,
                                  reinterpret_cast<double*>(scratch.get()), nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    const auto got_dz = gdy.take();
    CHECK(std::memcmp(got_dz.data(), want_dz.data(), got_dz.size() * sizeof(float)) == 0);  // masking is exact
    const auto got_db = gdb.take();
    for (std::int64_t j = 0; j < c.cols; ++j) CHECK(got_db[j] == Approx(want_db[j]).epsilon(1e-6).margin(1e-6));
  }
}

TEST_CASE("cuda softmax cross-entropy equals the reference", "[cuda][conformance]") {
  std::mt19937 rng(7);
  for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {5, 10}, {300, 10}, {64, 1000}, {8192, 10}}) {
    INFO(rows << "x" << cols);
    const std::int64_t ld = kernels::padded_ld(cols);
    kernels::AlignedBuffer logits(rows * ld), dl(rows * ld);
    fill(logits.data(), rows, cols, ld, rng, -20, 20);
    if (rows > 3) logits.data()[2 * ld + 0] = logits.data()[2 * ld + cols - 1];  // a tie: first maximum wins
    std::vector<std::int32_t> labels(rows);
    for (auto& l : labels) l = static_cast<std::int32_t>(rng() % cols);
    kernels::ReferenceKernels ref;
    const float gs = 1.0f / static_cast<float>(rows);
    auto want = ref.softmax_cross_entropy(logits.view(rows, cols, ld), labels.data(), gs, dl.view(rows, cols, ld));

    Dev<float> gl(rows * ld), gd(rows * ld);
    Dev<std::int32_t> glab(rows), gcorrect(rows);
    Dev<double> gloss(rows), gtotal(1);
    Dev<long long> gcount(1);
    gl.put(logits.data());
    glab.put(labels);
    CUDA_OK(kc::softmax_xent(gl.get(), rows, cols, ld, glab.get(), gs, gd.get(), ld, gloss.get(), gcorrect.get(),
                             gtotal.get(), gcount.get(), nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    CHECK(gtotal.take()[0] == Approx(want.loss_sum).epsilon(1e-12));
    CHECK(gcount.take()[0] == want.correct);
    check_close(gd.take().data(), dl.data(), rows, cols, ld, 1e-6, "dlogits");
  }
}

namespace {

// Parameters like an MLP's (weights and biases, padded strides), random values and gradients.
void make_params(models::ParameterSet& ps) {
  ps.add("w1", 128, 128, false);
  ps.add("b1", 1, 128, true);
  ps.add("w2", 128, 10, false);
  ps.add("b2", 1, 10, true);
  ps.add("w3", 3, 5, false);
  ps.finalize();
}

void randomise(const models::ParameterSet& ps, std::mt19937& rng, bool values) {
  for (const auto& t : ps.tensors()) {
    fill((values ? ps.values() : ps.grads()) + t.offset, t.rows, t.cols, t.ld, rng, values ? -0.3f : -0.05f,
         values ? 0.3f : 0.05f);
  }
}

// Runs `steps` updates on the CPU optimizer and the GPU kernel from the same start and
// compares the weights (and returns the max relative difference).
void optimizer_case(const optim::OptimizerSpec& spec, double rel_tol) {
  INFO(spec.name << " nesterov=" << spec.nesterov << " correction=" << spec.momentum_correction);
  models::ParameterSet cpu;
  make_params(cpu);
  std::mt19937 rng(3);
  randomise(cpu, rng, true);
  std::vector<float> w0(cpu.values(), cpu.values() + cpu.arena_size());
  auto opt = optim::make_optimizer(spec, cpu);
  REQUIRE(opt);

  const auto tensors = cpu.tensors();
  const std::size_t T = tensors.size();
  const std::int64_t A = cpu.arena_size();
  Dev<float> w(A), g(A), s1(A), s2(A);
  w.put(w0);
  Dev<kc::MtTensor> mt(T);
  Dev<double> partials(2 * kc::lars_blocks_per_tensor * T);
  Dev<float> rates(T);
  std::int64_t max_n = 0;
  for (const auto& t : tensors) max_n = std::max(max_n, t.span());

  const double lrs[] = {0.1, 0.1, 0.2, 0.05, 0.05};
  double prev_lr = 0;
  int count = 0;
  for (double lr : lrs) {
    ++count;
    std::mt19937 grng(100 + count);
    randomise(cpu, grng, false);
    g.put(cpu.grads());
    (*opt)->step(lr);
    std::vector<kc::MtTensor> h(T);
    for (std::size_t i = 0; i < T; ++i) {
      const auto& t = tensors[i];
      auto& m = h[i];
      m.w = w.get() + t.offset;
      m.g = g.get() + t.offset;
      m.s1 = s1.get() + t.offset;
      m.s2 = s2.get() + t.offset;
      m.n = t.span();
      m.wd = t.is_bias && !spec.decay_biases ? 0.0f : static_cast<float>(spec.weight_decay);
      m.lr = lr;
      const double m_eff = spec.momentum_correction && prev_lr > 0 ? spec.momentum * (lr / prev_lr) : spec.momentum;
      m.m_eff = static_cast<float>(m_eff);
      m.c1 = static_cast<float>(1.0 / (1.0 - std::pow(spec.beta1, count)));
      m.c2 = static_cast<float>(1.0 / (1.0 - std::pow(spec.beta2, count)));
      m.trust = spec.lars_exclude_bias_norm && t.is_bias ? 0 : 1;
    }
    mt.put(h);
    cudaError_t e = cudaSuccess;
    if (spec.name == "sgd")
      e = kc::sgd_multi(mt.get(), static_cast<int>(T), max_n, static_cast<float>(spec.momentum), spec.nesterov,
                        spec.momentum_correction, nullptr);
    else if (spec.name == "adam" || spec.name == "adamw")
      e = kc::adam_multi(mt.get(), static_cast<int>(T), max_n, static_cast<float>(spec.beta1),
                         static_cast<float>(spec.beta2), static_cast<float>(spec.adam_eps), spec.name == "adamw", nullptr);
    else if (spec.name == "lars")
      e = kc::lars_multi(mt.get(), static_cast<int>(T), max_n, static_cast<float>(spec.momentum), spec.lars_trust,
                         spec.lars_eps, spec.nesterov, partials.get(), rates.get(), nullptr);
    CUDA_OK(e);
    prev_lr = lr;
  }
  CUDA_OK(cudaDeviceSynchronize());
  const auto got = w.take();
  int bad = 0;
  for (std::int64_t i = 0; i < A; ++i) {
    const double a = got[i], b = cpu.values()[i];
    const bool ok = rel_tol == 0 ? std::memcmp(&got[i], cpu.values() + i, sizeof(float)) == 0
                                 : std::abs(a - b) <= rel_tol * (std::abs(b) + std::abs(w0[i]));
    if (!ok && bad++ < 5) FAIL_CHECK("w[" << i << "]: gpu " << a << " vs cpu " << b);
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("cuda multi-tensor SGD, Adam, AdamW: bit-identical to the CPU optimizers", "[cuda][conformance][optim]") {
  for (bool nesterov : {false, true})
    for (bool corrected : {true, false}) {
      optim::OptimizerSpec s;
      s.name = "sgd";
      s.weight_decay = 5e-4;
      s.nesterov = nesterov;
      s.momentum_correction = corrected;
      optimizer_case(s, 0);
    }
  for (const char* name : {"adam", "adamw"}) {
    optim::OptimizerSpec s;
    s.name = name;
    s.weight_decay = 1e-2;
    optimizer_case(s, 0);
  }
}

TEST_CASE("cuda multi-tensor LARS, norms on device: equals the CPU LARS", "[cuda][conformance][optim]") {
  for (bool nesterov : {false, true})
    for (bool exclude : {true, false}) {
      optim::OptimizerSpec s;
      s.name = "lars";
      s.weight_decay = 5e-4;
      s.lars_trust = 0.02;
      s.nesterov = nesterov;
      s.lars_exclude_bias_norm = exclude;
      optimizer_case(s, 1e-6);
    }
}

TEST_CASE("cuda non-finite check (fp16 loss scaling)", "[cuda][conformance]") {
  std::vector<float> h(100000, 1.0f);
  Dev<float> d(h.size());
  Dev<int> found(1);
  d.put(h);
  CUDA_OK(kc::find_nonfinite(d.get(), static_cast<std::int64_t>(h.size()), found.get(), nullptr));
  CHECK(found.take()[0] == 0);
  h[77777] = std::numeric_limits<float>::infinity();
  d.put(h);
  CUDA_OK(kc::find_nonfinite(d.get(), static_cast<std::int64_t>(h.size()), found.get(), nullptr));
  CHECK(found.take()[0] == 1);
  h[77777] = 1.0f;
  h[5] = std::nanf("");
  d.put(h);
  CUDA_OK(cudaMemset(found.get(), 0, sizeof(int)));
  CUDA_OK(kc::find_nonfinite(d.get(), static_cast<std::int64_t>(h.size()), found.get(), nullptr));
  CHECK(found.take()[0] == 1);
}

// The backend's optimizers (what dlsweep-train runs with device: cuda) over a ParameterSet
// in device memory, against the CPU optimizers over the same values and gradients.
TEST_CASE("cuda backend optimizers (make_cuda_optimizer) equal the CPU optimizers, all six", "[cuda][conformance][optim]") {
  cudaStream_t stream = nullptr;
  CUDA_OK(cudaStreamCreate(&stream));
  {
    kc::CudaMemory mem(0, stream);
    struct Case {
      const char* name;
      double tol;
      bool nesterov;
    };
    for (const Case c : {Case{"sgd", 0, false}, Case{"sgd", 0, true}, Case{"adam", 0, false}, Case{"adamw", 0, false},
                         Case{"lars", 1e-6, false}, Case{"larc", 1e-6, false}, Case{"larc", 1e-6, true},
                         Case{"lamb", 1e-6, false}}) {
      for (bool clip : {true, false}) {
        if (std::string(c.name) != "larc" && !clip) continue;
        INFO(c.name << " nesterov=" << c.nesterov << " clip=" << clip);
        optim::OptimizerSpec spec;
        spec.name = c.name;
        spec.nesterov = c.nesterov;
        spec.weight_decay = std::string(c.name) == "adamw" || std::string(c.name) == "lamb" ? 1e-2 : 5e-4;
        spec.lars_trust = 0.02;
        spec.larc_clip = clip;
        models::ParameterSet cpu, gpu;
        for (auto* ps : {&cpu, &gpu}) {
          ps->add("w1", 128, 128, false);
          ps->add("b1", 1, 128, true);
          ps->add("w2", 128, 10, false);
          ps->add("b2", 1, 10, true);
        }
        cpu.finalize();
        gpu.finalize(mem);
        std::mt19937 rng(3);
        randomise(cpu, rng, true);
        const std::vector<float> w0(cpu.values(), cpu.values() + cpu.arena_size());
        mem.upload(gpu.values(), w0.data(), gpu.arena_size());
        auto oc = optim::make_optimizer(spec, cpu);
        auto og = kc::make_cuda_optimizer(spec, gpu, stream);
        REQUIRE(oc);
        REQUIRE(og);
        int step = 0;
        for (double lr : {0.1, 0.1, 0.2, 0.05, 0.05}) {
          std::mt19937 grng(100 + ++step);
          randomise(cpu, grng, false);
          mem.upload(gpu.grads(), cpu.grads(), cpu.arena_size());
          (*oc)->step(lr);
          (*og)->step(lr);
        }
        const auto got = mem.to_host(gpu.values(), gpu.arena_size());
        int bad = 0;
        for (std::int64_t i = 0; i < cpu.arena_size(); ++i) {
          const double a = got[static_cast<std::size_t>(i)], b = cpu.values()[i];
          const bool ok = c.tol == 0 ? std::memcmp(&got[static_cast<std::size_t>(i)], cpu.values() + i, 4) == 0
                                     : std::abs(a - b) <= c.tol * (std::abs(b) + std::abs(w0[static_cast<std::size_t>(i)]));
          if (!ok && bad++ < 5) FAIL_CHECK("w[" << i << "]: gpu " << a << " vs cpu " << b);
        }
        CHECK(bad == 0);
        // Checkpoints are interchangeable: the same state arenas and scalars.
        CHECK((*og)->state_arenas().size() == (*oc)->state_arenas().size());
        CHECK((*og)->state_scalars() == (*oc)->state_scalars());
      }
    }
  }
  cudaStreamDestroy(stream);
}

TEST_CASE("cuda Memory meets the Memory contract", "[cuda][conformance][memory]") {
  cudaStream_t stream = nullptr;
  CUDA_OK(cudaStreamCreate(&stream));
  {
    kc::CudaMemory m(0, stream);
    const std::int64_t n = 100003;
    kernels::DeviceArray a = m.allocate(n), b = m.allocate(n);
    CHECK_FALSE(m.host_visible());
    CHECK(m.sum_squares(a.data(), n) == 0.0);
    std::vector<float> h(static_cast<std::size_t>(n));
    double exact = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      h[static_cast<std::size_t>(i)] = static_cast<float>((i % 97) - 48) / 16.0f;
      exact += static_cast<double>(h[static_cast<std::size_t>(i)]) * h[static_cast<std::size_t>(i)];
    }
    m.upload(a.data(), h.data(), n);
    CHECK(m.to_host(a.data(), n) == h);
    CHECK(m.sum_squares(a.data(), n) == exact);
    CHECK(m.sum_squares(a.data(), n) == m.sum_squares(a.data(), n));
    m.copy(b.data(), a.data(), n);
    m.add(b.data(), a.data(), n);
    m.scale(b.data(), 0.25f, n);
    CHECK(m.sum_squares(b.data(), n) == exact / 4);
    CHECK_FALSE(m.any_nonfinite(a.data(), n));
    const float bad[1] = {std::numeric_limits<float>::infinity()};
    m.upload(a.data() + 17, bad, 1);
    CHECK(m.any_nonfinite(a.data(), n));
  }
  cudaStreamDestroy(stream);
}
