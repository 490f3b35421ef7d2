#include "trainer/optim/optimizer.hpp"

#include <fmt/format.h>

#include "trainer/optim/sgd.hpp"

namespace dlsweep::trainer::optim {

Result<std::unique_ptr<Optimizer>> make_optimizer(const OptimizerSpec& spec, models::ParameterSet& params) {
  if (spec.name == "sgd")
    return std::unique_ptr<Optimizer>(
        std::make_unique<Sgd>(params, spec.momentum, spec.nesterov, spec.weight_decay, spec.decay_biases));
  return fail(fmt::format("unknown optimizer '{}'", spec.name), "optimizer", "use one of: sgd");
}

}  // namespace dlsweep::trainer::optim
