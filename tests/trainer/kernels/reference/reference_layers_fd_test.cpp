// The reference layers' backward passes (reference_layers.hpp) against central finite
// differences of L = Σ c ⊙ layer(inputs), in double precision: convolution (bias, stride,
// padding, fused ReLU), max pooling, global average pooling, training-mode batch norm (with
// and without fused ReLU), ReLU and add. These are what the oneDNN layers are tested against.
#include <catch2/catch.hpp>

#include <cmath>
#include <algorithm>
#include <functional>
#include <vector>

#include "trainer/kernels/reference/reference_layers.hpp"
#include "trainer/rng.hpp"

using namespace dlsweep::trainer;
using kernels::Activation;
using kernels::Shape;
namespace ref = kernels::ref;

namespace {

/// A batch [n, c·h·w] of doubles with a row stride wider than the row (padding must survive).
struct Batch {
  std::int64_t n;
  Shape s;
  std::vector<double> v;
  ref::Mat<double> m;
  Batch(std::int64_t rows, Shape shape) : n(rows), s(shape), v(static_cast<std::size_t>(rows * (shape.size() + 3)), 0.0) {
    m = {v.data(), rows, shape.size(), shape.size() + 3};
  }
  void randomize(SplitMix64& rng, double scale = 1.0) {
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t c = 0; c < s.size(); ++c) m.at(r, c) = scale * (2 * rng.uniform() - 1);
  }
  double dot(const Batch& o) const {
    double d = 0;
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t c = 0; c < s.size(); ++c) d += m.at(r, c) * o.m.at(r, c);
    return d;
  }
  bool padding_zero() const {
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t c = s.size(); c < m.ld; ++c)
        if (m.at(r, c) != 0.0) return false;
    return true;
  }
};

/// Checks grad[i] == dL/dparam[i] by central differences for `count` entries of `param`.
void check_gradient(const char* what, double* param, const double* grad, std::int64_t count,
                    const std::function<double()>& loss, double h = 1e-6) {
  for (std::int64_t i = 0; i < count; ++i) {
    const double saved = param[i];
    param[i] = saved + h;
    const double up = loss();
    param[i] = saved - h;
    const double down = loss();
    param[i] = saved;
    INFO(what << "[" << i << "]");
    REQUIRE(grad[i] == Approx((up - down) / (2 * h)).margin(1e-7).epsilon(1e-5));
  }
}

void check_matrix_gradient(const char* what, Batch& x, const Batch& dx, const std::function<double()>& loss) {
  for (std::int64_t r = 0; r < x.n; ++r)
    check_gradient(what, &x.m.at(r, 0), &dx.m.at(r, 0), x.s.size(), loss);
  REQUIRE(dx.padding_zero());
}

void check_conv(std::int64_t n, Shape in, kernels::ConvSpec spec, bool bias) {
  INFO("conv k=" << spec.kernel << " stride=" << spec.stride << " pad=" << spec.pad << " relu=" << (spec.act == Activation::relu)
                 << " bias=" << bias);
  SplitMix64 rng(static_cast<std::uint64_t>(spec.kernel * 100 + spec.stride * 10 + spec.pad));
  const Shape out{spec.out_channels, kernels::window_out(in.h, spec.kernel, spec.stride, spec.pad),
                  kernels::window_out(in.w, spec.kernel, spec.stride, spec.pad)};
  const std::int64_t kk = in.c * spec.kernel * spec.kernel;
  Batch x(n, in), y(n, out), c(n, out), dx(n, in), dy(n, out);
  std::vector<double> wv(static_cast<std::size_t>(out.c * (kk + 1))), dwv(wv.size()), b(static_cast<std::size_t>(out.c)),
      db(b.size());
  ref::Mat<double> w{wv.data(), out.c, kk, kk + 1}, dw{dwv.data(), out.c, kk, kk + 1};
  x.randomize(rng);
  c.randomize(rng);
  for (std::int64_t o = 0; o < out.c; ++o)
    for (std::int64_t i = 0; i < kk; ++i) w.at(o, i) = 0.5 * (2 * rng.uniform() - 1);
  for (auto& v : b) v = 0.2 * (2 * rng.uniform() - 1);
  const double* bp = bias ? b.data() : nullptr;
  auto loss = [&] {
    ref::conv_forward<double>(x.m, in, w, bp, spec, y.m, out);
    return y.dot(c);
  };
  loss();
  std::copy(c.v.begin(), c.v.end(), dy.v.begin());
  ref::conv_backward<double>(x.m, in, w, y.m, spec, out, dy.m, dw, bias ? db.data() : nullptr, dx.m);
  check_matrix_gradient("dx", x, dx, loss);
  for (std::int64_t o = 0; o < out.c; ++o) check_gradient("dw", &w.at(o, 0), &dw.at(o, 0), kk, loss);
  if (bias) check_gradient("db", b.data(), db.data(), out.c, loss);
}

}  // namespace

