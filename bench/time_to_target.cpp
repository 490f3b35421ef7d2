// bench_time_to_target — dlsweep-train as a whole process, from start to the target accuracy,
// and the same recipe in PyTorch in the same run (bench/pytorch_time_to_target.py).
//
// Recipe: MLP 784-512-512-10 on Fashion-MNIST, inputs standardised with the training set's
// mean and std (dlsweep-train `standardize: true`; the PyTorch script does the same), batch
// 256, SGD momentum 0.9, base LR 0.1 at batch 256 (linear rule), cosine decay over --epochs,
// evaluation on the 10k test images every 0.25 epoch, --threads threads. Per run:
//   time to target = the program's own clock at the first evaluation with val_acc >= target
//                    (both programs start their clock at their first statement) plus the time
//                    from spawning it to that first statement, bounded above by
//                    (wall time of the whole process) - (the program's clock at its last record);
//   start-up       = the program's clock when training starts (data loaded, model built);
//                    share = start-up / time to target.
// dlsweep-train runs once with an empty IDX cache (cold: inflates the .gz files) and then
// --repeat times with it filled (warm); PyTorch --repeat times. Medians are printed.
//
//   bench_time_to_target --threads 2 --epochs 6 --repeat 3
//   bench_time_to_target --device cuda --repeat 3    (both programs on the GPU: data, model, evaluation)
#include <fcntl.h>
#include <sys/wait.h>
#include <spawn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#ifndef DLSWEEP_TRAIN_BIN
#define DLSWEEP_TRAIN_BIN "dlsweep-train"
#endif
#ifndef DLSWEEP_PYTORCH_TTT
#define DLSWEEP_PYTORCH_TTT "pytorch_time_to_target.py"
#endif
#ifndef DLSWEEP_FMNIST_DIR
#define DLSWEEP_FMNIST_DIR "/usr/share/datasets/fashion-mnist"
#endif

extern char** environ;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct Run {
  std::optional<double> to_target;  ///< seconds from spawn; nullopt: target not reached
  double startup = 0, total = 0;
  double epoch = 0;
};

// Spawns argv with extra environment, waits; returns the wall seconds.
double spawn_wait(const std::vector<std::string>& argv, const std::vector<std::string>& env_extra, const fs::path& out) {
  std::vector<std::string> env_s(env_extra);
  for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
  std::vector<char*> a, e;
  for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  for (auto& s : env_s) e.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  e.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = 0;
  if (posix_spawnp(&pid, a[0], &fa, nullptr, a.data(), e.data()) != 0) {
    std::fprintf(stderr, "bench_time_to_target: cannot start %s\n", argv[0].c_str());
    std::exit(1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  posix_spawn_file_actions_destroy(&fa);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "bench_time_to_target: %s failed (see %s)\n", argv[0].c_str(), out.c_str());
    std::exit(1);
  }
  return wall;
}

