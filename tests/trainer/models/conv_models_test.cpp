// The CNN and the ResNets (models/cnn, models/resnet, model_registry): parameter layout and
// flags, gradients against finite differences of the loss, agreement between backends,
// the gradient-ready hook, batch-norm state and evaluation mode, and that they learn.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "trainer/data/synthetic.hpp"
#include "trainer/kernels/kernels_registry.hpp"
#include "trainer/models/cnn.hpp"
#include "trainer/models/model_registry.hpp"
#include "trainer/models/resnet.hpp"
#include "trainer/optim/optimizer.hpp"
#include "trainer/rng.hpp"

using namespace dlsweep::trainer;
using models::Mode;

namespace {

/// These tests run one compute thread: on a loaded 2-core machine two OpenMP threads spend
/// most of their time waiting for each other (measured: 1 s alone, 70 s under load).
struct OneThread {
  int previous = kernels::compute_threads();
  OneThread() { kernels::set_compute_threads(1); }
  ~OneThread() { kernels::set_compute_threads(previous); }
};

void fill_input(models::Model& m, std::int64_t n, Mode mode, std::uint64_t seed) {
  SplitMix64 rng(seed);
  auto x = m.input(n, mode);
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < x.cols; ++c) x.at(r, c) = static_cast<float>(rng.uniform());
}

std::vector<std::int32_t> labels_for(std::int64_t n) {
  std::vector<std::int32_t> l(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) l[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 7) % 10);
  return l;
}

/// Forward + loss (mean over the batch) + backward; returns the loss.
double train_pass(models::Model& m, kernels::Kernels& k, std::int64_t n, const std::vector<std::int32_t>& labels,
                  const models::GradReadyFn& on_ready = {}) {
  auto logits = m.forward(n, Mode::train);
  auto st = k.softmax_cross_entropy(logits, labels.data(), 1.0f / static_cast<float>(n), m.logits_grad(n));
  m.backward(n, on_ready);
  return st.loss_sum / static_cast<double>(n);
}

std::unique_ptr<models::Model> build(const std::string& name, kernels::Kernels& k, kernels::Shape in,
                                     kernels::Precision p = kernels::Precision::fp32, std::uint64_t seed = 3) {
  models::ModelSpec spec;
  spec.name = name;
  spec.input = in;
  spec.seed = seed;
  spec.precision = p;
  auto m = models::make_model(spec, k);
  REQUIRE(m);
  return std::move(*m);
}

}  // namespace

TEST_CASE("the CNN's parameters match the published layout", "[models]") {
  OneThread one_thread;
  auto k = kernels::make_kernels("reference");
  REQUIRE(k);
  auto m = build("cnn", **k, {1, 28, 28});
  const auto& ps = m->parameters();
  REQUIRE(ps.tensors().size() == 8);
  CHECK(ps.tensor(0).name == "conv1.weight");
  CHECK(ps.tensor(0).cols == 25);
  CHECK(ps.tensor(4).name == "fc1.weight");
  CHECK(ps.tensor(4).rows == 3136);
  CHECK(ps.count() == (32 * 25 + 32) + (64 * 800 + 64) + (3136 * 1024 + 1024) + (1024 * 10 + 10));
  CHECK(ps.tensor(1).is_bias);
  CHECK_FALSE(ps.tensor(2).is_bias);
  CHECK(ps.states().empty());
  auto rgb = build("cnn", **k, {3, 32, 32});
  CHECK(rgb->parameters().tensor(4).rows == 64 * 8 * 8);
  CHECK(rgb->input_size() == 3072);
}

TEST_CASE("ResNet-8 and ResNet-20 have the CIFAR layout", "[models]") {
  OneThread one_thread;
  auto k = kernels::make_kernels("reference");
  REQUIRE(k);
  auto r8 = build("resnet8", **k, {3, 32, 32});
  auto r20 = build("resnet20", **k, {3, 32, 32});
  CHECK(r8->name() == "resnet8");
  CHECK(r20->name() == "resnet20");
  const auto& ps = r20->parameters();
  // 19 3x3 convolutions + 2 projections, each followed by a batch norm, and the classifier.
  std::int64_t convs = 0, bns = 0;
  for (const auto& t : ps.tensors()) {
    convs += t.name.ends_with("conv1.weight") || t.name.ends_with("conv2.weight") || t.name.ends_with("shortcut.conv.weight");
    bns += t.name.find("bn") != std::string::npos && t.name.ends_with(".weight");
    if (t.name.find("bn") != std::string::npos) CHECK(t.is_bias);  // scale and shift: no weight decay
  }
  CHECK(convs == 21);
  CHECK(bns == 21);
  CHECK(ps.states().size() == 42);  // running mean and variance per batch norm
  // He et al.: ResNet-20 has 0.27M parameters (option A); the 1x1 projections add ~3k.
  CHECK(ps.count() > 270000);
  CHECK(ps.count() < 280000);
  CHECK(r8->parameters().count() < ps.count());
  // Running variance starts at 1, scale at 1.
  CHECK(ps.state(1)[0] == 1.0f);
  CHECK(ps.value(1).at(0, 0) == 1.0f);
}