TEST_CASE("reference convolution backward matches finite differences", "[kernels][fd]") {
  check_conv(2, {2, 5, 5}, {3, 3, 1, 1, Activation::none}, true);
  check_conv(2, {2, 5, 5}, {3, 3, 1, 1, Activation::relu}, true);
  check_conv(1, {3, 7, 6}, {2, 3, 2, 1, Activation::none}, false);  // stride 2, odd sizes
  check_conv(2, {1, 6, 6}, {2, 5, 1, 2, Activation::relu}, true);   // the CNN's 5x5 pad 2
  check_conv(2, {3, 4, 4}, {4, 1, 2, 0, Activation::none}, false);  // 1x1 stride-2 projection
}

TEST_CASE("reference convolution forward values", "[kernels]") {
  // A 3x3 all-ones kernel with padding 1 over an all-ones 3x3 image counts the in-bounds taps.
  const Shape in{1, 3, 3};
  std::vector<double> xv(9, 1.0), wv(9, 1.0), yv(9);
  ref::conv_forward<double>({xv.data(), 1, 9, 9}, in, {wv.data(), 1, 9, 9}, nullptr, {1, 3, 1, 1, Activation::none},
                            {yv.data(), 1, 9, 9}, in);
  CHECK(yv == std::vector<double>{4, 6, 4, 6, 9, 6, 4, 6, 4});
}

TEST_CASE("reference max pooling backward matches finite differences", "[kernels][fd]") {
  for (auto spec : {kernels::PoolSpec{kernels::PoolSpec::Kind::max, 2, 2, 0},
                    kernels::PoolSpec{kernels::PoolSpec::Kind::max, 3, 2, 1}}) {
    SplitMix64 rng(static_cast<std::uint64_t>(spec.kernel));
    const Shape in{2, 5, 6};
    const Shape out{2, kernels::window_out(5, spec.kernel, spec.stride, spec.pad),
                    kernels::window_out(6, spec.kernel, spec.stride, spec.pad)};
    Batch x(2, in), y(2, out), c(2, out), dx(2, in);
    x.randomize(rng);  // distinct values: no ties, so the max is differentiable
    c.randomize(rng);
    std::vector<std::int32_t> argmax(static_cast<std::size_t>(2 * out.size()));
    auto loss = [&] {
      ref::max_pool_forward<double>(x.m, in, spec, y.m, out, argmax.data());
      return y.dot(c);
    };
    loss();
    ref::max_pool_backward<double>(c.m, in, out, argmax.data(), dx.m);
    check_matrix_gradient("dx", x, dx, loss);
  }
}

TEST_CASE("reference max pooling ignores padding and picks the first maximum", "[kernels]") {
  const Shape in{1, 2, 2}, out{1, 1, 1};
  std::vector<double> xv = {-5, -3, -3, -4}, yv(1);
  std::int32_t arg = -1;
  ref::max_pool_forward<double>({xv.data(), 1, 4, 4}, in, {kernels::PoolSpec::Kind::max, 3, 2, 1},
                                {yv.data(), 1, 1, 1}, out, &arg);
  CHECK(yv[0] == -3);  // padding (which would be 0) never wins
  CHECK(arg == 1);
}

TEST_CASE("reference global average pooling backward matches finite differences", "[kernels][fd]") {
  SplitMix64 rng(5);
  const Shape in{3, 4, 5}, out{3, 1, 1};
  Batch x(2, in), y(2, out), c(2, out), dx(2, in);
  x.randomize(rng);
  c.randomize(rng);
  auto loss = [&] {
    ref::global_avg_pool_forward<double>(x.m, in, y.m);
    return y.dot(c);
  };
  ref::global_avg_pool_backward<double>(c.m, in, dx.m);
  check_matrix_gradient("dx", x, dx, loss);
  loss();
  double mean = 0;
  for (std::int64_t i = 0; i < 20; ++i) mean += x.m.at(1, 20 + i) / 20;
  CHECK(y.m.at(1, 1) == Approx(mean));
}

