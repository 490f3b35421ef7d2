// precision bf16 on oneDNN's native bf16 kernels (onednn_net.hpp, onednn_dense_bf16.hpp):
//  - the path: native exactly where oneDNN has bf16 kernels for the CPU (onednn_isa.hpp), else
//    emulated, and NetOptions::emulate_bf16 forces emulation; holds on every ISA (ctest runs it
//    again under DNNL_MAX_CPU_ISA=AVX2 and AVX512_CORE, where the emulated path must be chosen);
//  - parity: native and emulated bf16 agree (one step's outputs and gradients, and the loss
//    curve of a few SGD steps) for an MLP and a CNN;
//  - conformance: native bf16 training follows fp32 within a bf16 tolerance;
//  - the trainer names the path in its first log line and its eval records.
// Parity and conformance need native bf16: on other CPUs they SKIP with a warning.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <cmath>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/protocol.hpp"
#include "tests/trainer/test_util.hpp"
#include "trainer/comm/local_communicator.hpp"
#include "trainer/data/datasets.hpp"
#include "trainer/kernels/onednn/bf16_peak.hpp"
#include "trainer/kernels/kernels_registry.hpp"
#include "trainer/kernels/net.hpp"
#include "trainer/kernels/onednn/onednn_isa.hpp"
#include "trainer/models/model_registry.hpp"
#include "trainer/models/net_model.hpp"
#include "trainer/rng.hpp"
#include "trainer/trainer.hpp"

using namespace dlsweep;
using namespace dlsweep::trainer;
using namespace dlsweep::trainer::kernels;

namespace {

/// Parameters (values and gradients) of a small net, initialised from a seed.
struct Params {
  std::vector<AlignedBuffer> bufs;
  std::vector<std::pair<MatrixView, MatrixView>> pairs;  ///< (value, gradient)
  SplitMix64 rng{17};
  std::pair<MatrixView, MatrixView> add(std::int64_t rows, std::int64_t cols, double scale) {
    bufs.push_back(make_matrix_buffer(rows, cols));
    bufs.push_back(make_matrix_buffer(rows, cols));
    MatrixView v = bufs[bufs.size() - 2].view(rows, cols, padded_ld(cols)), g = bufs.back().view(rows, cols, padded_ld(cols));
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) v.at(r, c) = static_cast<float>(scale * rng.normal());
    pairs.push_back({v, g});
    return pairs.back();
  }
  DenseParams dense(std::int64_t in, std::int64_t out) {
    auto [w, dw] = add(in, out, std::sqrt(2.0 / static_cast<double>(in)));
    auto [b, db] = add(1, out, 0.0);
    return {w, dw, b.data, db.data};
  }
  ConvParams conv(std::int64_t in_c, std::int64_t out_c, std::int64_t k) {
    auto [w, dw] = add(out_c, in_c * k * k, std::sqrt(2.0 / static_cast<double>(in_c * k * k)));
    auto [b, db] = add(1, out_c, 0.0);
    return {w, dw, b.data, db.data};
  }
  void sgd(float lr) {
    for (auto& [v, g] : pairs)
      for (std::int64_t i = 0; i < v.span(); ++i) v.data[i] -= lr * g.data[i];
  }
};

const Shape kInput{1, 12, 12};

/// MLP 144-128-64-10 (128 columns take a padded row stride).
void build_mlp(NetGraph& g, Params& p) {
  TensorId x = g.input(kInput);
  x = g.dense(x, 128, Activation::relu, p.dense(kInput.size(), 128), 0);
  x = g.dense(x, 64, Activation::relu, p.dense(128, 64), 1);
  g.dense(x, 10, Activation::none, p.dense(64, 10), 2);
}

/// conv 5x5 16 + pool, conv 3x3 32 + pool, dense 64, dense 10: the CNN's structure, small.
void build_cnn(NetGraph& g, Params& p) {
  const PoolSpec pool{PoolSpec::Kind::max, 2, 2, 0};
  TensorId x = g.input(kInput);
  x = g.pool(g.conv(x, {16, 5, 1, 2, Activation::relu}, p.conv(1, 16, 5), 0), pool);
  x = g.pool(g.conv(x, {32, 3, 1, 1, Activation::relu}, p.conv(16, 32, 3), 1), pool);
  x = g.dense(x, 64, Activation::relu, p.dense(32 * 3 * 3, 64), 2);
  g.dense(x, 10, Activation::none, p.dense(64, 10), 3);
}

using Builder = std::function<void(NetGraph&, Params&)>;

struct Run {
  std::vector<double> losses;               ///< mean loss per step, before the step's update
  std::vector<float> out, dx;               ///< first step: logits and dL/dinput
  std::vector<std::vector<float>> grads;    ///< first step: every parameter gradient
  std::vector<std::string> describe;
};

