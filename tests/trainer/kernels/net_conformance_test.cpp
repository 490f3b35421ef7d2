// Every backend's compiled nets (net.hpp) against the double-precision reference layers:
// one layer at a time (forward, input gradient, parameter gradients, replay determinism),
// in the layouts oneDNN picks for realistic channel counts, plus multi-layer graphs where
// layouts flow between layers (conv → pool → dense, residual blocks with batch norm) compared
// between backends, in fp32 and in bf16.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "trainer/kernels/kernels_registry.hpp"
#include "trainer/kernels/net.hpp"
#include "trainer/kernels/reference/reference_layers.hpp"
#include "trainer/rng.hpp"

using namespace dlsweep::trainer;
using namespace dlsweep::trainer::kernels;

namespace {

/// A float buffer with a double copy for the reference math.
struct Vec {
  AlignedBuffer buf;
  MatrixView v;
  Vec(std::int64_t rows, std::int64_t cols) : buf(make_matrix_buffer(rows, cols)) { v = buf.view(rows, cols, padded_ld(cols)); }
  void randomize(SplitMix64& rng, double scale) {
    for (std::int64_t r = 0; r < v.rows; ++r)
      for (std::int64_t c = 0; c < v.cols; ++c) v.at(r, c) = static_cast<float>(scale * (2 * rng.uniform() - 1));
  }
  void fill(float x) {
    for (std::int64_t r = 0; r < v.rows; ++r)
      for (std::int64_t c = 0; c < v.cols; ++c) v.at(r, c) = x;
  }
};

std::vector<double> to_double(MatrixView m) {
  std::vector<double> d(static_cast<std::size_t>(m.rows * m.cols));
  for (std::int64_t r = 0; r < m.rows; ++r)
    for (std::int64_t c = 0; c < m.cols; ++c) d[static_cast<std::size_t>(r * m.cols + c)] = m.at(r, c);
  return d;
}
ref::Mat<double> dmat(std::vector<double>& d, std::int64_t rows, std::int64_t cols) { return {d.data(), rows, cols, cols}; }

void require_close(MatrixView got, const std::vector<double>& want, double tol, const char* what) {
  double worst = 0;
  for (std::int64_t r = 0; r < got.rows; ++r)
    for (std::int64_t c = 0; c < got.cols; ++c) {
      const double w = want[static_cast<std::size_t>(r * got.cols + c)];
      worst = std::max(worst, std::abs(got.at(r, c) - w) / (1.0 + std::abs(w)));
    }
  for (std::int64_t r = 0; r < got.rows; ++r)
    for (std::int64_t c = got.cols; c < got.ld; ++c) {
      INFO(what << ": padding must stay zero");
      REQUIRE(got.at(r, c) == 0.0f);
    }
  INFO(what << ": worst relative error " << worst);
  REQUIRE(worst <= tol);
}

std::vector<float> snapshot(MatrixView m) { return std::vector<float>(m.data, m.data + m.span()); }

/// One layer on `input_shape`: builds the net, runs forward and backward from random data,
/// returns the net (for output/grad views) after checking replay is bit-identical.
struct OneLayer {
  std::unique_ptr<Net> net;
  std::vector<double> x, dy;  ///< the inputs used, in double
};

OneLayer run_one(Kernels& k, const NetGraph& g, std::int64_t n, std::uint64_t seed, std::vector<float*> grads,
                 std::vector<std::int64_t> grad_sizes) {
  OneLayer o;
  o.net = k.make_net(g, {n, true, Precision::fp32, true});
  SplitMix64 rng(seed);
  MatrixView in = o.net->input();
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < in.cols; ++c) in.at(r, c) = static_cast<float>(2 * rng.uniform() - 1);
  o.x = to_double(in);
  o.net->forward();
  MatrixView dy = o.net->output_grad();
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < dy.cols; ++c) dy.at(r, c) = static_cast<float>(2 * rng.uniform() - 1);
  o.dy = to_double(dy);
  const auto dy_saved = snapshot(dy);
  o.net->backward();
  // Replaying gives the same bits (the output gradient is restored: backward may use it in place).
  const auto out1 = snapshot(o.net->output()), dx1 = snapshot(o.net->input_grad());
  std::vector<std::vector<float>> g1;
  for (std::size_t i = 0; i < grads.size(); ++i) g1.emplace_back(grads[i], grads[i] + grad_sizes[i]);
  o.net->forward();
  std::copy(dy_saved.begin(), dy_saved.end(), dy.data);
  o.net->backward();
  REQUIRE(snapshot(o.net->output()) == out1);
  REQUIRE(snapshot(o.net->input_grad()) == dx1);
  for (std::size_t i = 0; i < grads.size(); ++i) REQUIRE(std::vector<float>(grads[i], grads[i] + grad_sizes[i]) == g1[i]);
  std::copy(dy_saved.begin(), dy_saved.end(), dy.data);
  return o;
}

