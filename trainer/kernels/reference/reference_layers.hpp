// reference_layers.hpp — the plain-loop definition of every layer of net_graph.hpp besides
// the dense layer (reference_math.hpp): convolution, max and global average pooling, batch
// normalisation, ReLU, addition. Templated on the scalar so tests run them in double against
// finite differences, and ReferenceKernels runs them in float against oneDNN.
//
// Layout: an activation batch is a Mat<T> [n, c·h·w] — one row per sample, NCHW order within
// the row, row stride ld (padding never written). Every sum accumulates in double. Backward
// functions OVERWRITE their outputs (dx, dw, ...); a ReLU fused into a layer is undone first
// by zeroing dy in place where the layer's output is not > 0 (as the dense layer does).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "trainer/kernels/net_graph.hpp"
#include "trainer/kernels/reference/reference_math.hpp"

namespace dlsweep::trainer::kernels::ref {

/// dy ⊙= [y > 0] over the first `cols` columns of each row.
template <class T>
void relu_mask(Mat<T> y, Mat<T> dy) {
  for (std::int64_t r = 0; r < y.rows; ++r)
    for (std::int64_t c = 0; c < y.cols; ++c)
      if (!(y.at(r, c) > 0)) dy.at(r, c) = 0;
}

/// y = act(conv(x, w) + b). w is [out, in·k·k] (OIHW rows); b may be null.
template <class T>
void conv_forward(Mat<T> x, Shape in, Mat<T> w, const T* b, const ConvSpec& s, Mat<T> y, Shape out) {
  const std::int64_t k = s.kernel;
  for (std::int64_t n = 0; n < x.rows; ++n)
    for (std::int64_t o = 0; o < out.c; ++o)
      for (std::int64_t oy = 0; oy < out.h; ++oy)
        for (std::int64_t ox = 0; ox < out.w; ++ox) {
          double sum = b ? static_cast<double>(b[o]) : 0.0;
          for (std::int64_t c = 0; c < in.c; ++c)
            for (std::int64_t ky = 0; ky < k; ++ky) {
              const std::int64_t iy = oy * s.stride - s.pad + ky;
              if (iy < 0 || iy >= in.h) continue;
              for (std::int64_t kx = 0; kx < k; ++kx) {
                const std::int64_t ix = ox * s.stride - s.pad + kx;
                if (ix < 0 || ix >= in.w) continue;
                sum += static_cast<double>(x.at(n, (c * in.h + iy) * in.w + ix)) * w.at(o, (c * k + ky) * k + kx);
              }
            }
          if (s.act == Activation::relu && sum < 0) sum = 0;
          y.at(n, (o * out.h + oy) * out.w + ox) = static_cast<T>(sum);
        }
}

/// The backward pass of conv_forward: masks dy by the fused ReLU (using y), then
/// dw = Σ dy ⊗ x-windows, db = Σ dy (if db), dx = transposed convolution of dy (if dx bound).
template <class T>
void conv_backward(Mat<T> x, Shape in, Mat<T> w, Mat<T> y, const ConvSpec& s, Shape out, Mat<T> dy, Mat<T> dw,
                   T* db, Mat<T> dx) {
  const std::int64_t k = s.kernel, n_rows = x.rows;
  if (s.act == Activation::relu) relu_mask(y, dy);
  // Loops over every (sample, output position, input tap) once; each gradient accumulates in
  // a double array and is rounded at the end. The arrays are reused between calls (a training
  // step allocates nothing once they have grown to the largest layer).
  static thread_local std::vector<double> gw, gb, gx;
  gw.assign(static_cast<std::size_t>(out.c * in.c * k * k), 0.0);
  gb.assign(static_cast<std::size_t>(out.c), 0.0);
  gx.assign(dx.empty() ? 0 : static_cast<std::size_t>(in.size()), 0.0);
  for (std::int64_t n = 0; n < n_rows; ++n) {
    std::fill(gx.begin(), gx.end(), 0.0);
    for (std::int64_t o = 0; o < out.c; ++o)
      for (std::int64_t oy = 0; oy < out.h; ++oy)
        for (std::int64_t ox = 0; ox < out.w; ++ox) {
          const double g = dy.at(n, (o * out.h + oy) * out.w + ox);
          gb[static_cast<std::size_t>(o)] += g;
          for (std::int64_t c = 0; c < in.c; ++c)
            for (std::int64_t ky = 0; ky < k; ++ky) {
              const std::int64_t iy = oy * s.stride - s.pad + ky;
              if (iy < 0 || iy >= in.h) continue;
              for (std::int64_t kx = 0; kx < k; ++kx) {
                const std::int64_t ix = ox * s.stride - s.pad + kx;
                if (ix < 0 || ix >= in.w) continue;
                const std::int64_t xi = (c * in.h + iy) * in.w + ix, wi = (c * k + ky) * k + kx;
                gw[static_cast<std::size_t>(o * in.c * k * k + wi)] += g * static_cast<double>(x.at(n, xi));
                if (!dx.empty()) gx[static_cast<std::size_t>(xi)] += g * static_cast<double>(w.at(o, wi));
              }
            }
        }
    if (!dx.empty())
      for (std::int64_t i = 0; i < in.size(); ++i) dx.at(n, i) = static_cast<T>(gx[static_cast<std::size_t>(i)]);
  }
  for (std::int64_t o = 0; o < out.c; ++o) {
    for (std::int64_t i = 0; i < in.c * k * k; ++i) dw.at(o, i) = static_cast<T>(gw[static_cast<std::size_t>(o * in.c * k * k + i)]);
    if (db) db[o] = static_cast<T>(gb[static_cast<std::size_t>(o)]);
  }
}

/// Max pooling; `argmax[n·out.size() + j]` receives the in-row index of the first maximal
/// input of output j (padding positions never win).
template <class T>
void max_pool_forward(Mat<T> x, Shape in, const PoolSpec& s, Mat<T> y, Shape out, std::int32_t* argmax) {
  for (std::int64_t n = 0; n < x.rows; ++n)
    for (std::int64_t c = 0; c < in.c; ++c)
      for (std::int64_t oy = 0; oy < out.h; ++oy)
        for (std::int64_t ox = 0; ox < out.w; ++ox) {
          T best = -std::numeric_limits<T>::infinity();
          std::int64_t at = -1;
          for (std::int64_t ky = 0; ky < s.kernel; ++ky)
            for (std::int64_t kx = 0; kx < s.kernel; ++kx) {
              const std::int64_t iy = oy * s.stride - s.pad + ky, ix = ox * s.stride - s.pad + kx;
              if (iy < 0 || iy >= in.h || ix < 0 || ix >= in.w) continue;
              const std::int64_t xi = (c * in.h + iy) * in.w + ix;
              if (at < 0 || x.at(n, xi) > best) {
                best = x.at(n, xi);
                at = xi;
              }
            }
          const std::int64_t yi = (c * out.h + oy) * out.w + ox;
          y.at(n, yi) = best;
          if (argmax) argmax[n * out.size() + yi] = static_cast<std::int32_t>(at);
        }
}

/// dx = 0 except dx[argmax(j)] += dy[j].
template <class T>
void max_pool_backward(Mat<T> dy, Shape in, Shape out, const std::int32_t* argmax, Mat<T> dx) {
  for (std::int64_t n = 0; n < dy.rows; ++n) {
    for (std::int64_t i = 0; i < in.size(); ++i) dx.at(n, i) = 0;
    for (std::int64_t j = 0; j < out.size(); ++j) dx.at(n, argmax[n * out.size() + j]) += dy.at(n, j);
  }
}

/// y[c] = mean of x[c, ·, ·].
template <class T>
void global_avg_pool_forward(Mat<T> x, Shape in, Mat<T> y) {
  const std::int64_t hw = in.h * in.w;
  for (std::int64_t n = 0; n < x.rows; ++n)
    for (std::int64_t c = 0; c < in.c; ++c) {
      double s = 0;
      for (std::int64_t i = 0; i < hw; ++i) s += x.at(n, c * hw + i);
      y.at(n, c) = static_cast<T>(s / static_cast<double>(hw));
    }
}

template <class T>
void global_avg_pool_backward(Mat<T> dy, Shape in, Mat<T> dx) {
  const std::int64_t hw = in.h * in.w;
  for (std::int64_t n = 0; n < dy.rows; ++n)
    for (std::int64_t c = 0; c < in.c; ++c)
      for (std::int64_t i = 0; i < hw; ++i)
        dx.at(n, c * hw + i) = static_cast<T>(static_cast<double>(dy.at(n, c)) / static_cast<double>(hw));
}

/// Training-mode batch norm: per channel, mean and biased variance over (n, h, w), then
/// y = act(scale·(x - mean)/sqrt(var + eps) + shift). Writes mean[c] and var[c].
template <class T>
void batch_norm_forward_training(Mat<T> x, Shape s, const T* scale, const T* shift, double eps, bool relu, Mat<T> y,
                                 T* mean, T* var) {
  const std::int64_t hw = s.h * s.w;
  const double m = static_cast<double>(x.rows * hw);
  for (std::int64_t c = 0; c < s.c; ++c) {
    double sum = 0;
    for (std::int64_t n = 0; n < x.rows; ++n)
      for (std::int64_t i = 0; i < hw; ++i) sum += x.at(n, c * hw + i);
    const double mu = sum / m;
    double sq = 0;
    for (std::int64_t n = 0; n < x.rows; ++n)
      for (std::int64_t i = 0; i < hw; ++i) {
        const double d = x.at(n, c * hw + i) - mu;
        sq += d * d;
      }
    const double v = sq / m, inv = 1.0 / std::sqrt(v + eps);
    mean[c] = static_cast<T>(mu);
    var[c] = static_cast<T>(v);
    for (std::int64_t n = 0; n < x.rows; ++n)
      for (std::int64_t i = 0; i < hw; ++i) {
        double o = static_cast<double>(scale[c]) * (x.at(n, c * hw + i) - mu) * inv + static_cast<double>(shift[c]);
        if (relu && o < 0) o = 0;
        y.at(n, c * hw + i) = static_cast<T>(o);
      }
  }
}

/// Evaluation-mode batch norm with the given (running) statistics.
template <class T>
void batch_norm_forward_inference(Mat<T> x, Shape s, const T* scale, const T* shift, const T* mean, const T* var,
                                  double eps, bool relu, Mat<T> y) {
  const std::int64_t hw = s.h * s.w;
  for (std::int64_t c = 0; c < s.c; ++c) {
    const double inv = 1.0 / std::sqrt(static_cast<double>(var[c]) + eps);
    for (std::int64_t n = 0; n < x.rows; ++n)
      for (std::int64_t i = 0; i < hw; ++i) {
        double o = static_cast<double>(scale[c]) * (x.at(n, c * hw + i) - static_cast<double>(mean[c])) * inv +
                   static_cast<double>(shift[c]);
        if (relu && o < 0) o = 0;
        y.at(n, c * hw + i) = static_cast<T>(o);
      }
  }
}

/// Backward of the training-mode batch norm (batch statistics depend on x):
/// with x̂ = (x - mean)·inv, dshift = Σ dy, dscale = Σ dy·x̂,
/// dx = scale·inv/m · (m·dy - dshift - x̂·dscale). A fused ReLU masks dy first (using y).
template <class T>
void batch_norm_backward(Mat<T> x, Shape s, const T* scale, const T* mean, const T* var, double eps, bool relu,
                         Mat<T> y, Mat<T> dy, Mat<T> dx, T* dscale, T* dshift) {
  const std::int64_t hw = s.h * s.w;
  const double m = static_cast<double>(x.rows * hw);
  if (relu) relu_mask(y, dy);
  for (std::int64_t c = 0; c < s.c; ++c) {
    const double mu = mean[c], inv = 1.0 / std::sqrt(static_cast<double>(var[c]) + eps);
    double sdy = 0, sdyx = 0;
    for (std::int64_t n = 0; n < x.rows; ++n)
      for (std::int64_t i = 0; i < hw; ++i) {
        const double g = dy.at(n, c * hw + i);
        sdy += g;
        sdyx += g * (x.at(n, c * hw + i) - mu) * inv;
      }
    if (dshift) dshift[c] = static_cast<T>(sdy);
    if (dscale) dscale[c] = static_cast<T>(sdyx);
    const double k = static_cast<double>(scale[c]) * inv / m;
    for (std::int64_t n = 0; n < x.rows; ++n)
      for (std::int64_t i = 0; i < hw; ++i) {
        const double xh = (x.at(n, c * hw + i) - mu) * inv;
        dx.at(n, c * hw + i) = static_cast<T>(k * (m * dy.at(n, c * hw + i) - sdy - xh * sdyx));
      }
  }
}

/// running = (1 - momentum)·running + momentum·batch; the variance enters unbiased
/// (·m/(m-1), m = values per channel), as PyTorch's BatchNorm does.
template <class T, class U>
void update_running_stats(const T* mean, const T* var, std::int64_t channels, std::int64_t m, double momentum,
                          U* running_mean, U* running_var) {
  const double unbias = m > 1 ? static_cast<double>(m) / static_cast<double>(m - 1) : 1.0;
  for (std::int64_t c = 0; c < channels; ++c) {
    running_mean[c] = static_cast<U>((1 - momentum) * running_mean[c] + momentum * mean[c]);
    running_var[c] = static_cast<U>((1 - momentum) * running_var[c] + momentum * unbias * var[c]);
  }
}

/// y = act(a + b) over `cols` columns.
template <class T>
void add_forward(Mat<T> a, Mat<T> b, Activation act, Mat<T> y) {
  for (std::int64_t r = 0; r < a.rows; ++r)
    for (std::int64_t c = 0; c < a.cols; ++c) {
      double v = static_cast<double>(a.at(r, c)) + b.at(r, c);
      if (act == Activation::relu && v < 0) v = 0;
      y.at(r, c) = static_cast<T>(v);
    }
}

template <class T>
void relu_forward(Mat<T> x, Mat<T> y) {
  for (std::int64_t r = 0; r < x.rows; ++r)
    for (std::int64_t c = 0; c < x.cols; ++c) y.at(r, c) = x.at(r, c) > 0 ? x.at(r, c) : T(0);
}

}  // namespace dlsweep::trainer::kernels::ref
