// bench_trainer_throughput --device cuda: dlsweep-train's training step on the GPU backend
// (the plugin libdlsweep-cuda.so, as `device: cuda` runs it) against PyTorch's on the same
// GPU, in the same run. Ours: the step exactly as the trainer runs it: the batch gathered on
// the GPU from the device-resident (synthetic) training set, forward, loss (its value read back
// by the host, as the trainer does every step for divergence), backward, the optimizer (SGD
// momentum 0.9, one fused launch). PyTorch (bench/pytorch_baseline.py --device cuda): the
// same model and step with the data already on the GPU and no read-back, as eager fp32, with
// TF32 allowed, channels_last and autocast bf16; its best mode is the bar's reference.
//
//   bench_trainer_throughput --device cuda --models mlp,cnn,resnet20 --batches 64,256,1024,4096,16384
//
// Columns: ours in fp32 (NCHW net), tf32 on the NCHW and the NHWC net, bf16 and fp16 (NHWC),
// bf16 without CUDA graphs (DLSWEEP_CUDA_GRAPHS=0; "graph" is bf16 with / without), bf16 with
// `deterministic: false` (cuDNN's fastest algorithms, as PyTorch's default). The bars take our
// deterministic default.
// Bars (issue "The trainer on GPUs, second floor"): ours >= 1.0x PyTorch's best at every batch,
// tf32 and bf16 each, >= 3x for the MLP at batch <= 256.
#include "bench/trainer_throughput_cuda.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trainer/data/datasets.hpp"
#include "trainer/data/synthetic.hpp"
#include "trainer/kernels/kernels_registry.hpp"
#include "trainer/kernels/precision.hpp"
#include "trainer/models/model_registry.hpp"
#include "trainer/optim/optimizer.hpp"

namespace tk = dlsweep::trainer::kernels;
namespace mdl = dlsweep::trainer::models;
namespace td = dlsweep::trainer::data;

namespace {

using clock_type = std::chrono::steady_clock;

// Samples/s of the best of 3 repetitions of k steps (k sized from a probe to ~seconds/3).
double measure(tk::Kernels& k, const std::string& model, tk::Precision precision, std::int64_t batch, double seconds,
               bool deterministic = true) {
  mdl::ModelSpec spec;
  spec.deterministic = deterministic;
  spec.name = model;
  spec.input = mdl::default_input_shape(model);
  spec.seed = 1;
  spec.precision = precision;
  auto m = mdl::make_model(spec, k);
  if (!m) throw std::runtime_error(m.error().message());
  dlsweep::trainer::optim::OptimizerSpec os;
  auto opt = k.make_optimizer(os, (*m)->parameters());
  if (!opt) throw std::runtime_error(opt.error().message());
  td::SyntheticSpec ss;
  ss.channels = spec.input.c;
  ss.height = spec.input.h;
  ss.width = spec.input.w;
  ss.features = spec.input.size();
  ss.train_size = std::max<std::int64_t>(4 * batch, 8192);
  ss.test_size = 1;
  td::DataSplits data = td::make_synthetic(ss);
  const td::Dataset* sets[2] = {&data.train, &data.test};
  tk::DeviceData* dd = k.attach_data(sets);
  std::vector<std::uint32_t> idx(static_cast<std::size_t>(batch));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
  std::uint64_t cursor = 0;
  auto step = [&] {
    for (auto& i : idx) i = static_cast<std::uint32_t>(cursor++ % static_cast<std::uint64_t>(data.train.size));
    const std::int32_t* lab = labels.data();
    if (dd) lab = dd->gather(0, idx.data(), batch, (*m)->input(batch, mdl::Mode::train));
    else td::gather(data.train, idx, (*m)->input(batch, mdl::Mode::train), labels.data());
    auto logits = (*m)->forward(batch, mdl::Mode::train);
    k.softmax_cross_entropy(logits, lab, 1.0f / static_cast<float>(batch), (*m)->logits_grad(batch));
    (*m)->backward(batch);
    (*opt)->step(0.01);
  };
  for (int i = 0; i < 5; ++i) step();
  k.memory().sum_squares((*m)->parameters().values(), 1);  // drains the stream
  auto t0 = clock_type::now();
  step();
  k.memory().sum_squares((*m)->parameters().values(), 1);
  const double probe = std::chrono::duration<double>(clock_type::now() - t0).count();
  const int reps = std::max(2, static_cast<int>(seconds / 3 / std::max(probe, 1e-6)));
  double best = 1e300;
  for (int r = 0; r < 3; ++r) {
    t0 = clock_type::now();
    for (int i = 0; i < reps; ++i) step();
    k.memory().sum_squares((*m)->parameters().values(), 1);
    best = std::min(best, std::chrono::duration<double>(clock_type::now() - t0).count() / reps);
  }
  return static_cast<double>(batch) / best;
}

// PyTorch on the same GPU: samples/s by (model, batch, mode).
std::map<std::tuple<std::string, std::int64_t, std::string>, double> pytorch(const std::string& script,
                                                                             const std::string& models,
                                                                             const std::string& batches,
                                                                             double seconds, std::string& note) {
  std::map<std::tuple<std::string, std::int64_t, std::string>, double> out;
  const char* py = std::getenv("DLSWEEP_PYTHON");
  const std::string cmd = fmt::format("{} '{}' --device cuda --models {} --batches {} --seconds {} "
                                      "--modes eager,tf32,channels_last,amp_bf16 2>&1",
                                      py && *py ? py : "python3", script, models, batches, seconds);
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, p)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) continue;
      if (j.contains("error")) note = "PyTorch skipped: " + j["error"].get<std::string>();
      if (j.contains("info")) note = "torch " + j["info"]["torch"].get<std::string>();
      if (j.contains("samples_per_s"))
        out[{j["model"].get<std::string>(), j["batch"].get<std::int64_t>(), j["mode"].get<std::string>()}] =
            j["samples_per_s"].get<double>();
    }
    ::pclose(p);
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

}  // namespace