std::vector<float> rows_of(MatrixView m) {
  std::vector<float> v;
  for (std::int64_t r = 0; r < m.rows; ++r) v.insert(v.end(), m.row(r), m.row(r) + m.cols);
  return v;
}

/// `steps` SGD steps on a fixed batch whose labels a random linear teacher assigns.
Run train_steps(Kernels& k, const Builder& build, Precision precision, bool emulate, int steps, std::int64_t n = 32) {
  Params p;
  NetGraph g;
  build(g, p);
  NetOptions o;
  o.batch = n;
  o.precision = precision;
  o.input_grad = true;
  o.emulate_bf16 = emulate;
  auto net = k.make_net(g, o);
  SplitMix64 rng(5);
  MatrixView in = net->input();
  std::vector<double> teacher(static_cast<std::size_t>(in.cols * 10));
  for (double& t : teacher) t = rng.normal();
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t c = 0; c < in.cols; ++c) in.at(r, c) = static_cast<float>(2 * rng.uniform() - 1);
    std::vector<double> s(10, 0.0);
    for (std::int64_t c = 0; c < in.cols; ++c)
      for (int j = 0; j < 10; ++j) s[static_cast<std::size_t>(j)] += in.at(r, c) * teacher[static_cast<std::size_t>(c * 10 + j)];
    labels[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(std::max_element(s.begin(), s.end()) - s.begin());
  }
  Run run;
  run.describe = net->describe();
  for (int s = 0; s < steps; ++s) {
    net->forward();
    const auto st = k.softmax_cross_entropy(net->output(), labels.data(), 1.0f / static_cast<float>(n), net->output_grad());
    run.losses.push_back(st.loss_sum / static_cast<double>(n));
    if (s == 0) run.out = rows_of(net->output());
    net->backward();
    if (s == 0) {
      run.dx = rows_of(net->input_grad());
      for (auto& [v, gr] : p.pairs) run.grads.push_back(rows_of(gr));
    }
    p.sgd(0.1f);
  }
  return run;
}

/// Largest |a - b| relative to the largest |b| (plus a floor for all-zero gradients).
double worst_relative(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0, scale = 0;
  for (float v : b) scale = std::max(scale, static_cast<double>(std::abs(v)));
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]) / (1e-3 + scale));
  return worst;
}

bool mentions_native_kernels(const Run& r) {
  for (const auto& line : r.describe)
    if (line.find("bf16 w_cvt=") != std::string::npos) return true;  // onednn_dense_bf16's describe()
  return false;
}

std::unique_ptr<Kernels> onednn() {
  auto k = make_kernels("onednn");
  REQUIRE(k);
  return std::move(*k);
}

/// Cosine of the angle between a and b (1 when both are zero).
double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return aa == 0 && bb == 0 ? 1.0 : ab / std::sqrt(aa * bb);
}

/// Compares two runs: first-step logits within `tol` (relative to their largest magnitude),
/// first-step gradients (input and every parameter) pointing the same way (cosine >= `min_cos`;
/// element-wise they are sums of many rounded terms that partly cancel), loss curves within
/// `loss_tol` (relative).
void require_agree(const Run& a, const Run& b, double tol, double min_cos, double loss_tol) {
  CHECK(worst_relative(a.out, b.out) < tol);
  CHECK(cosine(a.dx, b.dx) >= min_cos);
  REQUIRE(a.grads.size() == b.grads.size());
  for (std::size_t i = 0; i < a.grads.size(); ++i) {
    INFO("parameter gradient " << i << ": worst relative difference " << worst_relative(a.grads[i], b.grads[i]));
    CHECK(cosine(a.grads[i], b.grads[i]) >= min_cos);
  }
  for (std::size_t s = 0; s < a.losses.size(); ++s) {
    INFO("step " << s << ": loss " << a.losses[s] << " vs " << b.losses[s]);
    CHECK(std::abs(a.losses[s] - b.losses[s]) <= loss_tol * b.losses[s]);
  }
}

}  // namespace

TEST_CASE("to_bf16 gives the bits of round_to_bf16, and NaN stays NaN", "[kernels][bf16]") {
  SplitMix64 rng(9);
  std::vector<float> v = {0.0f, -0.0f, 1.0f, 1.0f + 0x1.0p-8f, 1.0f + 3 * 0x1.0p-8f, -3.5e38f, 3.4e38f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::denorm_min()};
  for (int i = 0; i < 1000; ++i) v.push_back(static_cast<float>(rng.normal() * std::exp(20 * rng.uniform() - 10)));
  std::vector<std::uint16_t> bits(v.size() + 1);
  v.push_back(std::bit_cast<float>(0x7f800001u));  // a NaN whose payload lies in the low half only
  to_bf16(v.data(), bits.data(), static_cast<std::int64_t>(v.size()));
  for (std::size_t i = 0; i + 1 < v.size(); ++i) {
    INFO(v[i]);
    REQUIRE(bits[i] == static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(round_to_bf16(v[i])) >> 16));
  }
  CHECK(std::isnan(std::bit_cast<float>(static_cast<std::uint32_t>(bits.back()) << 16)));
}

