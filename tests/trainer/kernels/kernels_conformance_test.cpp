// Every compute backend (kernels_registry: onednn, reference) against the double-precision
// reference math, forward and backward, on shapes with padded strides, odd sizes and batch 1.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "trainer/kernels/kernels_registry.hpp"
#include "trainer/kernels/reference/reference_math.hpp"
#include "trainer/rng.hpp"

using namespace dlsweep::trainer;
using namespace dlsweep::trainer::kernels;

namespace {

struct Buf {
  AlignedBuffer buf;
  MatrixView v;
  Buf(std::int64_t rows, std::int64_t cols) : buf(make_matrix_buffer(rows, cols)) {
    v = buf.view(rows, cols, padded_ld(cols));
  }
  void randomize(SplitMix64& rng, double scale) {
    for (std::int64_t r = 0; r < v.rows; ++r)
      for (std::int64_t c = 0; c < v.cols; ++c) v.at(r, c) = static_cast<float>(scale * (2 * rng.uniform() - 1));
  }
  std::vector<double> as_double() const { return std::vector<double>(buf.data(), buf.data() + v.span()); }
  ref::Mat<double> dmat(std::vector<double>& d) const { return {d.data(), v.rows, v.cols, v.ld}; }
};

void require_close(const MatrixView& got, const std::vector<double>& want, double tol, const char* what) {
  double worst = 0;
  for (std::int64_t r = 0; r < got.rows; ++r)
    for (std::int64_t c = 0; c < got.ld; ++c) {
      const double w = want[static_cast<std::size_t>(r * got.ld + c)], g = got.at(r, c);
      if (c >= got.cols) {
        INFO(what << ": padding [" << r << "," << c << "] must stay zero");
        REQUIRE(g == 0.0f);
        continue;
      }
      worst = std::max(worst, std::abs(g - w) / (1.0 + std::abs(w)));
    }
  INFO(what << ": worst relative error " << worst);
  REQUIRE(worst <= tol);
}

void check_dense(Kernels& k, Activation act, std::int64_t n, std::int64_t in, std::int64_t out, bool with_dx) {
  INFO(k.name() << " dense n=" << n << " in=" << in << " out=" << out << " act=" << (act == Activation::relu)
                << " dx=" << with_dx);
  SplitMix64 rng(static_cast<std::uint64_t>(n * 7919 + in * 31 + out));
  Buf x(n, in), w(in, out), b(1, out), y(n, out), dy(n, out), dw(in, out), db(1, out), dx(n, in);
  x.randomize(rng, 1.0);
  w.randomize(rng, 1.0 / std::sqrt(static_cast<double>(in)));
  b.randomize(rng, 0.1);
  dy.randomize(rng, 1.0);
  // Doubles of the same inputs for the reference.
  auto xd = x.as_double(), wd = w.as_double(), bd = b.as_double(), dyd = dy.as_double();
  std::vector<double> yd(static_cast<std::size_t>(y.v.span())), dwd(static_cast<std::size_t>(dw.v.span())),
      dbd(static_cast<std::size_t>(db.v.span())), dxd(static_cast<std::size_t>(dx.v.span()));
  ref::dense_forward<double>(x.dmat(xd), w.dmat(wd), bd.data(), act, y.dmat(yd));

  DenseBinding bind{x.v, y.v, w.v, b.v.data, dy.v, dw.v, db.v.data, with_dx ? dx.v : MatrixView{}};
  auto kernel = k.make_dense(act, bind);
  kernel->forward();
  require_close(y.v, yd, 1e-5, "y");

  // Backward from the backend's own y (ReLU masks depend on it; values agree to ~1e-6).
  auto yb = y.as_double();
  ref::dense_backward<double>(x.dmat(xd), w.dmat(wd), y.dmat(yb), act, dy.dmat(dyd), dw.dmat(dwd), dbd.data(),
                              with_dx ? dx.dmat(dxd) : ref::Mat<double>{});
  kernel->backward();
  require_close(dy.v, dyd, 1e-6, "dz");
  require_close(dw.v, dwd, 1e-5, "dw");
  require_close(db.v, dbd, 1e-5, "db");
  if (with_dx) require_close(dx.v, dxd, 1e-5, "dx");

  // Replaying the same kernel gives bit-identical results (determinism).
  std::vector<float> dw1(dw.buf.data(), dw.buf.data() + dw.v.span());
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < out; ++c) dy.v.at(r, c) = static_cast<float>(dyd[static_cast<std::size_t>(r * dy.v.ld + c)]);
  kernel->forward();
  kernel->backward();
  REQUIRE(std::equal(dw1.begin(), dw1.end(), dw.buf.data()));
}

}  // namespace

