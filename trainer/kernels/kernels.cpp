// kernels.cpp — what every compute backend shares by default: host optimizers.
#include "trainer/kernels/kernels.hpp"

#include "trainer/optim/optimizer.hpp"

namespace dlsweep::trainer::kernels {

Result<std::unique_ptr<optim::Optimizer>> Kernels::make_optimizer(const optim::OptimizerSpec& spec,
                                                                  models::ParameterSet& params) {
  return optim::make_optimizer(spec, params);
}

}  // namespace dlsweep::trainer::kernels
