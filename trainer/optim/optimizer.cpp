#include "trainer/optim/optimizer.hpp"

#include <omp.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trainer/optim/adam.hpp"
#include "trainer/optim/lamb.hpp"
#include "trainer/optim/larc.hpp"
#include "trainer/optim/lars.hpp"
#include "trainer/optim/sgd.hpp"
#include "trainer/optim/tensor_math.hpp"

namespace dlsweep::trainer::optim {

std::span<const std::string_view> optimizer_names() {
  static constexpr std::string_view names[] = {"sgd", "adam", "adamw", "lars", "larc", "lamb"};
  return names;
}

Result<std::unique_ptr<Optimizer>> make_optimizer(const OptimizerSpec& spec, models::ParameterSet& params) {
  const std::string& n = spec.name;
  if (n == "sgd")
    return std::unique_ptr<Optimizer>(std::make_unique<Sgd>(params, spec.momentum, spec.nesterov, spec.weight_decay,
                                                            spec.decay_biases, spec.momentum_correction));
  if (n == "adam" || n == "adamw")
    return std::unique_ptr<Optimizer>(std::make_unique<Adam>(params, n == "adamw", spec.beta1, spec.beta2,
                                                             spec.adam_eps, spec.weight_decay, spec.decay_biases));
  if (n == "lars") return std::unique_ptr<Optimizer>(std::make_unique<Lars>(params, spec));
  if (n == "larc") return std::unique_ptr<Optimizer>(std::make_unique<Larc>(params, spec));
  if (n == "lamb")
    return std::unique_ptr<Optimizer>(std::make_unique<Lamb>(params, spec.beta1, spec.beta2, spec.lamb_eps,
                                                             spec.weight_decay, spec.decay_biases));
  return fail(fmt::format("unknown optimizer '{}'", n), "optimizer",
              fmt::format("use one of: {}", fmt::join(optimizer_names(), ", ")));
}

TensorOptimizer::TensorOptimizer(models::ParameterSet& params, double weight_decay, bool decay_biases)
    : params_(params),
      weight_decay_(static_cast<float>(weight_decay)),
      decay_biases_(decay_biases),
      count_(params.tensors().size(), 0),
      last_lr_(params.tensors().size(), 0.0) {
  for (std::size_t i = 0; i < params.tensors().size(); ++i) all_.push_back(i);
}

float TensorOptimizer::wd(std::size_t i) const {
  return (params_.tensor(i).is_bias && !decay_biases_) ? 0.f : weight_decay_;
}

// Element-wise optimizers: one parallel region per call; each thread updates its slice of
// every listed tensor, so a call costs one fork/join and no barrier between tensors.
void TensorOptimizer::step(double lr, std::span<const std::size_t> tensors) {
  if (sliced()) {
    std::int64_t total = 0;
    for (std::size_t i : tensors) total += params_.tensor(i).span();
#pragma omp parallel if (total >= kParallelThreshold)
    {
      const std::int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
      for (std::size_t i : tensors) {
        std::int64_t begin = 0, end = 0;
        thread_slice(params_.tensor(i).span(), nt, t, begin, end);
        if (begin < end) update(i, begin, end, lr, last_lr_[i], count_[i] + 1);
      }
    }
  } else {
    for (std::size_t i : tensors) update(i, 0, params_.tensor(i).span(), lr, last_lr_[i], count_[i] + 1);
  }
  for (std::size_t i : tensors) {
    ++count_[i];
    last_lr_[i] = lr;
  }
}

std::vector<double> TensorOptimizer::state_scalars() const {
  std::vector<double> s;
  for (auto c : count_) s.push_back(static_cast<double>(c));
  s.insert(s.end(), last_lr_.begin(), last_lr_.end());
  return s;
}

bool TensorOptimizer::set_state_scalars(std::span<const double> s) {
  const std::size_t n = count_.size();
  if (s.size() != 2 * n) return false;
  for (std::size_t i = 0; i < n; ++i) {
    count_[i] = static_cast<std::int64_t>(s[i]);
    last_lr_[i] = s[n + i];
  }
  return true;
}

}  // namespace dlsweep::trainer::optim