TEST_CASE("every backend's dense layer matches the reference", "[kernels][conformance]") {
  for (const auto& name : available_kernels()) {
    auto k = make_kernels(name);
    REQUIRE(k);
    for (auto act : {Activation::none, Activation::relu}) {
      check_dense(**k, act, 1, 3, 5, true);
      check_dense(**k, act, 7, 33, 10, true);
      check_dense(**k, act, 16, 128, 256, true);  // padded strides on both sides
      check_dense(**k, act, 5, 784, 128, false);  // first layer: no dx
    }
  }
}

TEST_CASE("a forward-only dense kernel runs forward and refuses backward", "[kernels][conformance]") {
  for (const auto& name : available_kernels()) {
    auto k = make_kernels(name);
    REQUIRE(k);
    Buf x(3, 4), w(4, 2), b(1, 2), y(3, 2);
    for (std::int64_t i = 0; i < 4; ++i) w.v.at(i, 0) = 1.0f;
    for (std::int64_t r = 0; r < 3; ++r)
      for (std::int64_t i = 0; i < 4; ++i) x.v.at(r, i) = static_cast<float>(r - 1);
    b.v.data[1] = -0.5f;
    auto kernel = (*k)->make_dense(Activation::relu, DenseBinding{x.v, y.v, w.v, b.v.data, {}, {}, nullptr, {}});
    kernel->forward();
    CHECK(y.v.at(0, 0) == 0.0f);  // relu(-4)
    CHECK(y.v.at(2, 0) == 4.0f);
    CHECK(y.v.at(2, 1) == 0.0f);  // relu(-0.5)
    REQUIRE_THROWS(kernel->backward());
  }
}

TEST_CASE("every backend's softmax cross-entropy matches the reference", "[kernels][conformance]") {
  for (const auto& name : available_kernels()) {
    auto k = make_kernels(name);
    REQUIRE(k);
    INFO(name);
    SplitMix64 rng(3);
    const std::int64_t n = 37, classes = 10;
    Buf logits(n, classes), grad(n, classes);
    logits.randomize(rng, 5.0);
    std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
    for (auto& l : labels) l = static_cast<std::int32_t>(rng.below(classes));
    auto ld = logits.as_double();
    std::vector<double> gd(static_cast<std::size_t>(grad.v.span()));
    auto want = ref::softmax_cross_entropy<double>(logits.dmat(ld), labels.data(), 1.0 / n, grad.dmat(gd));
    auto got = (*k)->softmax_cross_entropy(logits.v, labels.data(), 1.0f / n, grad.v);
    REQUIRE(got.loss_sum == Approx(want.loss_sum).epsilon(1e-5));
    REQUIRE(got.correct == want.correct);
    require_close(grad.v, gd, 1e-6, "dlogits");
    auto eval = (*k)->softmax_cross_entropy(logits.v, labels.data(), 1.0f, {});
    REQUIRE(eval.loss_sum == Approx(want.loss_sum).epsilon(1e-5));
  }
}

TEST_CASE("unknown backend names are rejected with the list of known ones", "[kernels]") {
  auto k = make_kernels("cuda-magic");
  REQUIRE_FALSE(k);
  REQUIRE(k.error().fix.find("onednn") != std::string::npos);
}
