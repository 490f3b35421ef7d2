// reference_math.hpp — the plain-loop definition of every kernel in kernels.hpp, templated
// on the scalar so tests can run it in double precision against finite differences and
// ReferenceKernels can run it in float against the optimised backends.
//
// These loops ARE the specification: each is the textbook formula written out, accumulating
// in double, with no blocking or vectorisation. Padding columns are never written.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "trainer/kernels/kernels.hpp"

namespace dlsweep::trainer::kernels::ref {

/// A row-major strided matrix of T (MatrixView for any scalar).
template <class T>
struct Mat {
  T* data = nullptr;
  std::int64_t rows = 0, cols = 0, ld = 0;
  T& at(std::int64_t r, std::int64_t c) const { return data[r * ld + c]; }
  bool empty() const { return data == nullptr; }
};

inline Mat<float> mat(MatrixView v) { return {v.data, v.rows, v.cols, v.ld}; }

/// y = act(x·w + b).
template <class T>
void dense_forward(Mat<T> x, Mat<T> w, const T* b, Activation act, Mat<T> y) {
  for (std::int64_t r = 0; r < x.rows; ++r)
    for (std::int64_t o = 0; o < w.cols; ++o) {
      double s = b ? static_cast<double>(b[o]) : 0.0;
      for (std::int64_t i = 0; i < x.cols; ++i) s += static_cast<double>(x.at(r, i)) * w.at(i, o);
      if (act == Activation::relu && s < 0) s = 0;
      y.at(r, o) = static_cast<T>(s);
    }
}

/// dz = dy ⊙ act'(y) written over dy; dw = xᵀ·dz; db = Σ_rows dz; dx = dz·wᵀ if dx is bound.
/// ReLU's derivative is taken as 1 where y > 0 and 0 elsewhere (as oneDNN's use_dst variant).
template <class T>
void dense_backward(Mat<T> x, Mat<T> w, Mat<T> y, Activation act, Mat<T> dy, Mat<T> dw, T* db, Mat<T> dx) {
  const std::int64_t n = x.rows, in = x.cols, out = w.cols;
  if (act == Activation::relu)
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t o = 0; o < out; ++o)
        if (!(y.at(r, o) > 0)) dy.at(r, o) = 0;
  for (std::int64_t i = 0; i < in; ++i)
    for (std::int64_t o = 0; o < out; ++o) {
      double s = 0;
      for (std::int64_t r = 0; r < n; ++r) s += static_cast<double>(x.at(r, i)) * dy.at(r, o);
      dw.at(i, o) = static_cast<T>(s);
    }
  for (std::int64_t o = 0; o < out; ++o) {
    double s = 0;
    for (std::int64_t r = 0; r < n; ++r) s += dy.at(r, o);
    db[o] = static_cast<T>(s);
  }
  if (dx.empty()) return;
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t i = 0; i < in; ++i) {
      double s = 0;
      for (std::int64_t o = 0; o < out; ++o) s += static_cast<double>(dy.at(r, o)) * w.at(i, o);
      dx.at(r, i) = static_cast<T>(s);
    }
}

/// Softmax + cross-entropy; see kernels.hpp for the contract. Uses the max-shifted
/// log-sum-exp so large logits stay finite; a non-finite logit gives a non-finite loss.
template <class T>
LossStats softmax_cross_entropy(Mat<T> logits, const std::int32_t* labels, double grad_scale, Mat<T> dlogits) {
  LossStats st;
  const std::int64_t k = logits.cols;
  for (std::int64_t r = 0; r < logits.rows; ++r) {
    double mx = -std::numeric_limits<double>::infinity();
    std::int64_t arg = 0;
    for (std::int64_t c = 0; c < k; ++c)
      if (static_cast<double>(logits.at(r, c)) > mx) {
        mx = logits.at(r, c);
        arg = c;
      }
    double z = 0;
    for (std::int64_t c = 0; c < k; ++c) z += std::exp(static_cast<double>(logits.at(r, c)) - mx);
    const double lse = mx + std::log(z);
    const std::int32_t label = labels[r];
    st.loss_sum += lse - static_cast<double>(logits.at(r, label));
    if (arg == label) ++st.correct;
    if (dlogits.empty()) continue;
    for (std::int64_t c = 0; c < k; ++c) {
      double p = std::exp(static_cast<double>(logits.at(r, c)) - lse);
      dlogits.at(r, c) = static_cast<T>((p - (c == label ? 1.0 : 0.0)) * grad_scale);
    }
  }
  return st;
}

}  // namespace dlsweep::trainer::kernels::ref
