// warm_start_quality.cpp — what `search.warm_start` buys: the number of trials TPE needs to
// reach the regret random search reaches in 100 trials, cold vs warm-started from an
// earlier study of the same function, median [p25, p75] over seeds.
//
// Per seed s: random search (seed s) runs 100 trials; its regret (true value of the trial
// with the best observed value, minus the optimum) is the target. Cold TPE (seed s) and
// warm-started TPE (seed s, its history seeded with the COMPLETE trials of an earlier study
// of the same function: 50 trials of random search, or of TPE, seed 1000 + s, numbered
// -50..-1 as engine/warm_start_load numbers them) run until their own trials reach the
// target, at most --cap trials. Only a study's own trials count: the earlier trials are
// evidence for the sampler, not this study's results (as `best` treats them). Functions and
// noise as bench_search_quality (bench/search_functions.hpp): Branin (noiseless) and the
// schedule-shaped function (Gaussian noise sd 0.02 on every evaluation, earlier ones too).
//
// usage: bench_warm_start_quality [--seeds N] [--earlier N] [--cap N]
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_stats.hpp"
#include "search/random_sampler.hpp"
#include "search/sampler.hpp"
#include "search_functions.hpp"

namespace {

using namespace dlsweep::search;

struct Function {
  std::string name;
  Space space;
  double (*f)(const Params&);
  double optimum;
  double noise;
};

// One evaluation: the true value and the observed (noisy) one, noise keyed by (seed, n).
struct Eval {
  double truth, observed;
};

Eval evaluate(const Function& fn, const Params& p, std::uint64_t noise_seed, std::int64_t n) {
  const double truth = fn.f(p);
  double observed = truth;
  if (fn.noise > 0) {  // Box–Muller
    SplitMix64 rng(SplitMix64::mix(noise_seed * 7919 + 17) ^ static_cast<std::uint64_t>(n + 1000000));
    const double u1 = rng.next_unit() + 1e-300, u2 = rng.next_unit();
    observed += fn.noise * std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  return {truth, observed};
}

TrialRecord complete(std::int64_t n, const Params& p, double value) {
  TrialRecord t;
  t.number = n;
  t.params = p;
  t.status = TrialStatus::complete;
  t.value = value;
  return t;
}

// Runs `algo` for up to `cap` trials on top of `history` (warm-start records, or none);
// returns the regret after each of its own trials (stops early once <= stop_at).
std::vector<double> run(const std::string& algo, const Function& fn, std::uint64_t seed, History history, int cap,
                        double stop_at, std::uint64_t noise_seed) {
  auto sampler = std::move(*make_sampler(algo, fn.space, seed, nullptr));
  history.maximize = false;
  double best_observed = 1e300, best_truth = 1e300;
  std::vector<double> regret;
  for (int n = 0; n < cap; ++n) {
    auto p = *sampler->next(n, history);
    const Eval e = evaluate(fn, p, noise_seed, n);
    history.trials.push_back(complete(n, p, e.observed));
    if (e.observed < best_observed) {
      best_observed = e.observed;
      best_truth = e.truth;
    }
    regret.push_back(best_truth - fn.optimum);
    if (regret.back() <= stop_at) break;
  }
  return regret;
}

// The earlier study: `n` trials of `algo` (seed 1000 + s), as warm-start records -n..-1.
History earlier_study(const std::string& algo, const Function& fn, std::uint64_t s, int n) {
  auto sampler = std::move(*make_sampler(algo, fn.space, 1000 + s, nullptr));
  History h;
  h.maximize = false;
  for (int i = 0; i < n; ++i) {
    auto p = *sampler->next(i, h);
    h.trials.push_back(complete(i, p, evaluate(fn, p, 1000 + s, i).observed));
  }
  for (auto& t : h.trials) t.number -= n;
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  int seeds = 10, earlier = 50, cap = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--seeds")) seeds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--earlier")) earlier = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--cap")) cap = std::atoi(argv[i + 1]);
    else {
      fmt::print(stderr, "usage: bench_warm_start_quality [--seeds N] [--earlier N] [--cap N]\n");
      return 2;
    }
  }
  const std::vector<Function> fns = {
      {"branin", bench::branin_space(), bench::branin, 0.397887, 0.0},
      {"schedule", bench::schedule_space(), bench::schedule, 0.0, 0.02},
  };
  fmt::print("warm start: TPE trials to reach random search's 100-trial regret, median [p25, p75] over {} seeds\n"
             "(earlier study: {} trials, seed 1000+s; cap {} trials, a run that never reaches it counts as {})\n\n",
             seeds, earlier, cap, cap);
  fmt::print("| function | random@100 regret | cold TPE | TPE warm from {} random | TPE warm from {} TPE |\n", earlier,
             earlier);
  fmt::print("|---|---|---|---|---|\n");
  for (const auto& fn : fns) {
    std::vector<double> target, cold, warm_random, warm_tpe;
    int missed[3] = {0, 0, 0};
    for (int s = 1; s <= seeds; ++s) {
      const auto r = run("random", fn, s, History{}, 100, -1e300, s);
      target.push_back(r.back());
      auto needed = [&](const History& h, int& miss) {
        const auto reg = run("tpe", fn, s, h, cap, r.back(), s);
        if (reg.back() > r.back()) { ++miss; return double(cap); }
        return double(reg.size());
      };
      cold.push_back(needed(History{}, missed[0]));
      warm_random.push_back(needed(earlier_study("random", fn, s, earlier), missed[1]));
      warm_tpe.push_back(needed(earlier_study("tpe", fn, s, earlier), missed[2]));
    }
    auto cell = [&](const std::vector<double>& v, int miss) {
      return fmt::format("{:.0f} [{:.0f}, {:.0f}]{}", bench::quantile(v, 0.5), bench::quantile(v, 0.25),
                         bench::quantile(v, 0.75), miss ? fmt::format(" ({} not reached)", miss) : "");
    };
    fmt::print("| {} | {:.4g} [{:.3g}, {:.3g}] | {} | {} | {} |\n", fn.name, bench::quantile(target, 0.5),
               bench::quantile(target, 0.25), bench::quantile(target, 0.75), cell(cold, missed[0]),
               cell(warm_random, missed[1]), cell(warm_tpe, missed[2]));
  }
  fmt::print("\ncommand: bench_warm_start_quality --seeds {} --earlier {} --cap {}\n", seeds, earlier, cap);
  return 0;
}
