#include "trainer/kernels/cuda/cuda_optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "trainer/kernels/cuda/cuda_memory.hpp"
#include "trainer/kernels/cuda/device_kernels.hpp"

namespace dlsweep::trainer::kernels::cuda {

namespace {

class CudaOptimizer final : public optim::Optimizer {
 public:
  CudaOptimizer(const optim::OptimizerSpec& spec, models::ParameterSet& params, cudaStream_t stream)
      : spec_(spec), params_(params), stream_(stream) {
    const auto ts = params.tensors();
    count_.assign(ts.size(), 0);
    last_lr_.assign(ts.size(), 0.0);
    kernels::Memory& mem = params.memory();
    s1_ = mem.allocate(params.arena_size());
    if (adam()) s2_ = mem.allocate(params.arena_size());
    for (const auto& t : ts) max_n_ = std::max(max_n_, t.span());
    host_.resize(ts.size());
    check(cudaMalloc(reinterpret_cast<void**>(&dev_), std::max<std::size_t>(1, ts.size()) * sizeof(MtTensor)),
          "cudaMalloc (optimizer)");
    if (spec.name == "lars" || spec.name == "larc" || spec.name == "lamb") {
      check(cudaMalloc(reinterpret_cast<void**>(&partials_),
                       std::max<std::size_t>(1, 2 * lars_blocks_per_tensor * ts.size()) * sizeof(double)),
            "cudaMalloc (lars)");
      check(cudaMalloc(reinterpret_cast<void**>(&rates_), std::max<std::size_t>(1, 2 * ts.size()) * sizeof(float)),
            "cudaMalloc (lars)");
    }
  }
  ~CudaOptimizer() override {
    cudaStreamSynchronize(stream_);
    cudaFree(dev_);
    cudaFree(partials_);
    cudaFree(rates_);
  }

  std::string_view name() const override { return spec_.name; }
  void step(double lr) override {
    const auto ts = params_.tensors();
    for (std::size_t i = 0; i < ts.size(); ++i) {
      const auto& t = ts[i];
      MtTensor& m = host_[i];
      const double prev = last_lr_[i];
      const std::int64_t count = count_[i] + 1;
      m.w = params_.values() + t.offset;
      m.g = params_.grads() + t.offset;
      m.s1 = s1_.data() + t.offset;
      m.s2 = adam() ? s2_.data() + t.offset : nullptr;
      m.n = t.span();
      m.wd = t.is_bias && !spec_.decay_biases ? 0.0f : static_cast<float>(spec_.weight_decay);
      m.lr = lr;
      const double m_eff = spec_.momentum_correction && prev > 0 ? spec_.momentum * (lr / prev) : spec_.momentum;
      m.m_eff = static_cast<float>(m_eff);
      m.c1 = static_cast<float>(1.0 / (1.0 - std::pow(spec_.beta1, static_cast<double>(count))));
      m.c2 = static_cast<float>(1.0 / (1.0 - std::pow(spec_.beta2, static_cast<double>(count))));
      m.trust = spec_.lars_exclude_bias_norm && t.is_bias ? 0 : 1;
    }
    // From pageable memory: the copy has read host_ when the call returns, so host_ may be
    // rewritten by the next step while this one's kernels still wait in the stream.
    check(cudaMemcpyAsync(dev_, host_.data(), host_.size() * sizeof(MtTensor), cudaMemcpyHostToDevice, stream_),
          "optimizer tensors");
    const int T = static_cast<int>(host_.size());
    cudaError_t e = cudaSuccess;
    if (spec_.name == "sgd")
      e = sgd_multi(dev_, T, max_n_, static_cast<float>(spec_.momentum), spec_.nesterov, spec_.momentum_correction,
                    stream_);
    else if (spec_.name == "adam" || spec_.name == "adamw")
      e = adam_multi(dev_, T, max_n_, static_cast<float>(spec_.beta1), static_cast<float>(spec_.beta2),
                     static_cast<float>(spec_.adam_eps), spec_.name == "adamw", stream_);
    else if (spec_.name == "lars")
      e = lars_multi(dev_, T, max_n_, static_cast<float>(spec_.momentum), spec_.lars_trust, spec_.lars_eps,
                     spec_.nesterov, partials_, rates_, stream_);
    else if (spec_.name == "larc")
      e = larc_multi(dev_, T, max_n_, static_cast<float>(spec_.momentum), spec_.larc_trust, spec_.larc_eps,
                     spec_.larc_clip, spec_.nesterov, spec_.momentum_correction, partials_, rates_, stream_);
    else
      e = lamb_multi(dev_, T, max_n_, static_cast<float>(spec_.beta1), static_cast<float>(spec_.beta2),
                     static_cast<float>(spec_.lamb_eps), partials_, rates_, stream_);
    check(e, "optimizer step");
    for (std::size_t i = 0; i < ts.size(); ++i) {
      ++count_[i];
      last_lr_[i] = lr;
    }
  }
  void step(double lr, std::span<const std::size_t>) override { step(lr); }
  bool supports_partial_step() const override { return false; }  // one launch for all tensors
  std::vector<std::span<float>> state_arenas() override {
    if (adam()) return {s1_.span(), s2_.span()};
    return {s1_.span()};
  }
  std::vector<double> state_scalars() const override {
    std::vector<double> s;
    for (auto c : count_) s.push_back(static_cast<double>(c));
    s.insert(s.end(), last_lr_.begin(), last_lr_.end());
    return s;
  }
  bool set_state_scalars(std::span<const double> s) override {
    const std::size_t n = count_.size();
    if (s.size() != 2 * n) return false;
    for (std::size_t i = 0; i < n; ++i) {
      count_[i] = static_cast<std::int64_t>(s[i]);
      last_lr_[i] = s[n + i];
    }
    return true;
  }

 private:
  /// Two state arenas (m, v), in the CPU optimizers' order (Adam, AdamW, LAMB).
  bool adam() const { return spec_.name == "adam" || spec_.name == "adamw" || spec_.name == "lamb"; }
  optim::OptimizerSpec spec_;
  models::ParameterSet& params_;
  cudaStream_t stream_;
  kernels::DeviceArray s1_, s2_;
  std::vector<std::int64_t> count_;
  std::vector<double> last_lr_;
  std::vector<MtTensor> host_;
  std::int64_t max_n_ = 0;
  MtTensor* dev_ = nullptr;
  double* partials_ = nullptr;
  float* rates_ = nullptr;
};

}  // namespace

Result<std::unique_ptr<optim::Optimizer>> make_cuda_optimizer(const optim::OptimizerSpec& spec,
                                                              models::ParameterSet& params, cudaStream_t stream) {
  const std::string& n = spec.name;
  if (n == "sgd" || n == "adam" || n == "adamw" || n == "lars" || n == "larc" || n == "lamb")
    return std::unique_ptr<optim::Optimizer>(std::make_unique<CudaOptimizer>(spec, params, stream));
  return fail(fmt::format("unknown optimizer '{}'", n), "optimizer", "use one of: sgd, adam, adamw, lars, larc, lamb");
}

}  // namespace dlsweep::trainer::kernels::cuda