TEST_CASE("bf16 runs natively exactly where oneDNN has bf16 kernels, emulated elsewhere", "[kernels][bf16]") {
  auto k = onednn();
  const bool native = onednn_has_native_bf16();
  INFO("oneDNN isa " << onednn_isa_name() << ", path " << bf16_path_name());
  CHECK(bf16_path_name() == (native ? "native" : "emulated"));
  for (const Builder& build : {Builder(build_mlp), Builder(build_cnn)}) {
    const Run automatic = train_steps(*k, build, Precision::bf16, false, 2);
    const Run emulated = train_steps(*k, build, Precision::bf16, true, 2);
    CHECK(mentions_native_kernels(automatic) == native);
    CHECK_FALSE(mentions_native_kernels(emulated));
    // Without native kernels both nets are the same emulation, bit for bit.
    if (!native) {
      CHECK(automatic.out == emulated.out);
      CHECK(automatic.grads == emulated.grads);
      CHECK(automatic.losses == emulated.losses);
    }
  }
}

TEST_CASE("native bf16 agrees with emulated bf16 (parity), MLP and CNN", "[kernels][bf16][parity]") {
  if (!onednn_has_native_bf16()) {
    WARN("SKIP: oneDNN has no native bf16 kernels here (isa " << onednn_isa_name()
                                                              << "): the native-vs-emulated bf16 parity test did not run");
    return;
  }
  auto k = onednn();
  for (const auto& [name, build] : {std::pair{"mlp", Builder(build_mlp)}, std::pair{"cnn", Builder(build_cnn)}}) {
    INFO(name);
    const Run native = train_steps(*k, build, Precision::bf16, false, 8);
    const Run emulated = train_steps(*k, build, Precision::bf16, true, 8);
    REQUIRE(mentions_native_kernels(native));
    // The same arithmetic up to accumulation order: a rounded value may land one bf16 step
    // (2^-8 relative) apart, and that difference travels through the layers.
    require_agree(native, emulated, 3e-2, 0.999, 2e-2);
  }
}

TEST_CASE("native bf16 training follows fp32 (conformance), MLP and CNN", "[kernels][bf16]") {
  if (!onednn_has_native_bf16()) {
    WARN("SKIP: oneDNN has no native bf16 kernels here (isa " << onednn_isa_name()
                                                              << "): the native-bf16-vs-fp32 conformance test did not run");
    return;
  }
  auto k = onednn();
  for (const auto& [name, build] : {std::pair{"mlp", Builder(build_mlp)}, std::pair{"cnn", Builder(build_cnn)}}) {
    INFO(name);
    const Run bf16 = train_steps(*k, build, Precision::bf16, false, 8);
    const Run fp32 = train_steps(*k, build, Precision::fp32, false, 8);
    REQUIRE(mentions_native_kernels(bf16));
    CHECK(bf16.out != fp32.out);  // really another arithmetic
    require_agree(bf16, fp32, 5e-2, 0.99, 3e-2);
    // Both learn the teacher's labels.
    CHECK(bf16.losses.back() < 0.8 * bf16.losses.front());
    CHECK(fp32.losses.back() < 0.8 * fp32.losses.front());
  }
}

namespace {

TrainConfig small_bf16_config(const std::string& bf16_kernels) {
  TrainConfig c;
  c.dataset = "synthetic";
  c.precision = "bf16";
  c.bf16_kernels = bf16_kernels;
  c.hidden = {64};
  c.epochs = 1;
  c.batch_size = 64;
  c.train_subset = 512;
  c.test_subset = 128;
  return c;
}

/// Runs the trainer on `c`; the records it wrote, or the error Trainer::create gave.
Result<std::vector<protocol::Record>> run_trainer(const TrainConfig& c) {
  test::TempDir dir;
  auto data = data::load_data(data_spec(c));
  REQUIRE(data);
  auto rep = Reporter::open(dir / "metrics.jsonl");
  REQUIRE(rep);
  comm::LocalCommunicator comm;
  TrainContext ctx;
  ctx.comm = &comm;
  ctx.reporter = &*rep;
  auto t = Trainer::create(c, std::move(*data), ctx);
  if (!t) return std::unexpected(t.error());
  REQUIRE((*t)->run());
  std::vector<protocol::Record> records;
  std::istringstream in(test::read_file(dir / "metrics.jsonl"));
  for (std::string line; std::getline(in, line);) {
    auto r = protocol::parse_record(line);
    REQUIRE(r);
    records.push_back(*r);
  }
  return records;
}

/// The first log line names `path` and every eval record carries it.
void check_path(const std::vector<protocol::Record>& records, const std::string& path) {
  REQUIRE(!records.empty());
  REQUIRE(records.front().kind == protocol::RecordKind::log);
  INFO(records.front().text);
  CHECK(records.front().text.find("bf16 " + path + " (") != std::string::npos);
  int evals = 0;
  for (const auto& r : records) {
    if (r.kind != protocol::RecordKind::eval) continue;
    ++evals;
    CHECK(r.text == "precision_path=" + path);
    REQUIRE(r.metrics.count("bf16_native") == 1);
    CHECK(r.metrics.at("bf16_native") == (path == "native" ? 1.0 : 0.0));
  }
  CHECK(evals >= 1);
}

std::vector<double> eval_values(const std::vector<protocol::Record>& records, const char* metric) {
  std::vector<double> v;
  for (const auto& r : records)
    if (r.kind == protocol::RecordKind::eval) v.push_back(r.metrics.at(metric));
  return v;
}

}  // namespace

