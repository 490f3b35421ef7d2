// resnet.hpp — ResNet-(6n+2) for CIFAR-sized inputs (He et al. 2016, section 4.2): ResNet-8
// (n = 1) and ResNet-20 (n = 3).
//   conv 3x3 16 + BN + ReLU
//   3 stages of n basic blocks, 16/32/64 channels; the first block of stages 2 and 3 halves
//   the resolution with stride 2. Block: conv 3x3 + BN + ReLU → conv 3x3 + BN, plus the
//   shortcut, then ReLU. Convolutions have no bias (BN follows).
//   global average pool → fc classes.
// Shortcuts: identity where shapes match; where they change, a 1x1 stride-2 convolution
// followed by BN (the paper's option B, torchvision's choice) instead of option A's zero
// padding — a few thousand parameters more, and no special layer.
// Parameter names follow torchvision (conv1, bn1, layer1.0.conv1, …, layer2.0.shortcut.conv,
// fc); batch-norm scale/shift are flagged is_bias (no weight decay by default), running
// statistics live in ParameterSet state.
#pragma once

#include "trainer/models/net_model.hpp"

namespace dlsweep::trainer::models {

class ResNet final : public NetModel {
 public:
  /// `blocks` per stage (1: ResNet-8, 3: ResNet-20). Throws std::invalid_argument for an
  /// input smaller than 4x4 or blocks < 1.
  ResNet(kernels::Kernels& backend, int blocks, kernels::Shape input, std::int64_t classes, std::uint64_t seed,
         kernels::Precision precision = kernels::Precision::fp32);
  std::string_view name() const override { return name_; }
  /// Weight layers: 6·blocks + 2 (the shortcut projections are not counted, as in the paper).
  int depth() const { return 6 * blocks_ + 2; }

 private:
  int blocks_;
  std::string name_;
};

}  // namespace dlsweep::trainer::models
