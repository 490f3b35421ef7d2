// GPU conformance of the cuda backend as the trainer uses it: every model (mlp, cnn with
// biased ReLU convolutions and max pooling, resnet8 with batch norm, projection shortcuts,
// residual adds and global average pooling) built on the cuda backend and on the reference
// backend from the same seed, one training step's forward, loss and backward on the same
// batch: logits, loss, every parameter gradient and the batch-norm running statistics must
// agree; then the evaluation net. Tolerances: fp32 1e-4 relative (cuDNN/cuBLASLt sum in
// other orders), gradients 1e-3 of the tensor's largest gradient; tf32 (10-bit mantissas)
// 3e-2. Runs only where a GPU is present (cuda_test_main.cpp exits 77 elsewhere).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "trainer/kernels/cuda/cuda_kernels.hpp"
#include "trainer/kernels/kernels_registry.hpp"
#include "trainer/kernels/precision.hpp"
#include "trainer/models/model_registry.hpp"
#include "trainer/rng.hpp"

using namespace dlsweep::trainer;

namespace {

std::vector<float> host_copy(kernels::Kernels& k, kernels::MatrixView m) {
  auto all = k.memory().to_host(m.data, m.span());
  std::vector<float> out;
  for (std::int64_t r = 0; r < m.rows; ++r)
    for (std::int64_t c = 0; c < m.cols; ++c) out.push_back(all[static_cast<std::size_t>(r * m.ld + c)]);
  return out;
}

double worst_rel(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]) / (1.0 + std::abs(want[i])));
  return worst;
}

void model_case(const std::string& name, kernels::Precision precision, double tol,
                kernels::Precision ref_precision = kernels::Precision::fp32) {
  INFO(name << " " << kernels::precision_name(precision) << " vs the reference at "
            << kernels::precision_name(ref_precision));
  auto ref_k = kernels::make_kernels("reference");
  auto gpu_k = kernels::cuda::make_cuda_kernels();
  REQUIRE(ref_k);
  REQUIRE(gpu_k);
  models::ModelSpec spec;
  spec.name = name;
  spec.hidden = {64, 32};
  spec.input = models::default_input_shape(name);
  spec.seed = 7;
  spec.precision = ref_precision;  // bf16 on the reference backend: fp32 math on bf16-rounded tensors
  auto rm = models::make_model(spec, **ref_k);
  spec.precision = precision;
  auto gm = models::make_model(spec, **gpu_k);
  REQUIRE(rm);
  REQUIRE(gm);
  models::Model& R = **rm;
  models::Model& G = **gm;
  auto& rp = R.parameters();
  auto& gp = G.parameters();
  REQUIRE(rp.arena_size() == gp.arena_size());
  // The same initial parameters on both (NetModel draws them on the host and uploads).
  CHECK(gp.memory().to_host(gp.values(), gp.arena_size()) ==
        std::vector<float>(rp.values(), rp.values() + rp.arena_size()));

  const std::int64_t n = 16;
  SplitMix64 rng(11);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
  for (auto& l : labels) l = static_cast<std::int32_t>(rng.next() % 10);
  kernels::MatrixView rx = R.input(n, models::Mode::train), gx = G.input(n, models::Mode::train);
  REQUIRE(gx.data != nullptr);
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < rx.cols; ++c) {
      const auto v = static_cast<float>(2 * rng.uniform() - 1);
      rx.at(r, c) = v;
      gx.at(r, c) = v;  // a page-locked host buffer: the net copies it to the GPU in forward()
    }
  const auto rl = (*ref_k)->softmax_cross_entropy(R.forward(n, models::Mode::train), labels.data(), 1.0f / n,
                                                  R.logits_grad(n));
  const auto glog = G.forward(n, models::Mode::train);
  const auto gl = (*gpu_k)->softmax_cross_entropy(glog, labels.data(), 1.0f / n, G.logits_grad(n));
  CHECK(std::abs(gl.loss_sum - rl.loss_sum) <= tol * (1 + std::abs(rl.loss_sum)));
  {
    const auto want = host_copy(**ref_k, R.forward(n, models::Mode::train));  // the same batch again
    // (forward ran twice on the reference: running statistics move twice; compare logits only)
    CHECK(worst_rel(host_copy(**gpu_k, glog), want) <= tol);
  }
  // Redo the reference's loss gradient after the second forward, then both backward.
  (*ref_k)->softmax_cross_entropy(R.forward(n, models::Mode::train), labels.data(), 1.0f / n, R.logits_grad(n));
  R.backward(n);
  G.backward(n);
  const auto gg = gp.memory().to_host(gp.grads(), gp.arena_size());
  for (const auto& t : rp.tensors()) {
    INFO(t.name);
    double scale = 0, worst = 0;
    for (std::int64_t r = 0; r < t.rows; ++r)
      for (std::int64_t c = 0; c < t.cols; ++c) scale = std::max(scale, std::abs(static_cast<double>(rp.grads()[t.offset + r * t.ld + c])));
    for (std::int64_t r = 0; r < t.rows; ++r)
      for (std::int64_t c = 0; c < t.cols; ++c) {
        const std::size_t i = static_cast<std::size_t>(t.offset + r * t.ld + c);
        worst = std::max(worst, std::abs(static_cast<double>(gg[i]) - rp.grads()[i]));
      }
    CHECK(worst <= 10 * tol * scale + 1e-7);
  }
  // Running statistics: the reference ran three training forwards, the GPU one; compare after
  // two more on the GPU.
  if (rp.state_size() > 0) {
    G.forward(n, models::Mode::train);
    G.forward(n, models::Mode::train);
    const auto gs = gp.memory().to_host(gp.state_values(), gp.state_size());
    double worst = 0;
    for (std::int64_t i = 0; i < rp.state_size(); ++i)
      worst = std::max(worst, std::abs(static_cast<double>(gs[static_cast<std::size_t>(i)]) - rp.state_values()[i]) /
                                  (1.0 + std::abs(rp.state_values()[i])));
    INFO("running statistics, worst relative error " << worst);
    CHECK(worst <= tol);
  }
  // Evaluation nets (running statistics in batch norm).
  kernels::MatrixView re = R.input(n, models::Mode::eval), ge = G.input(n, models::Mode::eval);
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < re.cols; ++c) ge.at(r, c) = re.at(r, c) = rx.at(r, c);
  const auto want = host_copy(**ref_k, R.forward(n, models::Mode::eval));
  CHECK(worst_rel(host_copy(**gpu_k, G.forward(n, models::Mode::eval)), want) <= tol);
}

}  // namespace

