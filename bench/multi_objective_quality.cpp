// multi_objective_quality.cpp — how well each sampler covers a Pareto front: the hypervolume
// of the trials so far after 50, 100 and 200 sequential trials on ZDT1, ZDT2 (Zitzler, Deb,
// Thiele 2000; 10 variables) and a schedule-shaped 2-objective function (the search-quality
// benchmark's schedule loss against a time that falls with the batch size and grows with
// warmup), median over seeds with the 25th–75th percentile. dlsweep nsga2 and tpe (and
// random, for scale) run here; Optuna 3.1's NSGAIISampler and multi-objective TPESampler run
// in the same invocation through bench/optuna_multi_quality.py on the same seeds, and their
// values get the same hypervolume (same reference points). The bar: dlsweep's median >=
// Optuna's median, per function, checkpoint and algorithm.
//
// usage: bench_multi_objective_quality [--seeds N] [--trials 200] [--no-optuna] [--tpe-options JSON]
//        [--nsga2-options JSON] [--algorithms nsga2,tpe,random]
// --nsga2-options (e.g. '{"crossover": "sbx"}') applies to dlsweep's nsga2 only; --algorithms
// runs only the named dlsweep samplers (default all three; also gp, and gp_parego: gp with
// multi_objective: parego).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/pareto.hpp"
#include "search/sampler.hpp"
#include "bench_stats.hpp"
#include "search_functions.hpp"

namespace {

using namespace dlsweep::search;
using bench::real;
using bench::schedule;
using bench::schedule_space;

constexpr int kZdtDims = 10;

Space zdt_space() {
  Space s;
  for (int i = 0; i < kZdtDims; ++i) s.dims.push_back(real("x" + std::to_string(i), 0, 1));
  return s;
}

std::vector<double> zdt(const Params& p, bool second) {
  const double f1 = p["x0"].get<double>();
  double sum = 0;
  for (int i = 1; i < kZdtDims; ++i) sum += p["x" + std::to_string(i)].get<double>();
  const double g = 1 + 9.0 * sum / (kZdtDims - 1);
  const double h = second ? 1 - (f1 / g) * (f1 / g) : 1 - std::sqrt(f1 / g);
  return {f1, g * h};
}

std::vector<double> schedule2(const Params& p) {
  const double k = p["batch_size"].get<double>() / 256.0;
  return {schedule(p), std::sqrt(1.0 / k) + 0.02 * p["warmup_epochs"].get<double>()};
}

struct Function {
  std::string name;
  Space space;
  std::vector<double> (*f)(const Params&);
  dlsweep::Losses reference;
};

std::vector<Function> functions() {
  return {{"zdt1", zdt_space(), [](const Params& p) { return zdt(p, false); }, {1.1, 11}},
          {"zdt2", zdt_space(), [](const Params& p) { return zdt(p, true); }, {1.1, 11}},
          {"schedule2", schedule_space(), schedule2, {2.0, 1.2}}};
}

// Hypervolume of the first n trials at each checkpoint.
std::vector<double> hv_at(const std::vector<dlsweep::Losses>& values, const dlsweep::Losses& ref,
                          const std::vector<int>& checkpoints) {
  std::vector<double> out;
  for (int c : checkpoints) {
    std::vector<dlsweep::Losses> pts(values.begin(), values.begin() + std::min<std::size_t>(c, values.size()));
    out.push_back(dlsweep::hypervolume(pts, ref));
  }
  return out;
}

// Options for dlsweep's tpe (--tpe-options JSON): to compare variants against the same seeds.
nlohmann::json tpe_options = nullptr;
// Options for dlsweep's nsga2 (--nsga2-options JSON), e.g. {"crossover": "sbx"}.
nlohmann::json nsga2_options = nullptr;

nlohmann::json options_for(const std::string& algo) {
  if (algo == "tpe") return tpe_options;
  if (algo == "nsga2") return nsga2_options;
  if (algo == "gp_parego") return {{"multi_objective", "parego"}};  // gp's scalarising variant
  return nullptr;
}

// The sampler's own name: "gp_parego" is gp with multi_objective: parego.
std::string sampler_of(const std::string& algo) { return algo == "gp_parego" ? "gp" : algo; }

std::vector<dlsweep::Losses> run_dlsweep(const Function& fn, const std::string& algo, std::uint64_t seed, int trials) {
  auto made = make_sampler(sampler_of(algo), fn.space, seed, options_for(algo));
  if (!made) {
    for (const auto& e : made.error()) std::fprintf(stderr, "%s options: %s: %s (%s)\n", algo.c_str(), e.key.c_str(), e.what.c_str(), e.fix.c_str());
    std::exit(2);
  }
  auto sampler = std::move(*made);
  History h;
  h.directions = {false, false};
  std::vector<dlsweep::Losses> values;
  for (int i = 0; i < trials; ++i) {
    auto p = *sampler->next(i, h);
    TrialRecord t;
    t.number = i;
    t.params = p;
    t.status = TrialStatus::complete;
    t.values = fn.f(p);
    values.push_back(t.values);
    h.trials.push_back(std::move(t));
  }
  return values;
}

}  // namespace