// Reads JSON-lines records: the first "log" (training starts), evals, the last record.
Run read_records(const fs::path& file, double wall, double target) {
  Run r;
  r.total = wall;
  std::ifstream in(file);
  std::string line;
  double last = 0;
  bool have_start = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '{') continue;
    const auto j = json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    const double w = j.value("wall_s", 0.0);
    last = std::max(last, w);
    const std::string kind = j.value("kind", "");
    if (kind == "log" && !have_start) r.startup = w, have_start = true;
    if (kind == "eval" && !r.to_target && j.contains("metrics") && j["metrics"].value("val_acc", 0.0) >= target) {
      r.to_target = w;
      r.epoch = j.value("epoch", 0.0);
    }
  }
  const double launch = std::max(0.0, wall - last);  // spawn -> first statement, and exit, at most
  if (r.to_target) *r.to_target += launch;
  r.startup += launch;
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void print_row(const char* name, const std::vector<Run>& runs) {
  std::vector<double> ttt, st, ep;
  int missed = 0;
  for (const auto& r : runs) {
    if (!r.to_target) {
      ++missed;
      continue;
    }
    ttt.push_back(*r.to_target);
    st.push_back(r.startup);
    ep.push_back(r.epoch);
  }
  if (ttt.empty()) {
    std::printf("%-22s target not reached in %zu run(s)\n", name, runs.size());
    return;
  }
  const double t = median(ttt), s = median(st);
  std::printf("%-22s %10.2f s %10.2f s %8.0f%% %8.2f %6zu%s\n", name, t, s, 100.0 * s / t, median(ep), ttt.size(),
              missed ? " (some runs missed the target)" : "");
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, repeat = 3;
  std::string device = "cpu";
  double epochs = 6, target = 0.88;
  std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3", train_bin = DLSWEEP_TRAIN_BIN, data_dir = DLSWEEP_FMNIST_DIR;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads") threads = std::stoi(next());
    else if (a == "--repeat") repeat = std::stoi(next());
    else if (a == "--epochs") epochs = std::stod(next());
    else if (a == "--target") target = std::stod(next());
    else if (a == "--python") python = next();
    else if (a == "--train-bin") train_bin = next();
    else if (a == "--data-dir") data_dir = next();
    else if (a == "--device") device = next();
    else {
      std::fprintf(stderr,
                   "usage: bench_time_to_target [--threads 2] [--epochs 6] [--target 0.88] [--repeat 3] "
                   "[--python PATH|none] [--train-bin PATH] [--data-dir DIR] [--device cpu|cuda]\n");
      return 2;
    }
  }
  const fs::path work = fs::temp_directory_path() / ("dlsweep-ttt-" + std::to_string(::getpid()));
  fs::create_directories(work);
  const json params = {{"model", "mlp"},          {"dataset", "fashion-mnist"}, {"data_dir", data_dir},
                       {"batch_size", 256},       {"base_batch", 256},          {"base_lr", 0.1},
                       {"lr_rule", "linear"},     {"decay", "cosine"},          {"momentum", 0.9},
                       {"epochs", epochs},        {"eval_every", 0.25},         {"threads", threads},
                       {"seed", 1},               {"noise_scale_every", 0},     {"checkpoint_every_s", 0},
                       {"standardize", true},     {"device", device}};
  std::printf("bench_time_to_target: MLP 784-512-512-10, Fashion-MNIST standardised, batch 256, SGD momentum, lr 0.1 linear, "
              "cosine over %g epochs, eval every 0.25 epoch, %d thread(s), target val_acc %.2f, device %s (both programs)\n",
              epochs, threads, target, device.c_str());
  std::printf("command: bench_time_to_target --threads %d --epochs %g --target %g --repeat %d --device %s\n", threads,
              epochs, target, repeat, device.c_str());

  auto run_ours = [&](const fs::path& cache, int k) {
    const fs::path dir = work / ("ours-" + std::to_string(k));
    fs::create_directories(dir);
    std::ofstream(dir / "params.json") << params.dump();
    const double wall = spawn_wait({train_bin, "--trial-dir", dir.string()},
                                   {"DLSWEEP_DATA_CACHE=" + cache.string(), "OMP_NUM_THREADS=" + std::to_string(threads)},
                                   dir / "stdout.txt");
    return read_records(dir / "metrics.jsonl", wall, target);
  };
  const fs::path cache = work / "idx-cache";
  std::vector<Run> cold{run_ours(cache, 0)}, warm;
  for (int k = 1; k <= repeat; ++k) warm.push_back(run_ours(cache, k));
  std::vector<Run> torch;
  // Debian's python3-torch runs Linear layers through the system BLAS: OpenBLAS's OpenMP build
  // is the one that does not fight torch's own threads (as bench_trainer_throughput does).
  std::vector<std::string> torch_env{"OMP_NUM_THREADS=" + std::to_string(threads)};
  if (fs::exists("/usr/lib/x86_64-linux-gnu/openblas-openmp"))
    torch_env.push_back("LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp");
  if (python != "none") {
    for (int k = 0; k < repeat; ++k) {
      const fs::path out = work / ("torch-" + std::to_string(k) + ".jsonl");
      const double wall = spawn_wait({python, DLSWEEP_PYTORCH_TTT, "--threads", std::to_string(threads), "--epochs",
                                      std::to_string(epochs), "--data-dir", data_dir, "--device", device, "--out",
                                      out.string()},
                                     torch_env, work / "torch-stdout.txt");
      torch.push_back(read_records(out, wall, target));
    }
  }
  std::printf("\n%-22s %12s %12s %9s %8s %6s\n", "program", "to target", "start-up", "share", "epochs", "runs");
  print_row("dlsweep-train (cold)", cold);
  print_row("dlsweep-train (warm)", warm);
  if (!torch.empty()) print_row("pytorch", torch);
  std::vector<double> w, p;
  for (const auto& r : warm)
    if (r.to_target) w.push_back(*r.to_target);
  for (const auto& r : torch)
    if (r.to_target) p.push_back(*r.to_target);
  if (!w.empty() && !p.empty()) std::printf("\nours (warm) / pytorch time to target: %.2fx\n", median(w) / median(p));
  std::error_code ec;
  fs::remove_all(work, ec);
  return 0;
}
