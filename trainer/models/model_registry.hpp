// model_registry.hpp — the one place that knows which models exist (params.json `model`)
// and builds them for a dataset's sample shape.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "trainer/kernels/kernels.hpp"
#include "trainer/kernels/net_graph.hpp"
#include "trainer/models/model.hpp"

namespace dlsweep::trainer::models {

struct ModelSpec {
  std::string name = "mlp";                 ///< mlp | cnn | resnet8 | resnet20
  std::vector<std::int64_t> hidden = {512, 512};  ///< mlp only
  kernels::Shape input{1, 28, 28};          ///< per-sample [c, h, w]
  std::int64_t classes = 10;
  std::uint64_t seed = 0;
  kernels::Precision precision = kernels::Precision::fp32;
  bool emulate_bf16 = false;  ///< bf16 through fp32 kernels on rounded operands even where native ones exist
  bool deterministic = true;  ///< deterministic algorithms only (GPU tensor-core nets; the others always are)
};

/// Names make_model() accepts.
std::span<const std::string_view> model_names();

/// The input a model is designed for, which synthetic data follows: 1x28x28 for mlp and cnn,
/// 3x32x32 for the ResNets.
kernels::Shape default_input_shape(std::string_view model);

/// Builds and initialises a model. Errors name the parameter (`model`) and the fix.
Result<std::unique_ptr<Model>> make_model(const ModelSpec& spec, kernels::Kernels& backend);


}  // namespace dlsweep::trainer::models
