#include "trainer/models/resnet.hpp"

#include <stdexcept>
#include <string>

namespace dlsweep::trainer::models {

ResNet::ResNet(kernels::Kernels& backend, int blocks, kernels::Shape in, std::int64_t classes, std::uint64_t seed,
               kernels::Precision precision)
    : NetModel(backend, in, classes, precision), blocks_(blocks), name_("resnet" + std::to_string(6 * blocks + 2)) {
  if (blocks < 1) throw std::invalid_argument("resnet: at least one block per stage");
  if (in.h < 4 || in.w < 4) throw std::invalid_argument("resnet: the input must be at least 4x4");
  using kernels::Activation;
  constexpr std::int64_t kWidth = 16;

  // Declaration pass: every layer's parameters, in forward order.
  struct Block {
    ConvDecl conv1, conv2, proj;
    BatchNormDecl bn1, bn2, proj_bn;
    std::int64_t stride = 1, channels = 0;
    bool projection = false;
  };
  auto stem = declare_conv("conv1", in.c, kWidth, 3, false);
  auto stem_bn = declare_batch_norm("bn1", kWidth);
  std::vector<Block> net;
  std::int64_t channels = kWidth;
  for (int stage = 0; stage < 3; ++stage) {
    const std::int64_t out = kWidth << stage;
    for (int b = 0; b < blocks; ++b) {
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(b) + ".";
      Block blk;
      blk.stride = stage > 0 && b == 0 ? 2 : 1;
      blk.channels = out;
      blk.conv1 = declare_conv(p + "conv1", channels, out, 3, false);
      blk.bn1 = declare_batch_norm(p + "bn1", out);
      blk.conv2 = declare_conv(p + "conv2", out, out, 3, false);
      blk.bn2 = declare_batch_norm(p + "bn2", out);
      blk.projection = blk.stride != 1 || channels != out;
      if (blk.projection) {
        blk.proj = declare_conv(p + "shortcut.conv", channels, out, 1, false);
        blk.proj_bn = declare_batch_norm(p + "shortcut.bn", out);
      }
      net.push_back(blk);
      channels = out;
    }
  }
  auto fc = declare_dense("fc", channels, classes);
  finish_parameters(seed);

  // Graph pass.
  kernels::TensorId x = graph_.input(in);
  x = graph_.conv(x, {kWidth, 3, 1, 1, Activation::none}, conv_params(stem), stem.tag);
  x = graph_.batch_norm(x, {1e-5, 0.1, true}, bn_params(stem_bn), stem_bn.tag);
  for (const Block& blk : net) {
    kernels::TensorId y = graph_.conv(x, {blk.channels, 3, blk.stride, 1, Activation::none}, conv_params(blk.conv1),
                                      blk.conv1.tag);
    y = graph_.batch_norm(y, {1e-5, 0.1, true}, bn_params(blk.bn1), blk.bn1.tag);
    y = graph_.conv(y, {blk.channels, 3, 1, 1, Activation::none}, conv_params(blk.conv2), blk.conv2.tag);
    y = graph_.batch_norm(y, {1e-5, 0.1, false}, bn_params(blk.bn2), blk.bn2.tag);
    kernels::TensorId shortcut = x;
    if (blk.projection) {
      shortcut = graph_.conv(x, {blk.channels, 1, blk.stride, 0, Activation::none}, conv_params(blk.proj),
                             blk.proj.tag);
      shortcut = graph_.batch_norm(shortcut, {1e-5, 0.1, false}, bn_params(blk.proj_bn), blk.proj_bn.tag);
    }
    x = graph_.add(y, shortcut, Activation::relu);
  }
  x = graph_.pool(x, {kernels::PoolSpec::Kind::global_avg});
  graph_.dense(x, classes, Activation::none, dense_params(fc), fc.tag);
}

}  // namespace dlsweep::trainer::models