using bench::quantile;

int main(int argc, char** argv) {
  int seeds = 10, trials = 200;
  bool optuna = true;
  std::string algorithms = "nsga2,tpe,random";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seeds") && i + 1 < argc) seeds = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--trials") && i + 1 < argc) trials = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--no-optuna")) optuna = false;
    else if (!std::strcmp(argv[i], "--tpe-options") && i + 1 < argc) tpe_options = nlohmann::json::parse(argv[++i]);
    else if (!std::strcmp(argv[i], "--nsga2-options") && i + 1 < argc) nsga2_options = nlohmann::json::parse(argv[++i]);
    else if (!std::strcmp(argv[i], "--algorithms") && i + 1 < argc) algorithms = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: %s [--seeds N] [--trials 200] [--no-optuna] [--tpe-options JSON] [--nsga2-options JSON] "
                   "[--algorithms nsga2,tpe,random]\n",
                   argv[0]);
      return 2;
    }
  }
  std::vector<int> checkpoints;
  for (int c : {50, 100, 200})
    if (c <= trials) checkpoints.push_back(c);
  nlohmann::json theirs;
  if (optuna) {
    // Optuna's NSGA-II gets the same crossover kind (with Optuna's default parameters).
    std::string kind = "uniform";
    if (nsga2_options.is_object() && nsga2_options.contains("crossover") && nsga2_options["crossover"].is_string())
      kind = nsga2_options["crossover"].get<std::string>();
    const std::string cmd =
        fmt::format("/usr/bin/python3 {}/optuna_multi_quality.py {} {} 1 {}", DLSWEEP_BENCH_DIR, seeds, trials, kind);
    FILE* pipe = popen(cmd.c_str(), "r");
    std::string text;
    if (pipe) {
      char buf[4096];
      while (std::size_t n = fread(buf, 1, sizeof buf, pipe)) text.append(buf, n);
      if (pclose(pipe) != 0) text.clear();
    }
    theirs = nlohmann::json::parse(text, nullptr, false);
    if (!theirs.is_object()) {
      std::fprintf(stderr, "optuna run failed (needs python3-optuna under /usr/bin/python3); use --no-optuna\n");
      return 1;
    }
  }
  bool pass = true;
  fmt::print("hypervolume (higher is better), median [25th-75th] over {} seeds\n", seeds);
  for (const auto& fn : functions()) {
    std::map<std::string, std::vector<std::vector<double>>> hv;  // sampler -> seed -> checkpoint
    for (const auto& [label, algo] : std::vector<std::pair<std::string, std::string>>{
             {"dlsweep nsga2", "nsga2"}, {"dlsweep tpe", "tpe"}, {"dlsweep gp", "gp"}, {"dlsweep gp_parego", "gp_parego"},
             {"dlsweep random", "random"}}) {
      if (("," + algorithms + ",").find("," + algo + ",") == std::string::npos) continue;
      for (int s = 1; s <= seeds; ++s) hv[label].push_back(hv_at(run_dlsweep(fn, algo, s, trials), fn.reference, checkpoints));
    }
    if (optuna)
      for (const auto& [label, runs] : theirs[fn.name].items())
        for (const auto& run : runs) hv[label].push_back(hv_at(run.get<std::vector<dlsweep::Losses>>(), fn.reference, checkpoints));
    fmt::print("\n{} (reference {})\n", fn.name, nlohmann::json(fn.reference).dump());
    auto median_at = [&](const std::string& label, std::size_t k) {
      std::vector<double> v;
      for (const auto& seed : hv[label]) v.push_back(seed[k]);
      return v;
    };
    for (const auto& [label, runs] : hv) {
      std::string line = fmt::format("  {:<18}", label);
      for (std::size_t k = 0; k < checkpoints.size(); ++k) {
        const auto v = median_at(label, k);
        line += fmt::format("  {:>3}: {:.4f} [{:.4f}-{:.4f}]", checkpoints[k], quantile(v, 0.5), quantile(v, 0.25), quantile(v, 0.75));
      }
      fmt::print("{}\n", line);
    }
    if (!optuna) continue;
    for (const auto& [ours, theirs_label] : std::vector<std::pair<std::string, std::string>>{
             {"dlsweep nsga2", "optuna 3.1 nsga2"}, {"dlsweep tpe", "optuna 3.1 tpe"}})
      for (std::size_t k = 0; k < checkpoints.size(); ++k) {
        if (!hv.count(ours) || !hv.count(theirs_label)) continue;
        const double a = quantile(median_at(ours, k), 0.5), b = quantile(median_at(theirs_label, k), 0.5);
        const bool ok = a >= b;
        pass = pass && ok;
        fmt::print("  {} {} vs {} at {}: {:.4f} vs {:.4f}\n", ok ? "PASS" : "FAIL", ours, theirs_label, checkpoints[k], a, b);
      }
  }
  return pass ? 0 : 1;
}
