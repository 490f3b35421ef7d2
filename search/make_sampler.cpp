// make_sampler.cpp — the sampler registry: name -> (options reader, constructor).
// Adding a sampler means one row here and its own <name>_sampler.{hpp,cpp}.
#include <fmt/format.h>

#include "search/auto_sampler.hpp"
#include "search/branch_sampler.hpp"
#include "search/cmaes_sampler.hpp"
#include "search/gp_sampler.hpp"
#include "search/grid_sampler.hpp"
#include "search/nsga2_sampler.hpp"
#include "search/pbt_sampler.hpp"
#include "search/qmc_sampler.hpp"
#include "search/random_sampler.hpp"
#include "search/sampler.hpp"
#include "search/tpe_sampler.hpp"

namespace dlsweep::search {

namespace {

struct Entry {
  std::string_view name;
  bool unbounded;  ///< needs search.trials
  std::initializer_list<std::string_view> keys;
  std::unique_ptr<Sampler> (*make)(OptionReader& r, const Space& space, std::uint64_t seed);
};

std::unique_ptr<Sampler> make_grid(OptionReader& r, const Space& space, std::uint64_t) {
  r.only({});
  for (const auto& d : space.dims)
    if (d.cardinality() <= 0)
      r.error("", fmt::format("grid search cannot enumerate the continuous range of '{}'", d.name),
              "give a list of values, or use algorithm: random, qmc or tpe");
  if (!r.errors().empty()) return nullptr;
  return std::make_unique<GridSampler>(space);
}

std::unique_ptr<Sampler> make_random(OptionReader& r, const Space& space, std::uint64_t seed) {
  r.only({});
  if (!r.errors().empty()) return nullptr;
  return std::make_unique<RandomSampler>(space, seed);
}

std::unique_ptr<Sampler> make_qmc(OptionReader& r, const Space& space, std::uint64_t seed) {
  r.only({"scramble"});
  const bool scramble = r.boolean("scramble", true);
  if (space.dims.size() > Sobol::kMaxDims)
    r.error("", fmt::format("qmc supports at most {} varied parameters", Sobol::kMaxDims), "use algorithm: random");
  if (!r.errors().empty()) return nullptr;
  return std::make_unique<QmcSampler>(space, seed, scramble);
}

std::unique_ptr<Sampler> make_tpe(OptionReader& r, const Space& space, std::uint64_t seed) {
  r.only({"startup_trials", "ei_candidates", "gamma", "gamma_cap", "prior_weight", "multivariate", "constant_liar", "equal_height", "startup"});
  const TpeOptions o = TpeOptions::read(r);
  if (!r.errors().empty()) return nullptr;
  return std::make_unique<TpeSampler>(space, seed, o);
}

std::unique_ptr<Sampler> make_nsga2(OptionReader& r, const Space& space, std::uint64_t seed) {
  r.only({"population_size", "crossover_prob", "mutation_prob", "swapping_prob", "startup", "crossover",
          "crossover_alpha", "crossover_eta", "crossover_sigma_xi", "crossover_sigma_eta", "crossover_epsilon"});
  const Nsga2Options o = Nsga2Options::read(r);
  if (!r.errors().empty()) return nullptr;
  return std::make_unique<Nsga2Sampler>(space, seed, o);
}

std::unique_ptr<Sampler> make_pbt(OptionReader& r, const Space& space, std::uint64_t seed) {
  r.only({"population", "generations", "interval", "quantile", "resample_probability", "perturb"});
  PbtOptions o = PbtOptions::read(r, space);
  if (!r.errors().empty()) return nullptr;
  return std::make_unique<PbtSampler>(space, seed, std::move(o));
}

#define DLSWEEP_BRANCH_KEYS \
  {"points", "by", "batches", "delta", "tolerance", "seeds", "max_seeds", "lr_factors", "end", "generations", \
   "scan", "trunk_to_end"}

std::unique_ptr<Sampler> make_branch(OptionReader& r, const Space& space, std::uint64_t) {
  BranchOptions o = BranchOptions::read(r, space);
  if (!r.errors().empty()) return nullptr;
  return std::make_unique<BranchSampler>(space, std::move(o));
}

#define DLSWEEP_GP_KEYS \
  {"startup_trials", "startup", "candidates", "local_starts", "fit_restarts", "deterministic_objective", "constant_liar", "multi_objective"}
#define DLSWEEP_CMAES_KEYS {"sigma0", "popsize", "restart_strategy", "inc_popsize", "warm_start_fraction"}

std::unique_ptr<Sampler> make_gp(OptionReader& r, const Space& space, std::uint64_t seed) {
  r.only(DLSWEEP_GP_KEYS);
  const GpOptions o = GpOptions::read(r);
  if (!r.errors().empty()) return nullptr;
  return std::make_unique<GpSampler>(space, seed, o);
}

std::unique_ptr<Sampler> make_cmaes(OptionReader& r, const Space& space, std::uint64_t seed) {
  r.only(DLSWEEP_CMAES_KEYS);
  const CmaesOptions o = CmaesOptions::read(r);
  bool numeric = false;
  for (const auto& d : space.dims) numeric = numeric || (d.kind != Dimension::Kind::choice && d.when.empty());
  if (!numeric)
    r.error("", "cmaes searches numeric parameters, and this space has none outside `when:`",
            "use algorithm: tpe (or auto) for a categorical or conditional space");
  if (!r.errors().empty()) return nullptr;
  return std::make_unique<CmaesSampler>(space, seed, o);
}

std::unique_ptr<Sampler> make_auto(OptionReader& r, const Space& space, std::uint64_t seed) {
  r.only({"auto_gp_trials"});
  const auto gp_trials = r.integer("auto_gp_trials", 250, 0, 1'000'000);
  if (!r.errors().empty()) return nullptr;
  return std::make_unique<AutoSampler>(space, seed, gp_trials);
}

const Entry kRegistry[] = {
    {"grid", false, {}, make_grid},
    {"random", true, {}, make_random},
    {"qmc", true, {"scramble"}, make_qmc},
    {"tpe", true, {"startup_trials", "ei_candidates", "gamma", "gamma_cap", "prior_weight", "multivariate", "constant_liar", "equal_height", "startup"}, make_tpe},
    {"nsga2", true, {"population_size", "crossover_prob", "mutation_prob", "swapping_prob", "startup", "crossover",
               "crossover_alpha", "crossover_eta", "crossover_sigma_xi", "crossover_sigma_eta", "crossover_epsilon"},
     make_nsga2},
    {"pbt", false, {"population", "generations", "interval", "quantile", "resample_probability", "perturb"}, make_pbt},
    {"branch", false, DLSWEEP_BRANCH_KEYS, make_branch},
    {"gp", true, DLSWEEP_GP_KEYS, make_gp},
    {"cmaes", true, DLSWEEP_CMAES_KEYS, make_cmaes},
    {"auto", true, {"auto_gp_trials"}, make_auto},
};

}  // namespace

SamplerResult make_sampler(const std::string& algorithm, const Space& space, std::uint64_t seed,
                           const nlohmann::json& options) {
  for (const auto& e : kRegistry) {
    if (e.name != algorithm) continue;
    OptionReader r(options, std::string(e.name));
    auto s = e.make(r, space, seed);
    if (!s) return std::unexpected(r.take_errors());
    return s;
  }
  std::string names;
  for (const auto& e : kRegistry) names += (names.empty() ? "" : ", ") + std::string(e.name);
  return std::unexpected(std::vector<OptionError>{
      {"algorithm", fmt::format("unknown search algorithm '{}'", algorithm), fmt::format("use one of: {}", names)}});
}

std::vector<std::string_view> sampler_names() {
  std::vector<std::string_view> out;
  for (const auto& e : kRegistry) out.push_back(e.name);
  return out;
}

std::vector<std::string_view> sampler_option_keys(const std::string& algorithm) {
  for (const auto& e : kRegistry)
    if (e.name == algorithm) return std::vector<std::string_view>(e.keys);
  return {};
}

bool sampler_is_unbounded(const std::string& algorithm) {
  for (const auto& e : kRegistry)
    if (e.name == algorithm) return e.unbounded;
  return false;
}

bool sampler_learns_from_history(const std::string& algorithm) {
  return algorithm == "tpe" || algorithm == "nsga2" || algorithm == "gp" || algorithm == "cmaes" || algorithm == "auto";
}

}  // namespace dlsweep::search