void check_conv(Kernels& k, std::int64_t n, Shape in, ConvSpec spec, bool bias) {
  INFO(k.name() << " conv " << in.c << "x" << in.h << "x" << in.w << " -> " << spec.out_channels << " k" << spec.kernel
                << " s" << spec.stride << " p" << spec.pad << " relu " << (spec.act == Activation::relu) << " bias " << bias);
  const std::int64_t kk = in.c * spec.kernel * spec.kernel;
  Vec w(spec.out_channels, kk), dw(spec.out_channels, kk), b(1, spec.out_channels), db(1, spec.out_channels);
  SplitMix64 rng(static_cast<std::uint64_t>(kk + spec.out_channels));
  w.randomize(rng, 1.0 / std::sqrt(static_cast<double>(kk)));
  b.randomize(rng, 0.1);
  NetGraph g;
  auto x = g.input(in);
  ConvParams p{w.v, dw.v, bias ? b.v.data : nullptr, bias ? db.v.data : nullptr};
  g.conv(x, spec, p, 0);
  const Shape out = g.node(1).shape;
  auto o = run_one(k, g, n, 99, {dw.v.data, db.v.data}, {dw.v.span(), db.v.span()});

  auto wd = to_double(w.v), bd = to_double(b.v);
  std::vector<double> y(static_cast<std::size_t>(n * out.size())), dwd(wd.size()), dbd(bd.size()),
      dx(static_cast<std::size_t>(n * in.size()));
  ref::conv_forward<double>(dmat(o.x, n, in.size()), in, dmat(wd, spec.out_channels, kk), bias ? bd.data() : nullptr,
                            spec, dmat(y, n, out.size()), out);
  require_close(o.net->output(), y, 1e-5, "y");
  // Backward from the backend's own output (the ReLU mask depends on it).
  auto yb = to_double(o.net->output());
  ref::conv_backward<double>(dmat(o.x, n, in.size()), in, dmat(wd, spec.out_channels, kk), dmat(yb, n, out.size()),
                             spec, out, dmat(o.dy, n, out.size()), dmat(dwd, spec.out_channels, kk),
                             bias ? dbd.data() : nullptr, dmat(dx, n, in.size()));
  require_close(o.net->input_grad(), dx, 1e-5, "dx");
  require_close(dw.v, dwd, 1e-4, "dw");
  if (bias) require_close(db.v, dbd, 1e-4, "db");
}

}  // namespace

TEST_CASE("every backend's convolution matches the reference", "[kernels][conformance]") {
  for (const auto& name : available_kernels()) {
    auto k = make_kernels(name);
    REQUIRE(k);
    check_conv(**k, 3, {3, 8, 8}, {16, 3, 1, 1, Activation::relu}, true);    // first layer: plain source
    check_conv(**k, 2, {16, 6, 6}, {16, 3, 1, 1, Activation::none}, false);  // blocked in and out
    check_conv(**k, 2, {16, 7, 7}, {32, 3, 2, 1, Activation::none}, false);  // stride 2, odd size
    check_conv(**k, 2, {16, 8, 8}, {32, 1, 2, 0, Activation::none}, false);  // 1x1 projection
    check_conv(**k, 2, {1, 9, 9}, {32, 5, 1, 2, Activation::relu}, true);    // the CNN's conv1
    check_conv(**k, 2, {32, 5, 5}, {64, 5, 1, 2, Activation::relu}, true);   // the CNN's conv2
  }
}