TEST_CASE("the trainer names its bf16 path in its first log line and its eval records", "[trainer][bf16]") {
  auto records = run_trainer(small_bf16_config("auto"));
  REQUIRE(records);
  check_path(*records, std::string(bf16_path_name()));
  // Where native bf16 ran without AMX and the CPU's bf16 instruction is slower than its fp32
  // FMA, the log says so (measured; bf16_peak.hpp); never with AMX (its tiles do the work) or
  // on the emulated path.
  const Bf16Peak peak = measure_bf16_peak();
  const bool amx = onednn_has_amx();
  if (bf16_path_name() == "native" && !amx && peak.measured && peak.ratio() < 0.6)
    CHECK(records->front().text.find("so native bf16 is likely slower than fp32 here") != std::string::npos);
  if (bf16_path_name() == "emulated" || amx) CHECK(records->front().text.find("VDPBF16PS") == std::string::npos);
}

TEST_CASE("bf16_kernels: emulated runs emulated on every CPU; native is refused where there are no bf16 kernels",
          "[trainer][bf16]") {
  auto emulated = run_trainer(small_bf16_config("emulated"));
  REQUIRE(emulated);
  check_path(*emulated, "emulated");
  INFO(emulated->front().text);
  CHECK(emulated->front().text.find("bf16_kernels: emulated") != std::string::npos);
  CHECK(emulated->front().text.find(onednn_has_native_bf16() ? "native bf16 kernels: yes" : "native bf16 kernels: no") !=
        std::string::npos);
  auto automatic = run_trainer(small_bf16_config("auto"));
  REQUIRE(automatic);
  // Without native kernels, auto is the same emulation: the same numbers, bit for bit.
  if (!onednn_has_native_bf16()) {
    CHECK(eval_values(*emulated, "train_loss") == eval_values(*automatic, "train_loss"));
    CHECK(eval_values(*emulated, "val_loss") == eval_values(*automatic, "val_loss"));
  } else {
    // With them, the same arithmetic up to accumulation order.
    const auto a = eval_values(*automatic, "val_loss"), e = eval_values(*emulated, "val_loss");
    REQUIRE(a.size() == e.size());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(std::abs(a[i] - e[i]) <= 0.05 * std::abs(e[i]));
  }
  auto native = run_trainer(small_bf16_config("native"));
  if (onednn_has_native_bf16()) {
    REQUIRE(native);
    check_path(*native, "native");
  } else {
    REQUIRE_FALSE(native);
    CHECK(native.error().where == "bf16_kernels");
    CHECK(native.error().message().find("oneDNN has none on this CPU (oneDNN isa " + onednn_isa_name()) !=
          std::string::npos);
    CHECK(native.error().message().find("use bf16_kernels: auto") != std::string::npos);
  }
}

TEST_CASE("bf16_kernels: emulated reaches the nets: fp32 kernels where native ones exist", "[trainer][bf16]") {
  // The path in the records comes from the config; this checks what the model built.
  for (const bool emulate : {false, true}) {
    models::ModelSpec spec;
    spec.name = "mlp";
    spec.hidden = {16};
    spec.input = {1, 28, 28};
    spec.precision = Precision::bf16;
    spec.emulate_bf16 = emulate;
    auto k = onednn();
    auto m = models::make_model(spec, *k);
    REQUIRE(m);
    auto* net = dynamic_cast<models::NetModel*>(m->get());
    REQUIRE(net);
    CHECK(net->emulate_bf16() == emulate);
    std::string described;
    for (const auto& d : net->describe(8, models::Mode::train)) described += d + "\n";
    INFO(described);
    // Native nets name bf16 tensors in their primitives; emulated ones run f32 kernels only.
    CHECK((described.find("bf16 w_cvt=") != std::string::npos) == (onednn_has_native_bf16() && !emulate));
  }
}