TEST_CASE("make_model rejects unknown models and inputs too small for convolutions", "[models]") {
  OneThread one_thread;
  auto k = kernels::make_kernels("reference");
  REQUIRE(k);
  models::ModelSpec spec;
  spec.name = "vgg";
  auto bad = models::make_model(spec, **k);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().fix.find("resnet20") != std::string::npos);
  spec.name = "cnn";
  spec.input = {784, 1, 1};
  bad = models::make_model(spec, **k);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().where == "model");
  CHECK(models::default_input_shape("resnet20") == kernels::Shape{3, 32, 32});
  CHECK(models::default_input_shape("cnn") == kernels::Shape{1, 28, 28});
}

TEST_CASE("conv model gradients match finite differences of the loss", "[models]") {
  OneThread one_thread;
  auto k = kernels::make_kernels("reference");
  REQUIRE(k);
  for (const char* name : {"cnn", "resnet8"}) {
    INFO(name);
    auto m = build(name, **k, {2, 8, 8});
    const std::int64_t n = 4;
    auto labels = labels_for(n);
    fill_input(*m, n, Mode::train, 5);
    train_pass(*m, **k, n, labels);
    auto& ps = m->parameters();
    std::vector<float> grads(ps.grads(), ps.grads() + ps.arena_size());
    auto loss = [&] {
      auto logits = m->forward(n, Mode::train);
      return (*k)->softmax_cross_entropy(logits, labels.data(), 1.0f, {}).loss_sum / static_cast<double>(n);
    };
    // A few entries of every tensor. The step is small because a step of 1e-3 or more already
    // moves some of the thousands of ReLU inputs across their kink (measured: the difference
    // quotients converge to the analytic gradient as the step shrinks to 3e-4).
    for (std::size_t t = 0; t < ps.tensors().size(); ++t) {
      auto v = ps.value(t);
      for (std::int64_t j = 0; j < 3; ++j) {
        const std::int64_t r = (j * 7) % v.rows, c = (j * 13) % v.cols;
        const float saved = v.at(r, c), h = 3e-4f;
        v.at(r, c) = saved + h;
        const double up = loss();
        v.at(r, c) = saved - h;
        const double down = loss();
        v.at(r, c) = saved;
        INFO(ps.tensor(t).name << "[" << r << "," << c << "]");
        CHECK(grads[static_cast<std::size_t>(ps.tensor(t).offset + r * v.ld + c)] ==
              Approx((up - down) / (2.0 * h)).margin(4e-4).epsilon(2e-2));
      }
    }
  }
}

TEST_CASE("conv models agree between backends in training and evaluation", "[models][conformance]") {
  OneThread one_thread;
  auto ref = kernels::make_kernels("reference");
  auto dnn = kernels::make_kernels("onednn");
  REQUIRE(ref);
  REQUIRE(dnn);
  for (const char* name : {"cnn", "resnet8"}) {
    INFO(name);
    const kernels::Shape in = std::string(name) == "cnn" ? kernels::Shape{1, 12, 12} : kernels::Shape{3, 8, 8};
    auto a = build(name, **ref, in), b = build(name, **dnn, in);
    const std::int64_t n = 6;
    auto labels = labels_for(n);
    for (auto* m : {a.get(), b.get()}) {
      fill_input(*m, n, Mode::train, 8);
      train_pass(*m, m == a.get() ? **ref : **dnn, n, labels);
    }
    const auto& pa = a->parameters();
    const auto& pb = b->parameters();
    REQUIRE(pa.arena_size() == pb.arena_size());
    double worst = 0;
    for (std::int64_t i = 0; i < pa.arena_size(); ++i)
      worst = std::max(worst, std::abs(double(pa.grads()[i]) - pb.grads()[i]) / (1e-3 + std::abs(double(pa.grads()[i]))));
    CHECK(worst < 1e-2);
    for (std::int64_t i = 0; i < pa.state_size(); ++i) CHECK(pa.state_values()[i] == Approx(pb.state_values()[i]).margin(1e-5));
    // Evaluation mode (running statistics for the ResNet) on another batch size.
    fill_input(*a, 3, Mode::eval, 9);
    fill_input(*b, 3, Mode::eval, 9);
    auto la = a->forward(3, Mode::eval), lb = b->forward(3, Mode::eval);
    for (std::int64_t r = 0; r < 3; ++r)
      for (std::int64_t c = 0; c < 10; ++c) CHECK(la.at(r, c) == Approx(lb.at(r, c)).margin(1e-4).epsilon(1e-3));
  }
}