TEST_CASE("every backend's pooling matches the reference", "[kernels][conformance]") {
  for (const auto& name : available_kernels()) {
    auto k = make_kernels(name);
    REQUIRE(k);
    for (auto spec : {PoolSpec{PoolSpec::Kind::max, 2, 2, 0}, PoolSpec{PoolSpec::Kind::max, 3, 2, 1},
                      PoolSpec{PoolSpec::Kind::global_avg}}) {
      INFO(name << " pool kind " << static_cast<int>(spec.kind) << " k" << spec.kernel << " p" << spec.pad);
      const Shape in{8, 7, 7};
      const std::int64_t n = 3;
      NetGraph g;
      g.pool(g.input(in), spec);
      const Shape out = g.node(1).shape;
      auto o = run_one(**k, g, n, 5, {}, {});
      std::vector<double> y(static_cast<std::size_t>(n * out.size())), dx(static_cast<std::size_t>(n * in.size()));
      std::vector<std::int32_t> argmax(static_cast<std::size_t>(n * out.size()));
      if (spec.kind == PoolSpec::Kind::max) {
        ref::max_pool_forward<double>(dmat(o.x, n, in.size()), in, spec, dmat(y, n, out.size()), out, argmax.data());
        ref::max_pool_backward<double>(dmat(o.dy, n, out.size()), in, out, argmax.data(), dmat(dx, n, in.size()));
      } else {
        ref::global_avg_pool_forward<double>(dmat(o.x, n, in.size()), in, dmat(y, n, out.size()));
        ref::global_avg_pool_backward<double>(dmat(o.dy, n, out.size()), in, dmat(dx, n, in.size()));
      }
      require_close(o.net->output(), y, 1e-6, "y");
      require_close(o.net->input_grad(), dx, 1e-6, "dx");
    }
  }
}

TEST_CASE("every backend's batch norm matches the reference, running statistics included", "[kernels][conformance]") {
  for (const auto& name : available_kernels()) {
    auto k = make_kernels(name);
    REQUIRE(k);
    for (bool relu : {false, true}) {
      INFO(name << " batch norm relu " << relu);
      const Shape s{16, 5, 5};
      const std::int64_t n = 4;
      Vec scale(1, 16), shift(1, 16), dscale(1, 16), dshift(1, 16), rmean(1, 16), rvar(1, 16);
      SplitMix64 rng(relu ? 1 : 2);
      scale.randomize(rng, 1.0);
      shift.randomize(rng, 0.5);
      rvar.fill(1.0f);
      NetGraph g;
      g.batch_norm(g.input(s), {1e-5, 0.1, relu},
                   {scale.v.data, shift.v.data, dscale.v.data, dshift.v.data, rmean.v.data, rvar.v.data}, 0);
      auto o = run_one(**k, g, n, 8, {dscale.v.data, dshift.v.data}, {16, 16});
      auto sc = to_double(scale.v), sh = to_double(shift.v);
      std::vector<double> y(static_cast<std::size_t>(n * s.size())), dx(y.size()), mean(16), var(16), ds(16), dsh(16);
      ref::batch_norm_forward_training<double>(dmat(o.x, n, s.size()), s, sc.data(), sh.data(), 1e-5, relu,
                                               dmat(y, n, s.size()), mean.data(), var.data());
      require_close(o.net->output(), y, 1e-5, "y");
      auto yb = to_double(o.net->output());
      ref::batch_norm_backward<double>(dmat(o.x, n, s.size()), s, sc.data(), mean.data(), var.data(), 1e-5, relu,
                                       dmat(yb, n, s.size()), dmat(o.dy, n, s.size()), dmat(dx, n, s.size()), ds.data(),
                                       dsh.data());
      require_close(o.net->input_grad(), dx, 1e-4, "dx");
      require_close(dscale.v, ds, 1e-4, "dscale");
      require_close(dshift.v, dsh, 1e-4, "dshift");
      // run_one ran forward twice from the same input: the running statistics moved twice.
      std::vector<double> rm(16, 0.0), rv(16, 1.0);
      for (int i = 0; i < 2; ++i) ref::update_running_stats(mean.data(), var.data(), 16, n * 25, 0.1, rm.data(), rv.data());
      require_close(rmean.v, rm, 1e-5, "running_mean");
      require_close(rvar.v, rv, 1e-5, "running_var");

      // Evaluation mode normalises with the running statistics and leaves them alone.
      auto eval = (*k)->make_net(g, {n, false, Precision::fp32, false});
      MatrixView in = eval->input();
      for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < s.size(); ++c) in.at(r, c) = static_cast<float>(o.x[static_cast<std::size_t>(r * s.size() + c)]);
      eval->forward();
      std::vector<double> ye(y.size());
      auto rmd = to_double(rmean.v), rvd = to_double(rvar.v);
      ref::batch_norm_forward_inference<double>(dmat(o.x, n, s.size()), s, sc.data(), sh.data(), rmd.data(), rvd.data(),
                                                1e-5, relu, dmat(ye, n, s.size()));
      require_close(eval->output(), ye, 1e-5, "eval y");
      require_close(rmean.v, rm, 1e-5, "running_mean after eval");
    }
  }
}

