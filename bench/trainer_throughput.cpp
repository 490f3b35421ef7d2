// trainer_throughput.cpp — dlsweep-train's training-step throughput against the machine's
// matmul ceiling and against PyTorch, measured in one run. Per model (MLP 784-512-512-10, the
// CNN on 1x28x28; ResNet-20 on request) and batch size it measures, on synthetic data:
//   1. a oneDNN f32 matmul 2048³ (best of 5): the CPU's practical GEMM ceiling;
//   2. full training steps through the trainer's own Model/OnednnKernels/SGD (forward, loss,
//      backward, SGD momentum 0.9 applied per layer as gradients become ready, as
//      dlsweep-train does on one rank), warm-up excluded, best of 5 repetitions, the batch
//      gather excluded (it is reported separately);
//   3. the same steps in PyTorch (bench/pytorch_baseline.py, run as a child process with the
//      same thread count; skipped with a note when python3-torch is missing);
//   4. with --bf16, the same steps in precision bf16 and their ratio to fp32, with the path bf16
//      took (native: oneDNN's bf16 kernels on bf16 tensors, where the CPU has AVX512-BF16/AMX;
//      emulated: fp32 kernels on rounded operands); where the path is native, bf16 emulated
//      (bf16_kernels: emulated) too, and the CPU's VDPBF16PS peak next to its fp32 FMA peak
//      (bf16_peak.hpp), which bounds any native ratio; their repetitions alternate, so that the
//      machine's load hits every side of the ratios alike.
// It prints per batch: samples/s, ms/step, GFLOP/s (the FLOPs the step executes, counted from
// the layer graph: forward, dW and dX except the input layer's dX), that as % of the 2048³
// matmul, the time inside oneDNN primitives, PyTorch's samples/s and ours/PyTorch.
//
// usage: bench_trainer_throughput [--threads N] [--models mlp,cnn] [--batches 64,256,1024,4096]
//                                 [--seconds S] [--bf16] [--pytorch SCRIPT|none] [--phases] [--verbose]
// --phases also prints each batch's best repetition split into forward + loss, backward
// without the updates, and the per-layer optimizer updates.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "bench/trainer_throughput_cuda.hpp"
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.hpp>

#include "trainer/data/dataset.hpp"
#include "trainer/data/synthetic.hpp"
#include "trainer/kernels/onednn/bf16_peak.hpp"
#include "trainer/kernels/kernels_registry.hpp"
#include "trainer/kernels/onednn/onednn_isa.hpp"
#include "trainer/kernels/onednn/onednn_kernels.hpp"
#include "trainer/models/model_registry.hpp"
#include "trainer/models/net_model.hpp"
#include "trainer/optim/optimizer.hpp"

#ifndef DLSWEEP_PYTORCH_BASELINE
#define DLSWEEP_PYTORCH_BASELINE "bench/pytorch_baseline.py"
#endif

