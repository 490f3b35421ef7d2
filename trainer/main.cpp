// main.cpp — dlsweep-train: the embedded trainer, a standalone program that speaks the trial
// protocol (common/protocol.hpp). Usage:
//     dlsweep-train [--params FILE] [--trial-dir DIR]
// The trial directory is --trial-dir, else $DLSWEEP_TRIAL_DIR; params default to
// DIR/params.json; metrics go to DIR/metrics.jsonl; DIR/control.json is watched for stop.
//
// Exit status (the orchestrator relies on these):
//   0   done: all epochs trained, a `final` record written
//   1   runtime failure: metrics.jsonl not writable, a oneDNN/system error mid-run
//   2   bad input: command line, params.json (unknown key, bad value), dataset files,
//       batch_size larger than the training set — the message on stderr names the file/key
//       and the fix; retrying cannot help
//   3   diverged: the training loss became non-finite (a `log` record says at which step);
//       deterministic, so retrying the same params cannot help
//   70  internal error (a broken invariant: a bug)
//   75  stopped on request: control.json {"action":"stop"}, or SIGUSR2/SIGTERM/SIGINT; the step
//       in progress is finished, a signal also writes a checkpoint (and a `checkpoint`
//       record), then a `log` record (protocol::kExitStopped). The next start in the same
//       trial directory resumes from the newest valid checkpoint in DIR/checkpoints.
// Under mpirun/srun every rank runs this program; rank 0 alone writes records and checkpoints.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "common/protocol.hpp"
#include "trainer/comm/comm_registry.hpp"
#include "trainer/data/datasets.hpp"
#include "trainer/kernels/kernels_registry.hpp"
#include "trainer/models/model_registry.hpp"
#include "trainer/reporter.hpp"
#include "trainer/stop_monitor.hpp"
#include "trainer/train_config.hpp"
#include "common/train_params.hpp"
#include "trainer/trainer.hpp"

namespace {

namespace dt = dlsweep::trainer;
namespace fs = std::filesystem;

// common/exit_codes.hpp lists them all (and what the orchestrator makes of each).
constexpr int kExitFailure = dlsweep::exit_codes::trial::failure;
constexpr int kExitBadInput = dlsweep::exit_codes::trial::bad_input;
constexpr int kExitDiverged = dlsweep::exit_codes::trial::diverged;
constexpr int kExitInternal = dlsweep::exit_codes::trial::internal;

struct Args {
  std::optional<fs::path> params;
  std::optional<fs::path> trial_dir;
};

void print_help() {
  std::printf(
      "usage: dlsweep-train [--params FILE] [--trial-dir DIR]\n"
      "\n"
      "Trains a model as one dlsweep trial and reports through the trial protocol.\n"
      "  --trial-dir DIR  trial directory (default: $%s); receives %s, watched for %s\n"
      "  --params FILE    hyperparameters (default: DIR/%s)\n"
      "  --help           this text\n"
      "\n"
      "Exit status: 0 done, 1 runtime failure, 2 bad input, 3 diverged (non-finite loss),\n"
      "%d stopped on request (control.json, or SIGUSR2/SIGTERM/SIGINT after a checkpoint).\n"
      "\n"
      "Parameters (params.json keys, default in brackets):\n",
      dlsweep::protocol::kEnvTrialDir, dlsweep::protocol::kMetricsFile, dlsweep::protocol::kControlFile,
      dlsweep::protocol::kParamsFile, dlsweep::protocol::kExitStopped);
  for (const auto& p : dt::param_table()) {
    std::string extra;
    if (!p.allowed.empty()) {
      extra = " {";
      for (std::size_t i = 0; i < p.allowed.size(); ++i) extra += (i ? "|" : "") + p.allowed[i];
      extra += "}";
    }
    std::printf("  %-24s %s%s [%s]\n", p.name.c_str(), p.help.c_str(), extra.c_str(), p.default_value.dump().c_str());
  }
}

/// Plain argv parsing: two options with values, plus --help. Returns the exit code on failure/help.
std::optional<int> parse_args(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&](std::string_view name) -> std::optional<std::string> {
      if (arg.starts_with(std::string(name) + "=")) return std::string(arg.substr(name.size() + 1));
      if (arg == name && i + 1 < argc) return std::string(argv[++i]);
      return std::nullopt;
    };
    if (arg == "--help" || arg == "-h") {
      print_help();
      return 0;
    }
    if (arg.starts_with("--params")) {
      if (auto v = value("--params")) { a.params = *v; continue; }
    } else if (arg.starts_with("--trial-dir")) {
      if (auto v = value("--trial-dir")) { a.trial_dir = *v; continue; }
    }
    std::fprintf(stderr, "dlsweep-train: bad argument '%s' (fix: see dlsweep-train --help)\n", argv[i]);
    return kExitBadInput;
  }
  return std::nullopt;
}

