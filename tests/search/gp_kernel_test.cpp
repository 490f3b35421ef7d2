// The gp sampler's model: the marginal likelihood's gradient against finite differences, the
// posterior on data whose answer is known, and LogEI / log Φ far in the tail.
#include <catch2/catch.hpp>

#include <cmath>
#include <numbers>

#include "search/gp_fit.hpp"
#include "search/gp_kernel.hpp"
#include "search/log_ei.hpp"

using namespace dlsweep::search::gp;

namespace {

// Three numeric columns and a categorical one (3 choices), a smooth function of them.
void data(Eigen::MatrixXd& X, Eigen::VectorXd& y, std::vector<bool>& cat) {
  const int n = 14;
  X.resize(n, 4);
  y.resize(n);
  for (int i = 0; i < n; ++i) {
    X(i, 0) = std::fmod(0.37 * i + 0.11, 1.0);
    X(i, 1) = std::fmod(0.61 * i + 0.05, 1.0);
    X(i, 2) = std::fmod(0.13 * i * i + 0.3, 1.0);
    X(i, 3) = i % 3;
    y(i) = std::sin(3 * X(i, 0)) + X(i, 1) * X(i, 1) - 0.5 * X(i, 2) + (X(i, 3) == 1 ? 0.7 : 0.0);
  }
  y = (y.array() - y.mean()) / std::sqrt((y.array() - y.mean()).square().mean());
  cat = {false, false, false, true};
}

}  // namespace

TEST_CASE("gp: the Matérn-5/2 derivative in d² matches finite differences", "[search][gp]") {
  for (double d2 : {1e-6, 0.01, 0.3, 1.0, 4.0, 25.0}) {
    const double h = 1e-7 * std::max(1.0, d2);
    const double fd = (matern52(d2 + h) - matern52(d2 - std::min(h, d2))) / (h + std::min(h, d2));
    CHECK(matern52_grad_d2(d2) == Approx(fd).epsilon(1e-5).margin(1e-9));
  }
  CHECK(matern52(0) == 1.0);
}

TEST_CASE("gp: the log marginal likelihood's gradient matches central differences", "[search][gp]") {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  std::vector<bool> cat;
  data(X, y, cat);
  const double min_noise = 1e-6;
  for (const Eigen::VectorXd theta : {Eigen::VectorXd(Eigen::VectorXd::Zero(6)),
                                      Eigen::VectorXd((Eigen::VectorXd(6) << 1.2, -0.7, 0.3, -1.5, 0.4, -3.0).finished())}) {
    Eigen::VectorXd grad;
    const double f = log_marginal_likelihood(X, y, cat, theta, min_noise, &grad);
    REQUIRE(std::isfinite(f));
    for (Eigen::Index i = 0; i < theta.size(); ++i) {
      Eigen::VectorXd a = theta, b = theta;
      a(i) -= 1e-5;
      b(i) += 1e-5;
      const double fd = (log_marginal_likelihood(X, y, cat, b, min_noise) - log_marginal_likelihood(X, y, cat, a, min_noise)) / 2e-5;
      INFO("theta " << i);
      CHECK(grad(i) == Approx(fd).epsilon(1e-4).margin(1e-6));
    }
  }
}

TEST_CASE("gp: the fit raises the marginal likelihood above the default start", "[search][gp]") {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  std::vector<bool> cat;
  data(X, y, cat);
  FitOptions o;
  const KernelParams fitted = fit_kernel(X, y, cat, o, 1);
  KernelParams start;
  start.ils = Eigen::VectorXd::Ones(4);
  start.noise = o.min_noise + 1e-2;
  CHECK(log_marginal_likelihood(X, y, cat, to_theta(fitted, o.min_noise), o.min_noise) >
        log_marginal_likelihood(X, y, cat, to_theta(start, o.min_noise), o.min_noise));
  // Pure: the same inputs and seed, the same hyperparameters.
  const KernelParams again = fit_kernel(X, y, cat, o, 1);
  CHECK(again.ils == fitted.ils);
  CHECK(again.scale == fitted.scale);
}