TEST_CASE("reference batch norm backward matches finite differences", "[kernels][fd]") {
  for (bool relu : {false, true}) {
    INFO("relu " << relu);
    SplitMix64 rng(relu ? 11 : 12);
    const Shape s{3, 2, 3};
    Batch x(4, s), y(4, s), c(4, s), dx(4, s), dy(4, s);
    x.randomize(rng, 2.0);
    c.randomize(rng);
    std::vector<double> scale = {1.5, -0.7, 0.9}, shift = {0.1, -0.2, 0.3}, mean(3), var(3), dscale(3), dshift(3);
    auto loss = [&] {
      ref::batch_norm_forward_training<double>(x.m, s, scale.data(), shift.data(), 1e-5, relu, y.m, mean.data(), var.data());
      return y.dot(c);
    };
    loss();
    std::copy(c.v.begin(), c.v.end(), dy.v.begin());
    ref::batch_norm_backward<double>(x.m, s, scale.data(), mean.data(), var.data(), 1e-5, relu, y.m, dy.m, dx.m,
                                     dscale.data(), dshift.data());
    check_matrix_gradient("dx", x, dx, loss);
    check_gradient("dscale", scale.data(), dscale.data(), 3, loss);
    check_gradient("dshift", shift.data(), dshift.data(), 3, loss);
    // Without ReLU the output of each channel has mean shift and standard deviation |scale|.
    if (!relu) {
      double m = 0, sq = 0;
      for (std::int64_t r = 0; r < 4; ++r)
        for (std::int64_t i = 0; i < 6; ++i) m += y.m.at(r, 6 + i) / 24;
      for (std::int64_t r = 0; r < 4; ++r)
        for (std::int64_t i = 0; i < 6; ++i) sq += (y.m.at(r, 6 + i) - m) * (y.m.at(r, 6 + i) - m) / 24;
      CHECK(m == Approx(-0.2));
      CHECK(std::sqrt(sq) == Approx(0.7).epsilon(1e-4));
    }
  }
}

TEST_CASE("batch norm running statistics follow PyTorch's update", "[kernels]") {
  const double mean[2] = {1.0, -2.0}, var[2] = {4.0, 0.5};
  float rm[2] = {0.f, 0.f}, rv[2] = {1.f, 1.f};
  ref::update_running_stats(mean, var, 2, 5, 0.1, rm, rv);
  CHECK(rm[0] == Approx(0.1));
  CHECK(rm[1] == Approx(-0.2));
  CHECK(rv[0] == Approx(0.9 + 0.1 * 4.0 * 5 / 4));  // unbiased: m/(m-1)
  CHECK(rv[1] == Approx(0.9 + 0.1 * 0.5 * 5 / 4));
}

TEST_CASE("reference inference batch norm uses the given statistics", "[kernels]") {
  const Shape s{1, 1, 2};
  std::vector<double> x = {3.0, 5.0}, y(2);
  const double scale = 2, shift = 1, mean = 4, var = 4;
  ref::batch_norm_forward_inference<double>({x.data(), 1, 2, 2}, s, &scale, &shift, &mean, &var, 0.0, false,
                                            {y.data(), 1, 2, 2});
  CHECK(y[0] == Approx(0.0));  // 2·(3-4)/2 + 1
  CHECK(y[1] == Approx(2.0));
}

TEST_CASE("reference add with ReLU: forward and masked gradient", "[kernels]") {
  std::vector<double> a = {1, -2, 0.5}, b = {-3, 1, 0.25}, y(3), dy = {1, 1, 1};
  ref::Mat<double> am{a.data(), 1, 3, 3}, bm{b.data(), 1, 3, 3}, ym{y.data(), 1, 3, 3}, dym{dy.data(), 1, 3, 3};
  ref::add_forward<double>(am, bm, Activation::relu, ym);
  CHECK(y == std::vector<double>{0, 0, 0.75});
  ref::relu_mask<double>(ym, dym);
  CHECK(dy == std::vector<double>{0, 0, 1});
}
