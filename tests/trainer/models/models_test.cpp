// The MLP's wiring (layer chaining, parameter set, init, gradient-ready hook) and the
// optimizer's partial step.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "trainer/kernels/kernels_registry.hpp"
#include "trainer/models/mlp.hpp"
#include "trainer/optim/sgd.hpp"
#include "trainer/rng.hpp"

using namespace dlsweep::trainer;
using models::Mode;

namespace {

// Mean loss of a batch through forward + softmax cross-entropy (no gradient).
double batch_loss(models::Mlp& m, kernels::Kernels& k, std::int64_t n, const std::vector<std::int32_t>& labels) {
  auto logits = m.forward(n, Mode::train);
  return k.softmax_cross_entropy(logits, labels.data(), 1.0f, {}).loss_sum / static_cast<double>(n);
}

void fill_input(models::Mlp& m, std::int64_t n, std::uint64_t seed) {
  SplitMix64 rng(seed);
  auto x = m.input(n, Mode::train);
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < x.cols; ++c) x.at(r, c) = static_cast<float>(rng.uniform());
}

}  // namespace

TEST_CASE("MLP parameter gradients match finite differences of the loss", "[models]") {
  auto k = kernels::make_kernels("reference");
  REQUIRE(k);
  models::Mlp m(**k, {5, {4, 3}, 3}, 11);
  const std::int64_t n = 3;
  std::vector<std::int32_t> labels = {0, 2, 1};
  fill_input(m, n, 5);
  auto& ps = m.parameters();
  // Non-zero biases so every path is exercised.
  for (std::size_t t = 0; t < ps.tensors().size(); ++t)
    if (ps.tensor(t).is_bias)
      for (std::int64_t c = 0; c < ps.tensor(t).cols; ++c) ps.value(t).at(0, c) = 0.05f * static_cast<float>(c + 1);

  auto logits = m.forward(n, Mode::train);
  (*k)->softmax_cross_entropy(logits, labels.data(), 1.0f / n, m.logits_grad(n));
  m.backward(n);
  std::vector<float> grads(ps.grads(), ps.grads() + ps.arena_size());

  for (std::size_t t = 0; t < ps.tensors().size(); ++t) {
    auto v = ps.value(t);
    for (std::int64_t r = 0; r < v.rows; ++r)
      for (std::int64_t c = 0; c < v.cols; ++c) {
        const float saved = v.at(r, c), h = 1e-2f;
        v.at(r, c) = saved + h;
        const double up = batch_loss(m, **k, n, labels);
        v.at(r, c) = saved - h;
        const double down = batch_loss(m, **k, n, labels);
        v.at(r, c) = saved;
        const double fd = (up - down) / (2.0 * h);
        INFO(ps.tensor(t).name << "[" << r << "," << c << "]");
        CHECK(grads[static_cast<std::size_t>(ps.tensor(t).offset + r * v.ld + c)] == Approx(fd).margin(2e-3).epsilon(2e-2));
      }
  }
}

TEST_CASE("MLP gradients agree between backends", "[models][conformance]") {
  auto ref = kernels::make_kernels("reference");
  auto dnn = kernels::make_kernels("onednn");
  REQUIRE(ref);
  REQUIRE(dnn);
  const std::int64_t n = 9;
  std::vector<std::int32_t> labels = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  models::Mlp a(**ref, {784, {128, 32}, 10}, 3), b(**dnn, {784, {128, 32}, 10}, 3);
  for (auto* m : {&a, &b}) {
    fill_input(*m, n, 8);
    auto logits = m->forward(n, Mode::train);
    (m == &a ? *ref : *dnn)->softmax_cross_entropy(logits, labels.data(), 1.0f / n, m->logits_grad(n));
    m->backward(n);
  }
  const auto& pa = a.parameters();
  const auto& pb = b.parameters();
  REQUIRE(pa.arena_size() == pb.arena_size());
  double worst = 0;
  for (std::int64_t i = 0; i < pa.arena_size(); ++i)
    worst = std::max(worst, std::abs(double(pa.grads()[i]) - pb.grads()[i]) / (1e-3 + std::abs(double(pa.grads()[i]))));
  CHECK(worst < 1e-2);
}

TEST_CASE("He initialisation is seeded, scaled by fan-in, biases zero", "[models]") {
  auto k = kernels::make_kernels("reference");
  REQUIRE(k);
  models::Mlp a(**k, {784, {512}, 10}, 1), b(**k, {784, {512}, 10}, 1), c(**k, {784, {512}, 10}, 2);
  const auto& ps = a.parameters();
  REQUIRE(ps.tensors().size() == 4);
  CHECK(ps.tensor(0).name == "fc1.weight");
  CHECK(ps.tensor(1).is_bias);
  CHECK(ps.count() == 784 * 512 + 512 + 512 * 10 + 10);
  CHECK(std::equal(ps.values(), ps.values() + ps.arena_size(), b.parameters().values()));
  CHECK_FALSE(std::equal(ps.values(), ps.values() + ps.arena_size(), c.parameters().values()));
  auto w = ps.value(0);
  double sq = 0;
  for (std::int64_t r = 0; r < w.rows; ++r)
    for (std::int64_t col = 0; col < w.cols; ++col) sq += double(w.at(r, col)) * w.at(r, col);
  CHECK(std::sqrt(sq / static_cast<double>(w.rows * w.cols)) == Approx(std::sqrt(2.0 / 784)).epsilon(0.01));
  for (std::int64_t col = 0; col < 512; ++col) CHECK(ps.value(1).at(0, col) == 0.0f);
}

TEST_CASE("backward reports each layer's tensors as they become ready; partial steps add up", "[models][optim]") {
  auto k = kernels::make_kernels("onednn");
  REQUIRE(k);
  models::Mlp a(**k, {20, {16, 8}, 4}, 5), b(**k, {20, {16, 8}, 4}, 5);
  optim::Sgd sa(a.parameters(), 0.9, true, 0.01, false), sb(b.parameters(), 0.9, true, 0.01, false);
  std::vector<std::int32_t> labels = {0, 1, 2, 3, 0, 1};
  std::vector<std::vector<std::size_t>> seen;
  for (int step = 0; step < 3; ++step) {
    for (auto* m : {&a, &b}) {
      fill_input(*m, 6, 100 + step);
      auto logits = m->forward(6, Mode::train);
      (*k)->softmax_cross_entropy(logits, labels.data(), 1.0f / 6, m->logits_grad(6));
    }
    seen.clear();
    a.backward(6, [&](std::span<const std::size_t> t) {
      seen.emplace_back(t.begin(), t.end());
      sa.step(0.1, t);  // layer by layer while the rest of backward runs
    });
    b.backward(6);
    sb.step(0.1);
  }
  REQUIRE(seen.size() == 3);
  CHECK(seen[0] == std::vector<std::size_t>{4, 5});  // last layer first
  CHECK(seen[2] == std::vector<std::size_t>{0, 1});
  const auto& pa = a.parameters();
  CHECK(std::equal(pa.values(), pa.values() + pa.arena_size(), b.parameters().values()));
}
