// The reference kernels' backward passes against central finite differences, in double
// precision: this is what makes the reference trustworthy enough to test the others with.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "trainer/kernels/reference/reference_math.hpp"
#include "trainer/rng.hpp"

using namespace dlsweep::trainer;
using kernels::Activation;
namespace ref = kernels::ref;

namespace {

struct DMat {
  std::vector<double> v;
  ref::Mat<double> m;
  DMat(std::int64_t rows, std::int64_t cols, std::int64_t ld) : v(static_cast<std::size_t>(rows * ld), 0.0) {
    m = {v.data(), rows, cols, ld};
  }
  void randomize(SplitMix64& rng, double scale = 1.0) {
    for (std::int64_t r = 0; r < m.rows; ++r)
      for (std::int64_t c = 0; c < m.cols; ++c) m.at(r, c) = scale * (2 * rng.uniform() - 1);
  }
};

// L(x, w, b) = Σ c ⊙ dense_forward(x, w, b): its gradient w.r.t. y is c.
double objective(const DMat& x, const DMat& w, const std::vector<double>& b, Activation act, const DMat& c) {
  DMat y(x.m.rows, w.m.cols, w.m.cols + 3);
  ref::dense_forward<double>(x.m, w.m, b.data(), act, y.m);
  double l = 0;
  for (std::int64_t r = 0; r < y.m.rows; ++r)
    for (std::int64_t o = 0; o < y.m.cols; ++o) l += c.m.at(r, o) * y.m.at(r, o);
  return l;
}

template <class F>
double central_difference(double& param, F&& f) {
  const double h = 1e-6, saved = param;
  param = saved + h;
  const double up = f();
  param = saved - h;
  const double down = f();
  param = saved;
  return (up - down) / (2 * h);
}

void check_dense(Activation act, std::int64_t n, std::int64_t in, std::int64_t out) {
  SplitMix64 rng(42 + n * 1000 + in * 10 + out);
  DMat x(n, in, in + 2), w(in, out, out + 1), c(n, out, out);  // strides wider than rows on purpose
  x.randomize(rng);
  w.randomize(rng);
  c.randomize(rng);
  std::vector<double> b(static_cast<std::size_t>(out));
  for (auto& v : b) v = 0.5 * (2 * rng.uniform() - 1);

  DMat y(n, out, out + 3), dy(n, out, out + 3), dw(in, out, out + 1), dx(n, in, in + 2);
  std::vector<double> db(static_cast<std::size_t>(out));
  ref::dense_forward<double>(x.m, w.m, b.data(), act, y.m);
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t o = 0; o < out; ++o) dy.m.at(r, o) = c.m.at(r, o);
  ref::dense_backward<double>(x.m, w.m, y.m, act, dy.m, dw.m, db.data(), dx.m);

  auto f = [&] { return objective(x, w, b, act, c); };
  for (std::int64_t i = 0; i < in; ++i)
    for (std::int64_t o = 0; o < out; ++o) {
      INFO("dw[" << i << "," << o << "]");
      REQUIRE(dw.m.at(i, o) == Approx(central_difference(w.m.at(i, o), f)).margin(1e-7).epsilon(1e-6));
    }
  for (std::int64_t o = 0; o < out; ++o) {
    INFO("db[" << o << "]");
    REQUIRE(db[static_cast<std::size_t>(o)] ==
            Approx(central_difference(b[static_cast<std::size_t>(o)], f)).margin(1e-7).epsilon(1e-6));
  }
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t i = 0; i < in; ++i) {
      INFO("dx[" << r << "," << i << "]");
      REQUIRE(dx.m.at(r, i) == Approx(central_difference(x.m.at(r, i), f)).margin(1e-7).epsilon(1e-6));
    }
  // Padding columns are never written.
  for (std::int64_t r = 0; r < n; ++r) REQUIRE(dx.m.data[r * dx.m.ld + in] == 0.0);
}

}  // namespace

TEST_CASE("reference dense backward matches finite differences (no activation)", "[kernels][fd]") {
  check_dense(Activation::none, 3, 4, 5);
  check_dense(Activation::none, 1, 7, 2);
}

TEST_CASE("reference dense backward matches finite differences (ReLU)", "[kernels][fd]") {
  check_dense(Activation::relu, 4, 6, 5);
  check_dense(Activation::relu, 5, 3, 8);
}

TEST_CASE("reference softmax cross-entropy gradient matches finite differences", "[kernels][fd]") {
  SplitMix64 rng(7);
  const std::int64_t n = 4, k = 6;
  DMat logits(n, k, k + 2), grad(n, k, k + 2);
  logits.randomize(rng, 3.0);
  std::vector<std::int32_t> labels = {0, 5, 2, 2};
  const double scale = 0.25;  // 1/batch
  auto st = ref::softmax_cross_entropy<double>(logits.m, labels.data(), scale, grad.m);
  auto f = [&] {
    return ref::softmax_cross_entropy<double>(logits.m, labels.data(), scale, ref::Mat<double>{}).loss_sum * scale;
  };
  REQUIRE(st.loss_sum * scale == Approx(f()));
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < k; ++c) {
      INFO("dlogits[" << r << "," << c << "]");
      REQUIRE(grad.m.at(r, c) == Approx(central_difference(logits.m.at(r, c), f)).margin(1e-8).epsilon(1e-6));
    }
}

TEST_CASE("reference softmax cross-entropy values", "[kernels]") {
  // Uniform logits over k classes: loss = log k; argmax is the first class.
  std::vector<double> l(3 * 4, 1.5);
  ref::Mat<double> logits{l.data(), 3, 4, 4};
  std::vector<std::int32_t> labels = {0, 1, 3};
  auto st = ref::softmax_cross_entropy<double>(logits, labels.data(), 1.0, {});
  REQUIRE(st.loss_sum == Approx(3 * std::log(4.0)));
  REQUIRE(st.correct == 1);
  // Huge logits stay finite (max-shifted log-sum-exp).
  l = {1e4, 0, 0, 0};
  ref::Mat<double> big{l.data(), 1, 4, 4};
  std::int32_t lab = 1;
  auto st2 = ref::softmax_cross_entropy<double>(big, &lab, 1.0, {});
  REQUIRE(st2.loss_sum == Approx(1e4));
  // A NaN logit makes the loss non-finite (the trainer's divergence check relies on it).
  l = {std::nan(""), 0, 0, 0};
  auto st3 = ref::softmax_cross_entropy<double>(big, &lab, 1.0, {});
  REQUIRE_FALSE(std::isfinite(st3.loss_sum));
}
