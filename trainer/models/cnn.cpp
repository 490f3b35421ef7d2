#include "trainer/models/cnn.hpp"

#include <stdexcept>

namespace dlsweep::trainer::models {

namespace {
constexpr std::int64_t kConv1 = 32, kConv2 = 64, kHidden = 1024, kKernel = 5;
}

Cnn::Cnn(kernels::Kernels& backend, kernels::Shape in, std::int64_t classes, std::uint64_t seed,
         kernels::Precision precision)
    : NetModel(backend, in, classes, precision) {
  if (in.h < 4 || in.w < 4) throw std::invalid_argument("cnn: the input must be at least 4x4");
  const std::int64_t flat = kConv2 * (in.h / 2 / 2) * (in.w / 2 / 2);
  auto conv1 = declare_conv("conv1", in.c, kConv1, kKernel, true);
  auto conv2 = declare_conv("conv2", kConv1, kConv2, kKernel, true);
  auto fc1 = declare_dense("fc1", flat, kHidden);
  auto fc2 = declare_dense("fc2", kHidden, classes);
  finish_parameters(seed);

  using kernels::Activation;
  const kernels::PoolSpec pool{kernels::PoolSpec::Kind::max, 2, 2, 0};
  kernels::TensorId x = graph_.input(in);
  x = graph_.conv(x, {kConv1, kKernel, 1, 2, Activation::relu}, conv_params(conv1), conv1.tag);
  x = graph_.pool(x, pool);
  x = graph_.conv(x, {kConv2, kKernel, 1, 2, Activation::relu}, conv_params(conv2), conv2.tag);
  x = graph_.pool(x, pool);
  x = graph_.dense(x, kHidden, Activation::relu, dense_params(fc1), fc1.tag);
  graph_.dense(x, classes, Activation::none, dense_params(fc2), fc2.tag);
}

}  // namespace dlsweep::trainer::models
