// SGD against values computed by hand from docs/math.md#sgd-with-momentum:
//   d = g + wd·w (no wd on biases), v = m·v + d, w -= lr·v  |  Nesterov: w -= lr·(d + m·v).
#include <catch2/catch.hpp>

#include "trainer/optim/optimizer.hpp"
#include "trainer/optim/sgd.hpp"

using namespace dlsweep::trainer;

namespace {

struct Fixture {
  models::ParameterSet ps;
  std::size_t w, b;
  Fixture() {
    w = ps.add("w", 1, 3, false);
    b = ps.add("b", 1, 2, true);
    ps.finalize();
    set(ps.value(w), {1.0f, -2.0f, 0.5f});
    set(ps.grad(w), {0.1f, 0.2f, -0.3f});
    set(ps.value(b), {1.0f, 1.0f});
    set(ps.grad(b), {0.5f, -0.5f});
  }
  static void set(kernels::MatrixView v, std::initializer_list<float> vals) {
    std::int64_t i = 0;
    for (float x : vals) v.at(0, i++) = x;
  }
  float wv(std::int64_t i) { return ps.value(w).at(0, i); }
  float bv(std::int64_t i) { return ps.value(b).at(0, i); }
};

}  // namespace

TEST_CASE("SGD momentum with weight decay, not on biases", "[optim]") {
  Fixture f;
  optim::Sgd sgd(f.ps, 0.9, false, 0.1, false);
  sgd.step(0.5);
  // d = [0.2, 0.0, -0.25]; v = d; w = w - 0.5 v
  CHECK(f.wv(0) == Approx(0.9));
  CHECK(f.wv(1) == Approx(-2.0));
  CHECK(f.wv(2) == Approx(0.625));
  // bias: no decay; v = g; b = b - 0.5 g
  CHECK(f.bv(0) == Approx(0.75));
  CHECK(f.bv(1) == Approx(1.25));
  sgd.step(0.5);
  // d = g + 0.1 w = [0.19, 0.0, -0.2375]; v = 0.9 [0.2, 0, -0.25] + d = [0.37, 0, -0.4625]
  CHECK(f.wv(0) == Approx(0.715));
  CHECK(f.wv(1) == Approx(-2.0));
  CHECK(f.wv(2) == Approx(0.85625));
  // bias v = 0.9 g + g = 1.9 g; b = 0.75 - 0.5·0.95
  CHECK(f.bv(0) == Approx(0.275));
  CHECK(f.bv(1) == Approx(1.725));
}

TEST_CASE("SGD Nesterov", "[optim]") {
  Fixture f;
  optim::Sgd sgd(f.ps, 0.9, true, 0.1, false);
  sgd.step(0.5);
  // w -= lr (d + m v) with v = d: 0.5 · 1.9 · [0.2, 0, -0.25]
  CHECK(f.wv(0) == Approx(0.81));
  CHECK(f.wv(1) == Approx(-2.0));
  CHECK(f.wv(2) == Approx(0.7375));
  CHECK(f.bv(0) == Approx(1.0 - 0.5 * 1.9 * 0.5));
  sgd.step(0.5);
  // d = g + 0.1 w = [0.181, 0, -0.22625]; v = 0.9·[0.2,0,-0.25] + d = [0.361, 0, -0.45125]
  // w -= 0.5 (d + 0.9 v) = 0.5 [0.5059, 0, -0.632375]
  CHECK(f.wv(0) == Approx(0.81 - 0.25295));
  CHECK(f.wv(2) == Approx(0.7375 + 0.3161875));
}

TEST_CASE("SGD without momentum is plain gradient descent; decay_biases decays biases", "[optim]") {
  Fixture f;
  optim::Sgd sgd(f.ps, 0.0, false, 0.1, true);
  sgd.step(0.5);
  CHECK(f.wv(0) == Approx(0.9));
  // bias decayed too: d = [0.5 + 0.1, -0.5 + 0.1]
  CHECK(f.bv(0) == Approx(0.7));
  CHECK(f.bv(1) == Approx(1.2));
}

TEST_CASE("SGD keeps padding zero and leaves untouched a zero-gradient zero-weight tensor", "[optim]") {
  models::ParameterSet ps;
  auto w = ps.add("w", 2, 128, false);  // padded to 144 columns
  ps.finalize();
  for (std::int64_t c = 0; c < 128; ++c) ps.grad(w).at(1, c) = 1.0f;
  optim::Sgd sgd(ps, 0.9, true, 0.01, false);
  sgd.step(0.1);
  sgd.step(0.1);
  auto v = ps.value(w);
  REQUIRE(v.ld == 144);
  for (std::int64_t r = 0; r < 2; ++r)
    for (std::int64_t c = 128; c < v.ld; ++c) REQUIRE(v.at(r, c) == 0.0f);
  REQUIRE(v.at(0, 5) == 0.0f);
  REQUIRE(v.at(1, 5) < 0.0f);
}

TEST_CASE("make_optimizer knows sgd and names the fix for others", "[optim]") {
  models::ParameterSet ps;
  ps.add("w", 1, 1, false);
  ps.finalize();
  REQUIRE(optim::make_optimizer({"sgd", 0.9, false, 0, false}, ps));
  auto bad = optim::make_optimizer({"adamax", 0.9, false, 0, false}, ps);
  REQUIRE_FALSE(bad);
  REQUIRE(bad.error().what.find("adamax") != std::string::npos);
}