TEST_CASE("every backend's dense layer on an image input flattens in NCHW order", "[kernels][conformance]") {
  for (const auto& name : available_kernels()) {
    auto k = make_kernels(name);
    REQUIRE(k);
    INFO(name);
    const Shape in{8, 3, 3};
    const std::int64_t n = 5;
    Vec w(72, 6), dw(72, 6), b(1, 6), db(1, 6);
    SplitMix64 rng(4);
    w.randomize(rng, 0.3);
    b.randomize(rng, 0.1);
    NetGraph g;
    g.relu(g.dense(g.relu(g.input(in)), 6, Activation::none, {w.v, dw.v, b.v.data, db.v.data}, 0));
    auto o = run_one(**k, g, n, 6, {dw.v.data, db.v.data}, {dw.v.span(), db.v.span()});
    std::vector<double> xr(o.x.size()), y(static_cast<std::size_t>(n * 6)), dwd(static_cast<std::size_t>(72 * 6)), dbd(6),
        dxr(o.x.size());
    for (std::size_t i = 0; i < o.x.size(); ++i) xr[i] = std::max(0.0, o.x[i]);
    auto wd = to_double(w.v), bd = to_double(b.v);
    ref::dense_forward<double>(dmat(xr, n, 72), dmat(wd, 72, 6), bd.data(), Activation::relu, dmat(y, n, 6));
    require_close(o.net->output(), y, 1e-5, "y");
    auto yb = to_double(o.net->output());
    ref::dense_backward<double>(dmat(xr, n, 72), dmat(wd, 72, 6), dmat(yb, n, 6), Activation::relu, dmat(o.dy, n, 6),
                                dmat(dwd, 72, 6), dbd.data(), dmat(dxr, n, 72));
    for (std::size_t i = 0; i < o.x.size(); ++i)
      if (!(xr[i] > 0)) dxr[i] = 0;
    require_close(o.net->input_grad(), dxr, 1e-5, "dx");
    require_close(dw.v, dwd, 1e-5, "dw");
    require_close(db.v, dbd, 1e-5, "db");
  }
}

namespace {

/// The parameters of a small residual network, one copy per backend.
struct ResidualParams {
  std::vector<Vec> bufs;
  NetGraph g;
  Vec* add(std::int64_t rows, std::int64_t cols) {
    bufs.emplace_back(rows, cols);
    return &bufs.back();
  }
  ResidualParams() { bufs.reserve(64); }
};

/// stem conv+BN+ReLU → identity block → projection block (stride 2) → max pool → dense:
/// every op, layouts flowing between them, a tensor read by two nodes, add with ReLU.
void build_residual(ResidualParams& p, std::uint64_t seed) {
  SplitMix64 rng(seed);
  int tag = 0;
  auto conv = [&](TensorId x, std::int64_t out, std::int64_t k, std::int64_t stride, std::int64_t pad) {
    const std::int64_t kk = p.g.node(x).shape.c * k * k;
    Vec* w = p.add(out, kk);
    Vec* dw = p.add(out, kk);
    w->randomize(rng, std::sqrt(2.0 / static_cast<double>(kk)));
    return p.g.conv(x, {out, k, stride, pad, Activation::none}, {w->v, dw->v}, tag++);
  };
  auto bn = [&](TensorId x, bool relu) {
    const std::int64_t c = p.g.node(x).shape.c;
    Vec *s = p.add(1, c), *sh = p.add(1, c), *ds = p.add(1, c), *dsh = p.add(1, c), *m = p.add(1, c), *v = p.add(1, c);
    s->randomize(rng, 1.0);
    for (std::int64_t i = 0; i < c; ++i) s->v.data[i] += 1.0f;
    sh->randomize(rng, 0.2);
    v->fill(1.0f);
    return p.g.batch_norm(x, {1e-5, 0.1, relu}, {s->v.data, sh->v.data, ds->v.data, dsh->v.data, m->v.data, v->v.data}, tag++);
  };
  TensorId x = p.g.input({3, 8, 8});
  x = bn(conv(x, 16, 3, 1, 1), true);
  TensorId y = bn(conv(bn(conv(x, 16, 3, 1, 1), true), 16, 3, 1, 1), false);
  x = p.g.add(y, x, Activation::relu);
  y = bn(conv(bn(conv(x, 32, 3, 2, 1), true), 32, 3, 1, 1), false);
  x = p.g.add(y, bn(conv(x, 32, 1, 2, 0), false), Activation::relu);
  x = p.g.pool(x, {PoolSpec::Kind::max, 2, 2, 0});
  Vec *w = p.add(32 * 4, 10), *dw = p.add(32 * 4, 10), *b = p.add(1, 10), *db = p.add(1, 10);
  w->randomize(rng, 0.1);
  p.g.dense(x, 10, Activation::none, {w->v, dw->v, b->v.data, db->v.data}, tag++);
}

struct ResidualRun {
  std::vector<float> out, dx;
  std::vector<std::vector<float>> bufs;  ///< every parameter/gradient/statistics buffer afterwards
  std::vector<int> ready;
};

ResidualRun run_residual(Kernels& k, Precision precision, std::int64_t n) {
  ResidualParams p;
  build_residual(p, 21);
  auto net = k.make_net(p.g, {n, true, precision, true});
  SplitMix64 rng(3);
  MatrixView in = net->input();
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < in.cols; ++c) in.at(r, c) = static_cast<float>(2 * rng.uniform() - 1);
  net->forward();
  MatrixView dy = net->output_grad();
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < dy.cols; ++c) dy.at(r, c) = static_cast<float>(2 * rng.uniform() - 1);
  ResidualRun run;
  net->backward([&](int tag) { run.ready.push_back(tag); });
  MatrixView o = net->output(), dx = net->input_grad();
  for (std::int64_t r = 0; r < n; ++r) {
    run.out.insert(run.out.end(), o.row(r), o.row(r) + o.cols);
    run.dx.insert(run.dx.end(), dx.row(r), dx.row(r) + dx.cols);
  }
  for (auto& b : p.bufs) run.bufs.push_back(snapshot(b.v));
  return run;
}

