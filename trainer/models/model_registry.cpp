#include "trainer/models/model_registry.hpp"

#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trainer/models/cnn.hpp"
#include "trainer/models/mlp.hpp"
#include "trainer/models/resnet.hpp"

namespace dlsweep::trainer::models {

namespace {
constexpr std::string_view kNames[] = {"mlp", "cnn", "resnet8", "resnet20"};
}

std::span<const std::string_view> model_names() { return kNames; }

kernels::Shape default_input_shape(std::string_view model) {
  if (model.starts_with("resnet")) return {3, 32, 32};
  return {1, 28, 28};
}

Result<std::unique_ptr<Model>> make_model(const ModelSpec& spec, kernels::Kernels& backend) {
  const kernels::Shape in = spec.input;
  std::unique_ptr<NetModel> m;
  try {
    if (spec.name == "mlp")
      m = std::make_unique<Mlp>(backend, MlpSpec{in.size(), spec.hidden, spec.classes}, spec.seed, spec.precision);
    const bool image = in.h >= 4 && in.w >= 4;
    if (!image && spec.name != "mlp")
      return fail(fmt::format("model {} needs images of at least 4x4 pixels, but the samples are [{}, {}, {}]",
                              spec.name, in.c, in.h, in.w),
                  "model", "use model mlp for flat feature vectors, or an image dataset");
    if (spec.name == "cnn") m = std::make_unique<Cnn>(backend, in, spec.classes, spec.seed, spec.precision);
    if (spec.name == "resnet8") m = std::make_unique<ResNet>(backend, 1, in, spec.classes, spec.seed, spec.precision);
    if (spec.name == "resnet20") m = std::make_unique<ResNet>(backend, 3, in, spec.classes, spec.seed, spec.precision);
  } catch (const std::invalid_argument& e) {
    return fail(fmt::format("cannot build model {}: {}", spec.name, e.what()), "model",
                "check the model's parameters against the dataset's sample shape");
  }
  if (!m)
    return fail(fmt::format("unknown model '{}'", spec.name), "model",
                fmt::format("use one of: {}", fmt::join(model_names(), ", ")));
  m->set_emulate_bf16(spec.emulate_bf16);
  m->set_deterministic(spec.deterministic);
  return std::unique_ptr<Model>(std::move(m));
}

}  // namespace dlsweep::trainer::models