TEST_CASE("gp: the posterior interpolates its data and returns to the prior far away", "[search][gp]") {
  Eigen::MatrixXd X(3, 1);
  X << 0.2, 0.5, 0.8;
  Eigen::VectorXd y(3);
  y << 1.0, -1.0, 0.5;
  KernelParams p;
  p.ils = Eigen::VectorXd::Constant(1, 25.0);
  p.scale = 2.0;
  p.noise = 1e-8;
  const Posterior post(X, y, {false}, p);
  REQUIRE(post.ok());
  for (int i = 0; i < 3; ++i) {
    const auto [m, v] = post.predict(X.row(i).transpose());
    CHECK(m == Approx(y(i)).margin(1e-5));
    CHECK(v < 1e-6);
  }
  // One point by hand: k* = scale·matern(ils·d²), mean = k*ᵀ K⁻¹ y.
  Eigen::VectorXd x(1);
  x << 0.35;
  Eigen::MatrixXd K(3, 3);
  Eigen::VectorXd ks(3);
  for (int a = 0; a < 3; ++a) {
    ks(a) = p.scale * matern52(p.ils(0) * std::pow(X(a, 0) - 0.35, 2));
    for (int b = 0; b < 3; ++b) K(a, b) = p.scale * matern52(p.ils(0) * std::pow(X(a, 0) - X(b, 0), 2)) + (a == b ? p.noise : 0);
  }
  const auto [m, v] = post.predict(x);
  CHECK(m == Approx(ks.dot(K.ldlt().solve(y))).epsilon(1e-9));
  CHECK(v == Approx(p.scale - ks.dot(K.ldlt().solve(ks))).epsilon(1e-6));
  // Far from the data: the prior (mean 0, variance = scale).
  x << 50.0;
  const auto [mf, vf] = post.predict(x);
  CHECK(mf == Approx(0).margin(1e-12));
  CHECK(vf == Approx(p.scale));
  // Kriging believer: a pending point keeps the mean and shrinks the variance around it.
  Eigen::MatrixXd pending(1, 1);
  pending << 0.35;
  const Posterior believed = post.believing(pending);
  x << 0.35;
  CHECK(believed.predict(x).first == Approx(m).epsilon(1e-6));
  CHECK(believed.predict(x).second < 1e-6);
}

TEST_CASE("gp: LogEI is the log of EI where EI is representable, finite and ordered in the tail", "[search][gp]") {
  auto ei = [](double mean, double var, double best) {
    const double s = std::sqrt(var), z = (best - mean) / s;
    const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi), cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
    return s * (pdf + z * cdf);
  };
  for (double mean : {-2.0, -0.5, 0.0, 0.3, 1.0, 3.0, 6.0})
    for (double var : {0.01, 1.0, 4.0}) {
      INFO(mean << " " << var);
      const double e = ei(mean, var, 0.0);
      if (e > 1e-250 && mean / std::sqrt(var) < 20)  // where the direct formula is exact enough to compare with
        CHECK(log_ei(mean, var, 0.0) == Approx(std::log(e)).epsilon(1e-7));
    }
  // Far in the tail: plain EI underflows to 0 (log −inf); LogEI stays finite and decreasing.
  CHECK(ei(40.0, 1.0, 0.0) == 0.0);
  double last = log_ei(5.0, 1.0, 0.0);
  for (double mean : {10.0, 20.0, 40.0, 100.0, 1e4, 1e9}) {
    const double v = log_ei(mean, 1.0, 0.0);
    INFO(mean);
    CHECK(std::isfinite(v));
    CHECK(v < last);
    last = v;
  }
  // The asymptote log h(z) ≈ −z²/2 − ½ log 2π − 2 log|z| at z = −40.
  CHECK(log_h(-40.0) == Approx(-800.0 - 0.5 * std::log(2 * std::numbers::pi) - 2 * std::log(40.0)).epsilon(1e-3));
  // Continuity at the regime boundary z = −1.
  CHECK(log_h(-1.0 - 1e-9) == Approx(log_h(-1.0 + 1e-9)).epsilon(1e-7));
  // log Φ: exact where Φ is representable, finite far below.
  CHECK(log_ndtr(-3.0) == Approx(std::log(0.5 * std::erfc(3.0 / std::sqrt(2.0)))).epsilon(1e-10));
  CHECK(log_ndtr(-6.0) == Approx(std::log(0.5 * std::erfc(6.0 / std::sqrt(2.0)))).epsilon(1e-10));
  CHECK(std::isfinite(log_ndtr(-60.0)));
  CHECK(log_ndtr(-60.0) == Approx(-1800.0 - std::log(60.0) - 0.5 * std::log(2 * std::numbers::pi)).epsilon(1e-4));
  CHECK(log_pof(0.0, 1.0, 0.0) == Approx(std::log(0.5)));
}