double worst_relative(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0, scale = 0;
  for (float v : b) scale = std::max(scale, static_cast<double>(std::abs(v)));
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]) / (1e-3 + scale));
  return worst;
}

}  // namespace

TEST_CASE("a residual network with batch norm agrees between backends", "[kernels][conformance]") {
  auto ref_k = make_kernels("reference");
  auto dnn_k = make_kernels("onednn");
  REQUIRE(ref_k);
  REQUIRE(dnn_k);
  for (Precision prec : {Precision::fp32, Precision::bf16}) {
    const bool bf16 = prec == Precision::bf16;
    INFO("precision " << (bf16 ? "bf16" : "fp32"));
    auto a = run_residual(**ref_k, prec, 6);
    auto b = run_residual(**dnn_k, prec, 6);
    // bf16 rounding of values that differ in their last fp32 bits can land one bf16 step apart.
    const double tol = bf16 ? 3e-2 : 1e-4;
    CHECK(worst_relative(b.out, a.out) < tol);
    CHECK(worst_relative(b.dx, a.dx) < tol);
    REQUIRE(a.bufs.size() == b.bufs.size());
    for (std::size_t i = 0; i < a.bufs.size(); ++i) {
      INFO("buffer " << i);
      CHECK(worst_relative(b.bufs[i], a.bufs[i]) < tol);
    }
    // Layers report their gradients in reverse order, each once.
    REQUIRE(a.ready.size() == 13);
    CHECK(a.ready == b.ready);
    CHECK(std::is_sorted(a.ready.rbegin(), a.ready.rend()));
    CHECK(a.ready.front() == 12);
    CHECK(a.ready.back() == 0);
  }
  // bf16 changes the numbers, but not by much.
  auto f = run_residual(**dnn_k, Precision::fp32, 6), h = run_residual(**dnn_k, Precision::bf16, 6);
  CHECK(f.out != h.out);
  CHECK(worst_relative(h.out, f.out) < 5e-2);
}