namespace {

namespace tk = dlsweep::trainer::kernels;
namespace tm = dlsweep::trainer::models;
namespace td = dlsweep::trainer::data;
using clock_type = std::chrono::steady_clock;
using dnnl::memory;

double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

/// Best-of-`reps` GFLOP/s of a dense f32 matmul n×n×n.
double matmul_gflops(const dnnl::engine& eng, dnnl::stream& s, std::int64_t n, int reps) {
  memory::desc md({n, n}, memory::data_type::f32, memory::format_tag::ab);
  dnnl::matmul mm(dnnl::matmul::primitive_desc(dnnl::matmul::desc(md, md, md), eng));
  memory a(md, eng), b(md, eng), c(md, eng);
  std::fill_n(static_cast<float*>(a.get_data_handle()), n * n, 0.5f);
  std::fill_n(static_cast<float*>(b.get_data_handle()), n * n, 0.25f);
  double best = 1e30;
  for (int r = 0; r < reps + 2; ++r) {
    auto t0 = clock_type::now();
    mm.execute(s, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    s.wait();
    if (r >= 2) best = std::min(best, since(t0));
  }
  return 2.0 * static_cast<double>(n * n * n) / best / 1e9;
}

/// FLOPs one training step executes per sample: 2·MACs forward, the same for dW, and for dX
/// except on the layer that reads the input (whose gradient nobody needs).
double step_flops_per_sample(const tk::NetGraph& g) {
  double flops = 0;
  for (tk::TensorId t = 1; t < static_cast<tk::TensorId>(g.nodes().size()); ++t) {
    const tk::NetNode& n = g.node(t);
    const tk::Shape in = g.node(n.inputs[0]).shape;
    double macs = 0;
    if (n.op == tk::NetNode::Op::dense) macs = static_cast<double>(in.size()) * n.shape.c;
    if (n.op == tk::NetNode::Op::conv)
      macs = static_cast<double>(n.shape.size()) * in.c * n.conv.kernel * n.conv.kernel;
    flops += 2 * macs * (n.inputs[0] == 0 ? 2 : 3);
  }
  return flops;
}

struct Measured {
  double step_s = 0, onednn_s = 0, data_s = 0;
  double fwd_s = 0, bwd_s = 0, update_s = 0;  ///< --phases: forward + loss, backward without updates, updates
};

/// Training steps of one model at one batch size and precision (see the file comment).
class Stepper {
 public:
  Stepper(tk::OnednnKernels& backend, const std::string& model, tk::Precision precision, std::int64_t batch,
          bool emulate_bf16 = false)
      : backend_(backend), batch_(batch), idx_(static_cast<std::size_t>(batch)), labels_(static_cast<std::size_t>(batch)) {
    tm::ModelSpec spec;
    spec.name = model;
    spec.input = tm::default_input_shape(model);
    spec.seed = 1;
    spec.precision = precision;
    spec.emulate_bf16 = emulate_bf16;
    auto m = tm::make_model(spec, backend);
    if (!m) throw std::runtime_error(m.error().message());
    model_ = std::move(*m);
    dlsweep::trainer::optim::OptimizerSpec os;  // SGD, momentum 0.9, no weight decay
    auto opt = dlsweep::trainer::optim::make_optimizer(os, model_->parameters());
    if (!opt) throw std::runtime_error(opt.error().message());
    opt_ = std::move(*opt);
    td::SyntheticSpec ss;
    ss.channels = spec.input.c;
    ss.height = spec.input.h;
    ss.width = spec.input.w;
    ss.features = spec.input.size();
    ss.train_size = std::max<std::int64_t>(2 * batch, 4096);
    ss.test_size = 1;
    data_ = td::make_synthetic(ss);
    update_ = [this](std::span<const std::size_t> t) {
      if (!phases_) {
        opt_->step(0.01, t);
        return;
      }
      const auto t0 = clock_type::now();
      opt_->step(0.01, t);
      update_s_ += since(t0);
    };
  }
  /// Times the phases of each step too (two clock reads per layer update).
  void set_phases(bool on) { phases_ = on; }

  tm::NetModel* net_model() { return dynamic_cast<tm::NetModel*>(model_.get()); }

  /// One step; returns its compute time (the batch gather is added to data_s_).
  double step() {
    auto t0 = clock_type::now();
    for (auto& i : idx_) i = static_cast<std::uint32_t>(cursor_++ % data_.train.size);
    td::gather(data_.train, idx_, model_->input(batch_, tm::Mode::train), labels_.data());
    auto t1 = clock_type::now();
    auto logits = model_->forward(batch_, tm::Mode::train);
    backend_.softmax_cross_entropy(logits, labels_.data(), 1.0f / static_cast<float>(batch_),
                                   model_->logits_grad(batch_));
    if (phases_) fwd_s_ += since(t1);
    model_->backward(batch_, update_);
    data_s_ += std::chrono::duration<double>(t1 - t0).count();
    return since(t1);
  }
  /// Warm-up (net built, caches and pages warm), then the repetition length for `seconds`.
  void warm_up(double seconds) {
    for (int i = 0; i < 3; ++i) step();
    k_ = std::max(2, static_cast<int>(seconds / 5 / std::max(step(), 1e-6)));
  }
  /// One repetition of k steps; keeps the best mean step time (and, with phases, the phases
  /// of that repetition).
  void repetition() {
    double sum = 0;
    fwd_s_ = update_s_ = 0;
    for (int i = 0; i < k_; ++i) sum += step();
    if (sum / k_ < best_) {
      best_ = sum / k_;
      best_fwd_ = fwd_s_ / k_;
      best_update_ = update_s_ / k_;
    }
  }
  /// One more repetition with the oneDNN primitives timed (profiling adds a wait per primitive).
  Measured finish() {
    backend_.set_profiling(true);
    data_s_ = 0;
    for (int i = 0; i < k_; ++i) step();
    Measured r{best_, backend_.profile().seconds / k_, data_s_ / k_};
    if (phases_) {
      r.fwd_s = best_fwd_;
      r.update_s = best_update_;
      r.bwd_s = best_ - best_fwd_ - best_update_;
    }
    backend_.set_profiling(false);
    return r;
  }

 private:
  tk::OnednnKernels& backend_;
  std::int64_t batch_;
  std::unique_ptr<tm::Model> model_;
  std::unique_ptr<dlsweep::trainer::optim::Optimizer> opt_;
  td::DataSplits data_;
  std::vector<std::uint32_t> idx_;
  std::vector<std::int32_t> labels_;
  std::int64_t cursor_ = 0;
  double data_s_ = 0, best_ = 1e30;
  double fwd_s_ = 0, update_s_ = 0, best_fwd_ = 0, best_update_ = 0;
  bool phases_ = false;
  int k_ = 2;
  tm::GradReadyFn update_;
};

struct Measures {
  Measured fp32, bf16, bf16_emulated;  ///< bf16_emulated: only where bf16 also ran natively
};

/// fp32 (and, with `bf16`, bf16 on its own path and, where that is native, bf16 emulated too)
/// training steps of `model` at batch `batch`: best of 5 repetitions each; the precisions
/// alternate repetition by repetition, so that a change in the machine's load (it is shared)
/// hits every side of their ratios alike.
Measures measure(tk::OnednnKernels& backend, const std::string& model, std::int64_t batch, bool bf16,
                 double seconds, bool verbose, bool phases, double* flops_per_sample) {
  Stepper f(backend, model, tk::Precision::fp32, batch);
  f.set_phases(phases);
  std::unique_ptr<Stepper> h, e;
  if (bf16) h = std::make_unique<Stepper>(backend, model, tk::Precision::bf16, batch);
  if (bf16 && tk::onednn_has_native_bf16())
    e = std::make_unique<Stepper>(backend, model, tk::Precision::bf16, batch, /*emulate_bf16=*/true);
  if (flops_per_sample && f.net_model()) *flops_per_sample = step_flops_per_sample(f.net_model()->graph());
  for (Stepper* s : {&f, h.get(), e.get()})
    if (s) s->warm_up(seconds);
  for (int rep = 0; rep < 5; ++rep)
    for (Stepper* s : {&f, h.get(), e.get()})
      if (s) s->repetition();
  Measures r{f.finish(), h ? h->finish() : Measured{}, e ? e->finish() : Measured{}};
  if (verbose)
    for (Stepper* s : {&f, h.get(), e.get()})
      if (s && s->net_model())
        for (const auto& d : s->net_model()->describe(batch, tm::Mode::train)) std::printf("       %s\n", d.c_str());
  return r;
}

std::vector<std::int64_t> parse_ints(const std::string& s) {
  std::vector<std::int64_t> v;
  for (std::size_t pos = 0; pos < s.size();) {
    auto next = s.find(',', pos);
    v.push_back(std::stoll(s.substr(pos, next - pos)));
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return v;
}

std::vector<std::string> parse_words(const std::string& s) {
  std::vector<std::string> v;
  for (std::size_t pos = 0; pos < s.size();) {
    auto next = s.find(',', pos);
    v.push_back(s.substr(pos, next - pos));
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return v;
}

/// Runs the PyTorch baseline for one model and batch list; returns samples/s per batch.
/// `note` receives what to print about the baseline (version, or why it was skipped) once.
std::map<std::int64_t, double> pytorch_baseline(const std::string& script, const std::string& model,
                                                const std::string& batches, int threads, double seconds,
                                                std::string& note) {
  std::map<std::int64_t, double> out;
  std::string msg;
  std::error_code ec;
  if (!std::filesystem::exists(script, ec)) {
    note = "PyTorch baseline skipped: " + script + " not found";
    return out;
  }
  // Debian's python3-torch runs Linear layers through the system BLAS; OpenBLAS's OpenMP
  // build is the one that does not fight torch's own threads (TOOLCHAIN_NOTES.md).
  const std::string blas = "/usr/lib/x86_64-linux-gnu/openblas-openmp";
  std::string cmd;
  if (std::filesystem::exists(blas, ec)) cmd += "LD_LIBRARY_PATH=" + blas + " ";
  else msg = "libopenblas0-openmp is not installed: PyTorch uses the default BLAS; ";
  cmd += "OMP_NUM_THREADS=" + std::to_string(threads) + " /usr/bin/python3 '" + script + "' --models " + model +
         " --batches " + batches + " --threads " + std::to_string(threads) + " --seconds " + std::to_string(seconds) +
         " 2>&1";
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, p)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) continue;
      if (j.contains("error")) msg += "PyTorch baseline skipped: " + j["error"].get<std::string>();
      if (j.contains("info"))
        msg += "torch " + j["info"]["torch"].get<std::string>() + ", " +
               std::to_string(j["info"]["threads"].get<int>()) + " thread(s)";
      if (j.contains("samples_per_s")) out[j["batch"].get<std::int64_t>()] = j["samples_per_s"].get<double>();
    }
    if (::pclose(p) != 0 && out.empty() && msg.empty())
      msg = "PyTorch baseline failed (install python3-torch libopenblas0-openmp)";
  } else {
    msg = "PyTorch baseline skipped: cannot run /usr/bin/python3";
  }
  if (note.empty()) note = msg;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  std::vector<std::int64_t> batches = {64, 256, 1024, 4096};
  std::vector<std::string> models = {"mlp", "cnn"};
  double seconds = 2.0;
  bool verbose = false, bf16 = false, phases = false;
  std::string script = DLSWEEP_PYTORCH_BASELINE;
  std::string device = "cpu";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) device = argv[++i];
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--batches" && i + 1 < argc) batches = parse_ints(argv[++i]);
    else if (a == "--models" && i + 1 < argc) models = parse_words(argv[++i]);
    else if (a == "--seconds" && i + 1 < argc) seconds = std::atof(argv[++i]);
    else if (a == "--pytorch" && i + 1 < argc) script = argv[++i];
    else if (a == "--bf16") bf16 = true;
    else if (a == "--verbose") verbose = true;
    else if (a == "--phases") phases = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--device cpu|cuda] [--threads N] [--models mlp,cnn] [--batches 64,256,1024,4096] "
                   "[--seconds S] [--bf16] [--pytorch SCRIPT|none] [--phases] [--verbose]\n",
                   argv[0]);
      return 2;
    }
  }
  if (device == "cuda") return run_cuda_throughput(models, batches, seconds, script);
  if (device != "cpu") {
    std::fprintf(stderr, "--device: cpu or cuda, not '%s'\n", device.c_str());
    return 2;
  }
  tk::set_compute_threads(threads);
  tk::OnednnKernels backend;
  dnnl::stream stream(backend.engine());
  std::printf("bench_trainer_throughput: training steps (fwd + loss + bwd + SGD momentum), synthetic data, 1 rank\n");
  std::printf("cpu: %s, %d thread(s), %s\n", cpu_name().c_str(), threads, tk::backend_version().c_str());
  const double mm = matmul_gflops(backend.engine(), stream, 2048, 5);
  std::printf("oneDNN f32 matmul 2048x2048x2048: %.1f GFLOP/s (best of 5)\n", mm);

  struct Row {
    std::int64_t batch;
    Measured fp32, bf16, bf16_emulated;
  };
  // What the CPU's bf16 instruction can give at best, next to its fp32 FMA (bf16_peak.hpp):
  // it bounds every native bf16 ratio below, whatever the kernels.
  const tk::Bf16Peak peak = bf16 ? tk::measure_bf16_peak() : tk::Bf16Peak{};
  if (peak.measured) std::printf("%s\n", tk::describe(peak).c_str());
  // The trainer's bars (README "Trainer performance"), checked on what this run measured.
  std::vector<std::string> bars;
  auto bar = [&](const std::string& what, double got, double need, const char* unit) {
    bars.push_back(fmt::format("{:<52} {:>7.2f}{} (bar >= {:g}{}): {}", what, got, unit, need, unit,
                               got >= need ? "met" : "NOT met"));
  };
  const bool amx = tk::onednn_has_amx();
  for (const auto& model : models) {
    const auto in = tm::default_input_shape(model);
    std::printf("\n== %s on %lldx%lldx%lld, fp32\n", model.c_str(), static_cast<long long>(in.c),
                static_cast<long long>(in.h), static_cast<long long>(in.w));
    std::vector<Row> rows;
    double flops = 0;
    std::string note;
    std::map<std::int64_t, double> torch;
    // Ours and PyTorch alternate batch by batch, so that a change in the machine's load (it is
    // shared) hits both sides of each ratio alike.
    for (std::int64_t b : batches) {
      const Measures m = measure(backend, model, b, bf16, seconds, verbose, phases, &flops);
      rows.push_back(Row{b, m.fp32, m.bf16, m.bf16_emulated});
      const bool torch_missing = note.find("skipped") != std::string::npos || note.find("failed") != std::string::npos;
      if (script != "none" && !torch_missing)
        for (const auto& [batch, rate] : pytorch_baseline(script, model, std::to_string(b), threads, seconds, note))
          torch[batch] = rate;
    }
    std::printf("%6s %11s %9s %8s %8s %8s %8s %11s %9s\n", "batch", "samples/s", "step_ms", "GFLOP/s", "%mm2048",
                "onednn%", "data_ms", "torch_s/s", "ours/pt");
    for (const auto& r : rows) {
      const double gf = flops * static_cast<double>(r.batch) / r.fp32.step_s / 1e9;
      const auto t = torch.find(r.batch);
      const double ours = static_cast<double>(r.batch) / r.fp32.step_s;
      std::printf("%6lld %11.0f %9.3f %8.1f %7.1f%% %7.1f%% %8.3f", static_cast<long long>(r.batch), ours,
                  r.fp32.step_s * 1e3, gf, 100.0 * gf / mm, 100.0 * r.fp32.onednn_s / r.fp32.step_s, r.fp32.data_s * 1e3);
      const double share = 100.0 * gf / mm;
      if (model == "mlp" && r.batch == 64) bar("mlp batch 64, % of the f32 matmul ceiling", share, 75, "%");
      if (model == "mlp" && r.batch == 256) bar("mlp batch 256, % of the f32 matmul ceiling", share, 90, "%");
      if (model == "cnn") bar(fmt::format("cnn batch {}, % of the f32 matmul ceiling", r.batch), share, 95, "%");
      if (t != torch.end()) std::printf(" %11.0f %8.2fx\n", t->second, ours / t->second);
      else std::printf(" %11s %9s\n", "-", "-");
    }
    if (!note.empty()) std::printf("pytorch: %s\n", note.c_str());
    if (phases) {
      std::printf("-- %s phases of the best repetition (ms/step): forward+loss, backward without updates, updates\n",
                  model.c_str());
      std::printf("%6s %9s %9s %9s %9s\n", "batch", "step", "fwd+loss", "backward", "update");
      for (const auto& r : rows)
        std::printf("%6lld %9.3f %9.3f %9.3f %9.3f\n", static_cast<long long>(r.batch), r.fp32.step_s * 1e3,
                    r.fp32.fwd_s * 1e3, r.fp32.bwd_s * 1e3, r.fp32.update_s * 1e3);
    }
    if (bf16) {
      const std::string path(tk::bf16_path_name());
      const bool both = path == "native";
      std::printf("-- %s bf16 %s vs fp32 (%s)%s\n", model.c_str(), path.c_str(), tk::bf16_path_description().c_str(),
                  both ? "; and bf16 emulated (bf16_kernels: emulated)" : "");
      std::printf("%6s %9s %11s %11s %9s", "batch", "path", "fp32 s/s", "bf16 s/s", "bf16/fp32");
      if (both) std::printf(" %11s %9s", "emul s/s", "emul/fp32");
      std::printf("\n");
      for (const auto& r : rows) {
        std::printf("%6lld %9s %11.0f %11.0f %8.2fx", static_cast<long long>(r.batch), path.c_str(),
                    r.batch / r.fp32.step_s, r.batch / r.bf16.step_s, r.fp32.step_s / r.bf16.step_s);
        if (both)
          std::printf(" %11.0f %8.2fx", r.batch / r.bf16_emulated.step_s, r.fp32.step_s / r.bf16_emulated.step_s);
        std::printf("\n");
      }
      for (const auto& r : rows)
        if (r.batch >= 1024 && both) {
          const double need = amx ? 2.5 : 1.5;
          bar(fmt::format("{} batch {}, bf16 native / fp32 ({})", model, r.batch, amx ? "AMX" : "AVX512-BF16"),
              r.fp32.step_s / r.bf16.step_s, need, "x");
          // Without AMX the instruction's own rate bounds the kernels': say when it rules the bar out.
          if (!amx && peak.measured && peak.ratio() < need)
            bars.back() += fmt::format(" -- out of reach on this CPU: its bf16 dot product peaks at {:.2f}x its fp32 "
                                       "FMA",
                                       peak.ratio());
        }
    }
    std::fflush(stdout);
  }
  if (!bars.empty()) {
    std::printf("\n-- bars (a bar at a batch or model this run did not measure is not listed)\n");
    for (const auto& b : bars) std::printf("%s\n", b.c_str());
  }
  std::printf(
      "\ncolumns: GFLOP/s = FLOPs the step executes (from the layer graph) / step time; %%mm2048 = that / the 2048^3\n"
      "matmul; onednn%% = time inside oneDNN primitives (a separate profiled repetition); data_ms = batch gather\n"
      "(not part of the step); torch_s/s = PyTorch's samples/s for the same model, step and threads; ours/pt = ratio.\n");
  std::printf("reproduce: cmake --build BUILD --target bench_trainer_throughput && %s", argv[0]);
  for (int i = 1; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("%s\n", argc == 1 ? " --threads 2 --models mlp,cnn --batches 64,256,1024,4096 --seconds 2" : "");
  return 0;
}