TEST_CASE("conv models report every tensor's gradient once, last layer first", "[models]") {
  OneThread one_thread;
  auto k = kernels::make_kernels("onednn");
  REQUIRE(k);
  for (const char* name : {"cnn", "resnet20"}) {
    INFO(name);
    auto m = build(name, **k, {3, 16, 16});
    auto labels = labels_for(2);
    fill_input(*m, 2, Mode::train, 1);
    std::vector<std::size_t> seen;
    train_pass(*m, **k, 2, labels, [&](std::span<const std::size_t> t) { seen.insert(seen.end(), t.begin(), t.end()); });
    const std::size_t count = m->parameters().tensors().size();
    REQUIRE(seen.size() == count);
    CHECK(std::set<std::size_t>(seen.begin(), seen.end()).size() == count);
    CHECK(seen.front() == count - 2);  // the classifier's weight, then its bias
    CHECK(seen[seen.size() - (std::string(name) == "cnn" ? 2 : 1)] == 0);  // the first convolution last
  }
}

TEST_CASE("ResNet evaluation uses the running statistics", "[models]") {
  OneThread one_thread;
  auto k = kernels::make_kernels("onednn");
  REQUIRE(k);
  auto m = build("resnet8", **k, {3, 8, 8});
  auto labels = labels_for(8);
  fill_input(*m, 8, Mode::train, 2);
  auto& ps = m->parameters();
  std::vector<float> before(ps.state_values(), ps.state_values() + ps.state_size());
  auto train_logits = m->forward(8, Mode::train);
  std::vector<float> t(train_logits.data, train_logits.data + train_logits.span());
  CHECK_FALSE(std::equal(before.begin(), before.end(), ps.state_values()));  // training forward moved them
  std::vector<float> after(ps.state_values(), ps.state_values() + ps.state_size());
  fill_input(*m, 8, Mode::eval, 2);
  auto eval_logits = m->forward(8, Mode::eval);
  CHECK(std::equal(after.begin(), after.end(), ps.state_values()));  // evaluation did not
  CHECK_FALSE(std::equal(t.begin(), t.end(), eval_logits.data));     // batch vs running statistics
}

TEST_CASE("the CNN and ResNet-8 learn a synthetic task, in fp32 and bf16", "[models]") {
  OneThread one_thread;
  auto k = kernels::make_kernels("onednn");
  REQUIRE(k);
  data::SyntheticSpec ss;
  ss.train_size = 256;
  ss.test_size = 1;
  ss.features = 3 * 12 * 12;
  auto d = data::make_synthetic(ss);
  for (const char* name : {"cnn", "resnet8"})
    for (auto prec : {kernels::Precision::fp32, kernels::Precision::bf16}) {
      INFO(name << (prec == kernels::Precision::bf16 ? " bf16" : " fp32"));
      auto m = build(name, **k, {3, 12, 12}, prec);
      optim::OptimizerSpec os;
      auto opt = optim::make_optimizer(os, m->parameters());
      REQUIRE(opt);
      const std::int64_t n = 32;
      std::vector<std::int32_t> labels(n);
      double first = 0, last = 0;
      for (int step = 0; step < 40; ++step) {
        auto x = m->input(n, Mode::train);
        for (std::int64_t r = 0; r < n; ++r) {
          const std::int64_t i = (step * n + r) % ss.train_size;
          std::copy(d.train.sample(i), d.train.sample(i) + ss.features, x.row(r));
          labels[static_cast<std::size_t>(r)] = d.train.labels[static_cast<std::size_t>(i)];
        }
        const double l = train_pass(*m, **k, n, labels);
        (*opt)->step(0.01);
        if (step < 4) first += l / 4;
        if (step >= 36) last += l / 4;
      }
      CHECK(last < 0.5 * first);
    }
}