TEST_CASE("max pooling of blocked convolution outputs agrees between backends, odd sizes too", "[kernels][conformance]") {
  auto ref_k = make_kernels("reference");
  auto dnn_k = make_kernels("onednn");
  REQUIRE(ref_k);
  REQUIRE(dnn_k);
  for (std::int64_t side : {8, 7}) {
    INFO("input " << side << "x" << side);
    std::vector<std::vector<float>> outs, dxs, dws;
    for (Kernels* k : {ref_k->get(), dnn_k->get()}) {
      // 12 channels: the oneDNN layout pads them to 16 (two blocks of 8).
      Vec w(12, 27), dw(12, 27), b(1, 12), db(1, 12);
      SplitMix64 rng(7);
      w.randomize(rng, 0.3);
      b.randomize(rng, 0.1);
      NetGraph g;
      auto x = g.conv(g.input({3, side, side}), {12, 3, 1, 1, Activation::relu}, {w.v, dw.v, b.v.data, db.v.data}, 0);
      g.pool(x, {PoolSpec::Kind::max, 2, 2, 0});
      auto o = run_one(*k, g, 3, 11, {dw.v.data}, {dw.v.span()});
      outs.push_back(snapshot(o.net->output()));
      dxs.push_back(snapshot(o.net->input_grad()));
      dws.push_back(snapshot(dw.v));
      if (k == dnn_k->get()) {
        // What must hold on every ISA: a pooling input in a channel-blocked layout (nChw8c on
        // AVX2/SSE4.1, nChw16c on AVX-512/AMX) takes the backend's own 2x2 pooling, whose
        // backward also applies the convolution's ReLU derivative; any other layout goes to
        // oneDNN's pooling, and says which layout it got.
        std::string pool_line;
        for (const auto& line : o.net->describe())
          if (line.rfind("max_pool", 0) == 0) pool_line = line;
        INFO(pool_line);
        const bool custom8 = pool_line.find("custom:nChw8c_2x2+relu_bwd") != std::string::npos;
        const bool custom16 = pool_line.find("custom:nChw16c_2x2+relu_bwd") != std::string::npos;
        const bool fallback = pool_line.find("pool_src=") != std::string::npos;
        CHECK(custom8 + custom16 + fallback == 1);
        CHECK(pool_line.find("pool_src=nChw8c") == std::string::npos);
        CHECK(pool_line.find("pool_src=nChw16c") == std::string::npos);
      }
    }
    CHECK(worst_relative(outs[1], outs[0]) < 1e-5);
    CHECK(worst_relative(dxs[1], dxs[0]) < 1e-5);
    CHECK(worst_relative(dws[1], dws[0]) < 1e-5);
  }
}

TEST_CASE("bf16 rounding is round-to-nearest-even and the vector form agrees", "[kernels]") {
  CHECK(round_to_bf16(1.0f) == 1.0f);
  CHECK(round_to_bf16(1.0f + 0x1.0p-8f) == 1.0f);                 // halfway, even stays
  CHECK(round_to_bf16(1.0f + 3 * 0x1.0p-8f) == 1.0f + 0x1.0p-6f);  // halfway, odd rounds up
  CHECK(round_to_bf16(1.0f + 0x1.8p-8f) == 1.0f + 0x1.0p-7f);      // above halfway
  CHECK(std::isnan(round_to_bf16(std::nanf(""))));
  CHECK(std::isinf(round_to_bf16(std::numeric_limits<float>::infinity())));
  std::vector<float> v;
  SplitMix64 rng(1);
  for (int i = 0; i < 1000; ++i) v.push_back(static_cast<float>((rng.uniform() - 0.5) * std::exp(20 * (rng.uniform() - 0.5))));
  std::vector<float> w = v;
  round_to_bf16(w.data(), static_cast<std::int64_t>(w.size()));
  for (std::size_t i = 0; i < v.size(); ++i) REQUIRE(w[i] == round_to_bf16(v[i]));
}

TEST_CASE("nets reject graphs with unused nodes and misuse of modes", "[kernels]") {
  for (const auto& name : available_kernels()) {
    auto k = make_kernels(name);
    REQUIRE(k);
    NetGraph g;
    auto x = g.input({4, 3, 3});
    g.relu(x);
    g.pool(x, {PoolSpec::Kind::global_avg});
    REQUIRE_THROWS_AS((*k)->make_net(g, {2, true, Precision::fp32, false}), std::invalid_argument);
    NetGraph ok;
    ok.relu(ok.input({4, 3, 3}));
    auto eval = (*k)->make_net(ok, {2, false, Precision::fp32, false});
    eval->forward();
    REQUIRE_THROWS(eval->backward());
    REQUIRE_THROWS(eval->output_grad());
  }
  NetGraph g;
  auto x = g.input({4, 3, 3});
  REQUIRE_THROWS_AS(g.add(x, g.pool(x, {PoolSpec::Kind::max, 2, 2, 0}), Activation::none), std::invalid_argument);
}
