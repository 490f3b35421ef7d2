#include "trainer/models/mlp.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "trainer/rng.hpp"

namespace dlsweep::trainer::models {

Mlp::Mlp(kernels::Kernels& backend, MlpSpec spec, std::uint64_t seed) : backend_(backend), spec_(std::move(spec)) {
  if (spec_.inputs < 1 || spec_.classes < 1) throw std::invalid_argument("Mlp: empty input or output");
  for (std::size_t l = 0; l < layers(); ++l) {
    const std::string base = "fc" + std::to_string(l + 1);
    auto w = params_.add(base + ".weight", width(l), width(l + 1), false);
    auto b = params_.add(base + ".bias", 1, width(l + 1), true);
    layer_params_.push_back({w, b});
  }
  params_.finalize();
  for (std::size_t l = 0; l < layers(); ++l) {
    SplitMix64 rng(stream_seed(seed, kStreamInit, l));
    const double std_dev = std::sqrt(2.0 / static_cast<double>(width(l)));
    kernels::MatrixView w = params_.value(layer_params_[l][0]);
    for (std::int64_t r = 0; r < w.rows; ++r)
      for (std::int64_t c = 0; c < w.cols; ++c) w.at(r, c) = static_cast<float>(rng.normal() * std_dev);
  }
}

std::int64_t Mlp::width(std::size_t i) const {
  if (i == 0) return spec_.inputs;
  if (i <= spec_.hidden.size()) return spec_.hidden[i - 1];
  return spec_.classes;
}

Mlp::Plan& Mlp::plan(std::int64_t n, Mode mode) {
  auto key = std::make_pair(n, mode);
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  if (n < 1) throw std::invalid_argument("Mlp: batch size must be positive");
  Plan p;
  p.n = n;
  const bool train = mode == Mode::train;
  for (std::size_t i = 0; i <= layers(); ++i) {
    p.acts.push_back(kernels::make_matrix_buffer(n, width(i)));
    p.grads.push_back(train && i > 0 ? kernels::make_matrix_buffer(n, width(i)) : kernels::AlignedBuffer());
  }
  auto view = [&](const kernels::AlignedBuffer& buf, std::size_t i) {
    return buf.view(n, width(i), kernels::padded_ld(width(i)));
  };
  for (std::size_t l = 0; l < layers(); ++l) {
    kernels::DenseBinding b;
    b.x = view(p.acts[l], l);
    b.y = view(p.acts[l + 1], l + 1);
    b.w = params_.value(layer_params_[l][0]);
    b.b = params_.value(layer_params_[l][1]).data;
    if (train) {
      b.dy = view(p.grads[l + 1], l + 1);
      b.dw = params_.grad(layer_params_[l][0]);
      b.db = params_.grad(layer_params_[l][1]).data;
      if (l > 0) b.dx = view(p.grads[l], l);  // the input needs no gradient
    }
    auto act = l + 1 < layers() ? kernels::Activation::relu : kernels::Activation::none;
    p.layers.push_back(backend_.make_dense(act, b));
  }
  return plans_.emplace(key, std::move(p)).first->second;
}

kernels::MatrixView Mlp::input(std::int64_t n, Mode mode) {
  Plan& p = plan(n, mode);
  return p.acts[0].view(n, width(0), kernels::padded_ld(width(0)));
}

kernels::MatrixView Mlp::forward(std::int64_t n, Mode mode) {
  Plan& p = plan(n, mode);
  for (auto& k : p.layers) k->forward();
  return p.acts[layers()].view(n, width(layers()), kernels::padded_ld(width(layers())));
}

kernels::MatrixView Mlp::logits_grad(std::int64_t n) {
  Plan& p = plan(n, Mode::train);
  return p.grads[layers()].view(n, width(layers()), kernels::padded_ld(width(layers())));
}

void Mlp::backward(std::int64_t n, const GradReadyFn& on_ready) {
  Plan& p = plan(n, Mode::train);
  for (std::size_t l = layers(); l-- > 0;) {
    p.layers[l]->backward();
    if (on_ready) on_ready(layer_params_[l]);
  }
}

std::vector<std::string> Mlp::describe(std::int64_t n, Mode mode) {
  std::vector<std::string> out;
  for (auto& k : plan(n, mode).layers) out.push_back(k->describe());
  return out;
}

}  // namespace dlsweep::trainer::models
