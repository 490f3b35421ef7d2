#include "trainer/models/mlp.hpp"

#include <stdexcept>
#include <string>

namespace dlsweep::trainer::models {

Mlp::Mlp(kernels::Kernels& backend, MlpSpec spec, std::uint64_t seed, kernels::Precision precision)
    : NetModel(backend, {spec.inputs, 1, 1}, spec.classes, precision), spec_(std::move(spec)) {
  for (std::int64_t h : spec_.hidden)
    if (h < 1) throw std::invalid_argument("Mlp: empty hidden layer");
  std::vector<DenseDecl> fc;
  for (std::size_t l = 0; l < layers(); ++l)
    fc.push_back(declare_dense("fc" + std::to_string(l + 1), width(l), width(l + 1)));
  finish_parameters(seed);
  kernels::TensorId x = graph_.input({spec_.inputs, 1, 1});
  for (std::size_t l = 0; l < layers(); ++l) {
    auto act = l + 1 < layers() ? kernels::Activation::relu : kernels::Activation::none;
    x = graph_.dense(x, width(l + 1), act, dense_params(fc[l]), fc[l].tag);
  }
}

std::int64_t Mlp::width(std::size_t i) const {
  if (i == 0) return spec_.inputs;
  if (i <= spec_.hidden.size()) return spec_.hidden[i - 1];
  return spec_.classes;
}

}  // namespace dlsweep::trainer::models