int run_cuda_throughput(const std::vector<std::string>& models, const std::vector<std::int64_t>& batches,
                        double seconds, const std::string& pytorch_script) {
  auto k = tk::make_kernels("cuda");
  if (!k) {
    std::printf("bench_trainer_throughput --device cuda: %s (skipped)\n", k.error().message().c_str());
    return 77;
  }
  std::printf("bench_trainer_throughput --device cuda: training steps as dlsweep-train runs them "
              "(GPU gather, fwd, loss read back, bwd, SGD momentum), synthetic data, 1 rank\n");
  std::printf("device: %s; %s\n", (*k)->device_description().c_str(), tk::backend_version().c_str());
  std::vector<std::string> bs;
  for (auto b : batches) bs.push_back(std::to_string(b));
  std::string note;
  const auto torch = pytorch(pytorch_script, join(models), join(bs), seconds, note);
  std::printf("pytorch: %s\n", note.empty() ? "no output" : note.c_str());
  std::vector<std::string> bars;
  for (const auto& model : models) {
    std::printf("\n== %s\n%6s %11s %11s %11s %11s %11s %11s %11s %11s %11s %9s %8s %8s %8s %8s\n", model.c_str(),
                "batch", "ours fp32", "tf32 nchw", "tf32 nhwc", "bf16 nhwc", "bf16 eager", "bf16 nondet", "fp16 nhwc", "pt eager",
                "pt best", "pt mode", "fp32/pt", "tf32/pt", "bf16/pt", "graph");
    for (auto b : batches) {
      // fp32 runs on the NCHW net; tf32 on both nets (DLSWEEP_CUDA_NET=nchw selects the
      // NCHW one), bf16 and fp16 on the NHWC net. A precision that fails prints 0.
      auto one = [&](tk::Precision p, bool nchw, bool graphs = true, bool det = true) {
        ::setenv("DLSWEEP_CUDA_NET", nchw ? "nchw" : "nhwc", 1);  // tf32's net; the others have one each
        if (graphs) ::unsetenv("DLSWEEP_CUDA_GRAPHS");
        else ::setenv("DLSWEEP_CUDA_GRAPHS", "0", 1);
        double v = 0;
        try {
          v = measure(**k, model, p, b, seconds, det);
        } catch (const std::exception& e) {
          std::printf("%6lld  %s failed: %s\n", static_cast<long long>(b), std::string(tk::precision_name(p)).c_str(),
                      e.what());
        }
        ::unsetenv("DLSWEEP_CUDA_NET");
        ::unsetenv("DLSWEEP_CUDA_GRAPHS");
        return v;
      };
      const double o32 = one(tk::Precision::fp32, false), otf_nchw = one(tk::Precision::tf32, true),
                   otf = one(tk::Precision::tf32, false), obf = one(tk::Precision::bf16, false),
                   obf_eager = one(tk::Precision::bf16, false, false),
                   obf_fast = one(tk::Precision::bf16, false, true, false), ofp16 = one(tk::Precision::fp16, false);
      double eager = 0, best = 0;
      std::string best_mode = "-";
      for (const char* mode : {"eager", "tf32", "channels_last", "amp_bf16"}) {
        auto it = torch.find({model, b, mode});
        if (it == torch.end()) continue;
        if (std::string(mode) == "eager") eager = it->second;
        if (it->second > best) {
          best = it->second;
          best_mode = mode;
        }
      }
      const double tf = std::max(otf, otf_nchw);
      std::printf("%6lld %11.0f %11.0f %11.0f %11.0f %11.0f %11.0f %11.0f %11.0f %11.0f %9s %7.2fx %7.2fx %7.2fx %7.2fx\n",
                  static_cast<long long>(b), o32, otf_nchw, otf, obf, obf_eager, obf_fast, ofp16, eager, best, best_mode.c_str(),
                  eager > 0 ? o32 / eager : 0.0, best > 0 ? tf / best : 0.0, best > 0 ? obf / best : 0.0,
                  obf_eager > 0 ? obf / obf_eager : 0.0);
      if (best > 0) {
        const double need = model == "mlp" && b <= 256 ? 3.0 : 1.0;
        for (auto [name, v] : {std::pair<const char*, double>{"tf32", tf}, {"bf16", obf}})
          bars.push_back(fmt::format("{} batch {}, ours {} / PyTorch's best ({}) {:>7.2f}x (bar >= {:g}x): {}", model,
                                     b, name, best_mode, v / best, need, v / best >= need ? "met" : "NOT met"));
      }
    }
  }
  std::printf("\n-- bars\n");
  for (const auto& b : bars) std::printf("%s\n", b.c_str());
  std::printf("reproduce: bench_trainer_throughput --device cuda --models %s --batches %s --seconds %g\n",
              join(models).c_str(), join(bs).c_str(), seconds);
  return 0;
}
