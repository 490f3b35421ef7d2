// search_latency.cpp — how long one suggestion takes with a long history: each sampler's
// next() with 1000 finished trials (and 8 running) on the schedule space, mean over 50
// suggestions (5 for gp and auto, whose Gaussian process costs O(n³) per fit). Bar for tpe:
// <= 5 ms per suggestion. gp's cost grows with the history: run it at --trials 100, 300, 1000.
//
// usage: bench_search_latency [--trials N]
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "search/random_sampler.hpp"
#include "search/sampler.hpp"
#include "search_functions.hpp"

using namespace dlsweep::search;

int main(int argc, char** argv) {
  int finished = 1000;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--trials") && i + 1 < argc) finished = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--trials N]\n", argv[0]);
      return 2;
    }
  }
  const Space space = bench::schedule_space();
  RandomSampler filler(space, 1);
  History h;
  h.maximize = false;
  for (int n = 0; n < finished + 8; ++n) {
    TrialRecord t;
    t.number = n;
    t.params = *filler.next(n, h);
    if (n < finished) {
      t.status = TrialStatus::complete;
      t.value = bench::schedule(t.params);
    }
    h.trials.push_back(std::move(t));
  }
  fmt::print("suggestion latency with {} finished + 8 running trials (schedule space, 4 params)\n\n", finished);
  // Wall time, and this process's CPU time (what the suggestion costs when the machine is
  // shared: it does not count the time other processes held the core).
  fmt::print("| sampler | wall ms per suggestion | CPU ms per suggestion |\n|---|---|---|\n");
  for (const auto& [algo, options] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"random", nullptr}, {"qmc", nullptr}, {"tpe", nullptr}, {"tpe", {{"multivariate", true}}}, {"cmaes", nullptr},
           {"gp", nullptr}, {"auto", nullptr}}) {
    auto sampler = std::move(*make_sampler(algo, space, 7, options));
    const int kReps = algo == "gp" || algo == "auto" ? 5 : 50;
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    for (int r = 0; r < kReps; ++r) (void)sampler->next(finished + 8 + r, h);
    const double cpu_ms = 1000.0 * double(std::clock() - c0) / CLOCKS_PER_SEC / kReps;
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / kReps;
    fmt::print("| {}{} | {:.3f} | {:.3f} |\n", algo, options.is_null() ? "" : " " + options.dump(), ms, cpu_ms);
  }
  fmt::print("\nreproduce: bench_search_latency --trials {}\n", finished);
  return 0;
}