TEST_CASE("cuda backend models match the reference backend, fp32", "[cuda][conformance][net]") {
  for (const char* m : {"mlp", "cnn", "resnet8"}) model_case(m, kernels::Precision::fp32, 1e-4);
}

TEST_CASE("cuda backend models match the reference backend, tf32", "[cuda][conformance][net]") {
  for (const char* m : {"mlp", "cnn", "resnet8"}) model_case(m, kernels::Precision::tf32, 3e-2);
}

TEST_CASE("cuda backend models match the reference backend, bf16 (NHWC, tensor cores)", "[cuda][conformance][net]") {
  // bf16 storage (8-bit mantissas) against the reference's bf16 emulation.
  for (const char* m : {"mlp", "cnn", "resnet8"})
    model_case(m, kernels::Precision::bf16, 6e-2, kernels::Precision::bf16);
}

TEST_CASE("cuda backend models match the reference backend, fp16 (NHWC, tensor cores)", "[cuda][conformance][net]") {
  for (const char* m : {"mlp", "cnn", "resnet8"}) model_case(m, kernels::Precision::fp16, 3e-2);
}

TEST_CASE("cuda NHWC nets: every model builds in every tensor-core precision; eager, captured and replayed steps agree bit for bit",
          "[cuda][conformance][net]") {
  auto gpu_k = kernels::cuda::make_cuda_kernels();
  REQUIRE(gpu_k);
  for (const char* name : {"mlp", "cnn", "resnet8", "resnet20"})
    for (auto p : {kernels::Precision::tf32, kernels::Precision::bf16, kernels::Precision::fp16}) {
      INFO(name << " " << kernels::precision_name(p));
      models::ModelSpec spec;
      spec.name = name;
      spec.hidden = {64, 32};
      spec.input = models::default_input_shape(name);
      spec.seed = 3;
      spec.precision = p;
      auto m = models::make_model(spec, **gpu_k);
      REQUIRE(m);
      models::Model& G = **m;
      const std::int64_t n = 8;
      std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
      SplitMix64 rng(5);
      for (auto& l : labels) l = static_cast<std::int32_t>(rng.next() % 10);
      auto step = [&] {
        kernels::MatrixView x = G.input(n, models::Mode::train);
        SplitMix64 r(9);
        for (std::int64_t i = 0; i < n; ++i)
          for (std::int64_t c = 0; c < x.cols; ++c) x.at(i, c) = static_cast<float>(2 * r.uniform() - 1);
        const auto st = (*gpu_k)->softmax_cross_entropy(G.forward(n, models::Mode::train), labels.data(), 1.0f / n,
                                                        G.logits_grad(n));
        G.backward(n);
        auto& gp = G.parameters();
        auto grads = gp.memory().to_host(gp.grads(), gp.arena_size());
        return std::make_pair(st.loss_sum, grads);
      };
      // The first pass runs eagerly, the second is captured as a CUDA graph, the third replays
      // it (graph_policy.hpp): all three must agree bit for bit.
      const auto a = step();
      const auto b = step();
      const auto c = step();
      CHECK(std::isfinite(a.first));
      CHECK(a.first == b.first);
      CHECK(a.second == b.second);
      CHECK(a.first == c.first);
      CHECK(a.second == c.second);
    }
}
