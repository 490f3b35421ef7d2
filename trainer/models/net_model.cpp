#include "trainer/models/net_model.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "trainer/rng.hpp"

namespace dlsweep::trainer::models {

NetModel::NetModel(kernels::Kernels& backend, kernels::Shape input, std::int64_t classes, kernels::Precision precision)
    : backend_(backend), input_shape_(input), classes_(classes), precision_(precision) {
  if (input.size() < 1 || classes < 1) throw std::invalid_argument("model: empty input or output");
  ready_adapter_ = [this](int tag) {
    if (on_ready_ && *on_ready_) (*on_ready_)(tag_tensors_.at(static_cast<std::size_t>(tag)));
  };
}

int NetModel::new_tag(std::vector<std::size_t> tensors) {
  tag_tensors_.push_back(std::move(tensors));
  return static_cast<int>(tag_tensors_.size()) - 1;
}

NetModel::DenseDecl NetModel::declare_dense(const std::string& name, std::int64_t in, std::int64_t out) {
  DenseDecl d;
  d.w = params_.add(name + ".weight", in, out, false);
  d.b = params_.add(name + ".bias", 1, out, true);
  weights_.push_back({d.w, in});
  d.tag = new_tag({d.w, d.b});
  return d;
}

NetModel::ConvDecl NetModel::declare_conv(const std::string& name, std::int64_t in_channels, std::int64_t out_channels,
                                          std::int64_t kernel, bool bias) {
  ConvDecl d;
  d.bias = bias;
  d.w = params_.add(name + ".weight", out_channels, in_channels * kernel * kernel, false);
  weights_.push_back({d.w, in_channels * kernel * kernel});
  if (bias) {
    d.b = params_.add(name + ".bias", 1, out_channels, true);
    d.tag = new_tag({d.w, d.b});
  } else {
    d.tag = new_tag({d.w});
  }
  return d;
}

NetModel::BatchNormDecl NetModel::declare_batch_norm(const std::string& name, std::int64_t channels) {
  BatchNormDecl d;
  d.scale = params_.add(name + ".weight", 1, channels, true);  // normalisation parameters: is_bias
  d.shift = params_.add(name + ".bias", 1, channels, true);
  d.mean = params_.add_state(name + ".running_mean", channels, 0.0f);
  d.var = params_.add_state(name + ".running_var", channels, 1.0f);
  d.tag = new_tag({d.scale, d.shift});
  bn_scales_.push_back(d.scale);
  return d;
}

void NetModel::finish_parameters(std::uint64_t seed) {
  params_.finalize(backend_.memory());
  // Initial values are drawn on the host and uploaded once (the arena may be device memory).
  std::vector<float> init(static_cast<std::size_t>(params_.arena_size()), 0.0f);
  for (std::size_t k = 0; k < weights_.size(); ++k) {
    SplitMix64 rng(stream_seed(seed, kStreamInit, k));
    const double std_dev = std::sqrt(2.0 / static_cast<double>(weights_[k].second));
    const models::ParamTensor& t = params_.tensor(weights_[k].first);
    for (std::int64_t r = 0; r < t.rows; ++r)
      for (std::int64_t c = 0; c < t.cols; ++c)
        init[static_cast<std::size_t>(t.offset + r * t.ld + c)] = static_cast<float>(rng.normal() * std_dev);
  }
  for (std::size_t i : bn_scales_) {
    const models::ParamTensor& t = params_.tensor(i);
    for (std::int64_t c = 0; c < t.cols; ++c) init[static_cast<std::size_t>(t.offset + c)] = 1.0f;
  }
  params_.memory().upload(params_.values(), init.data(), params_.arena_size());
}

kernels::DenseParams NetModel::dense_params(const DenseDecl& d) const {
  return {params_.value(d.w), params_.grad(d.w), params_.value(d.b).data, params_.grad(d.b).data};
}

kernels::ConvParams NetModel::conv_params(const ConvDecl& d) const {
  kernels::ConvParams p{params_.value(d.w), params_.grad(d.w)};
  if (d.bias) {
    p.b = params_.value(d.b).data;
    p.db = params_.grad(d.b).data;
  }
  return p;
}

kernels::BatchNormParams NetModel::bn_params(const BatchNormDecl& d) const {
  return {params_.value(d.scale).data, params_.value(d.shift).data, params_.grad(d.scale).data,
          params_.grad(d.shift).data, params_.state(d.mean), params_.state(d.var)};
}

kernels::Net& NetModel::net(std::int64_t n, Mode mode) {
  auto key = std::make_pair(n, mode);
  if (auto it = nets_.find(key); it != nets_.end()) return *it->second;
  if (n < 1) throw std::invalid_argument("model: batch size must be positive");
  kernels::NetOptions o;
  o.batch = n;
  o.train = mode == Mode::train;
  o.precision = precision_;
  o.emulate_bf16 = emulate_bf16_;
  o.deterministic = deterministic_;
  return *nets_.emplace(key, backend_.make_net(graph_, o)).first->second;
}

kernels::MatrixView NetModel::forward(std::int64_t n, Mode mode) {
  kernels::Net& nt = net(n, mode);
  nt.forward();
  return nt.output();
}

void NetModel::backward(std::int64_t n, const GradReadyFn& on_ready) {
  kernels::Net& nt = net(n, Mode::train);
  on_ready_ = &on_ready;
  nt.backward(ready_adapter_);
  on_ready_ = nullptr;
}

}  // namespace dlsweep::trainer::models