/// Prints `e` on stderr and, when the trial's metrics file is open, also records it there as
/// a `log` record, so the reason a trial failed reaches the study database. Returns `code`.
int report_error(const dlsweep::Error& e, int code, dt::Reporter* reporter,
                 std::chrono::steady_clock::time_point start) {
  std::fprintf(stderr, "dlsweep-train: %s\n", e.message().c_str());
  if (reporter)
    (void)reporter->log("error: " + e.message(), 0, 0, 0,
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return code;
}

int run(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  // From here on SIGTERM/SIGINT only set a flag: a stop during data loading is honoured
  // before the first step instead of killing the process.
  dt::StopMonitor::install_signal_handlers();
  Args args;
  if (auto code = parse_args(argc, argv, args)) return *code;

  fs::path trial_dir;
  if (args.trial_dir) trial_dir = *args.trial_dir;
  else if (const char* env = std::getenv(dlsweep::protocol::kEnvTrialDir); env && *env) trial_dir = env;
  else
    return report_error({"no trial directory", "command line",
                         fmt::format("pass --trial-dir DIR or set {}", dlsweep::protocol::kEnvTrialDir)},
                        kExitBadInput, nullptr, start);
  std::error_code ec;
  fs::create_directories(trial_dir, ec);
  if (!fs::is_directory(trial_dir, ec))
    return report_error({"cannot create the trial directory", trial_dir.string(), "choose a writable location"},
                        kExitBadInput, nullptr, start);
  // Under mpirun/srun only rank 0 writes the trial's records.
  std::optional<dt::Reporter> reporter;
  if (dt::comm::launcher_rank() == 0) {
    auto opened = dt::Reporter::open(trial_dir / dlsweep::protocol::kMetricsFile);
    if (!opened) return report_error(opened.error(), kExitFailure, nullptr, start);
    reporter.emplace(std::move(*opened));
  }
  dt::Reporter* const rep = reporter ? &*reporter : nullptr;

  const fs::path params_file = args.params ? *args.params : trial_dir / dlsweep::protocol::kParamsFile;
  auto config = dt::load_train_config(params_file);
  if (!config) return report_error(config.error(), kExitBadInput, rep, start);

  auto data = dt::data::load_data(dt::data_spec(*config));
  if (!data) return report_error(data.error(), kExitBadInput, rep, start);

  auto comm = dt::comm::make_communicator(config->comm);
  if (!comm) {
    auto e = comm.error();
    if (e.where == "comm") e.where = params_file.string() + ": comm";
    // What this node lacks (no GPU for NCCL, no MPI or NCCL in this build) is a failure another
    // node may not have, not bad input.
    return report_error(e, e.is(dlsweep::ErrorKind::resources) ? kExitFailure : kExitBadInput, rep, start);
  }
  dt::StopMonitor stop(trial_dir / dlsweep::protocol::kControlFile);
  dt::TrainContext ctx;
  ctx.comm = comm->get();
  ctx.reporter = rep;
  ctx.checkpoint_dir = trial_dir / dlsweep::protocol::kCheckpointDir;
  ctx.stop = &stop;
  ctx.progress = stdout;
  ctx.start = start;
  auto trainer = dt::Trainer::create(*config, std::move(*data), ctx);
  if (!trainer) {
    auto e = trainer.error();
    // Errors about a parameter name it bare ("batch_size"): say which file it came from.
    const bool about_param = e.where.find(':') == std::string::npos && dt::find_param(e.where);
    if (about_param) e.where = params_file.string() + ": " + e.where;
    // What the machine lacks (a compute backend that cannot start, bf16 kernels asked for on a
    // CPU without them) is a failure, not bad input: another node may have it.
    const bool bad_input = !e.is(dlsweep::ErrorKind::resources);
    return report_error(e, bad_input ? kExitBadInput : kExitFailure, rep, start);
  }
  auto result = (*trainer)->run();
  if (!result) return report_error(result.error(), kExitFailure, nullptr, start);  // the reporter may be what failed
  switch (result->status) {
    case dt::TrainStatus::done: return dlsweep::protocol::kExitDone;
    case dt::TrainStatus::stopped:
      std::fprintf(stderr, "dlsweep-train: %s\n", result->message.c_str());
      return dlsweep::protocol::kExitStopped;
    case dt::TrainStatus::diverged:
      std::fprintf(stderr, "dlsweep-train: %s (fix: lower base_lr or lengthen warmup_epochs)\n",
                   result->message.c_str());
      return kExitDiverged;
  }
  return kExitInternal;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const dnnl::error& e) {
    std::fprintf(stderr, "dlsweep-train: oneDNN error: %s (status %d)\n", e.what(), static_cast<int>(e.status));
    return kExitFailure;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "dlsweep-train: out of memory (fix: use a smaller batch_size or model)\n");
    return kExitFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlsweep-train: internal error: %s\n", e.what());
    return kExitInternal;
  }
}
