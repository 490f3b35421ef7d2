// sgd.hpp — SGD with momentum (docs/math.md#sgd-with-momentum, #momentum-correction).
// With momentum_correction (default) it is the PyTorch form:
//     d = g + wd·w            (wd = 0 on biases unless decay_biases)
//     v = m·v + d             (v starts at 0, so the first v is d)
//     w -= lr·v               or, Nesterov:  w -= lr·(d + m·v)
// Because the LR multiplies v only when applied, this form IS Goyal et al.'s form
// (u = m·u + lr·d, w -= u) with the momentum correction u ← u·lr_t/lr_{t-1} on every LR
// change. Without momentum_correction the velocity keeps the LR it was accumulated with:
//     u = m·u + lr·d;  w -= u    or, Nesterov:  w -= m·u + lr·d
// (Goyal's uncorrected form; identical to the above while the LR is constant).
// One fused pass per tensor reads w, g, v and writes w, v.
#pragma once

#include "trainer/kernels/matrix.hpp"
#include "trainer/optim/optimizer.hpp"

namespace dlsweep::trainer::optim {

class Sgd final : public TensorOptimizer {
 public:
  Sgd(models::ParameterSet& params, double momentum, bool nesterov, double weight_decay, bool decay_biases,
      bool momentum_correction = true);
  std::string_view name() const override { return "sgd"; }
  std::vector<std::span<float>> state_arenas() override;
  /// The velocity arena (laid out like the parameters), for tests.
  const float* velocity() const { return velocity_.data(); }

 private:
  void update(std::size_t i, std::int64_t begin, std::int64_t end, double lr, double prev_lr,
              std::int64_t count) override;
  float momentum_;
  bool nesterov_, correction_;
  kernels::AlignedBuffer velocity_;
};

/// The momentum update of one contiguous slice, shared by SGD and LARC (which feeds it its
/// trust ratio as g_scale: d = g_scale·(g + wd·w)). `corrected`: the PyTorch form above; otherwise the
/// uncorrected Goyal form. Computes the same IEEE float expression element by element for any
/// ISA clone and thread split.
void momentum_slice(float* w, const float* g, float* v, std::int64_t n, float lr, float m, float wd, float g_scale,
                    bool nesterov, bool corrected);

}  // namespace dlsweep::trainer::optim
