// `search: {algorithm: pbt}` in a study file (study/pbt.hpp): generations completed from the
// trainer's epochs or from trials, the budget, and each refusal at its key path with a fix.
#include <catch2/catch.hpp>

#include <string>

#include "study/growth.hpp"
#include "study/spec.hpp"
#include "study_test_support.hpp"

using namespace dlsweep::orch;
using study_test::error_at;
using study_test::messages;

namespace {

std::string trainer_study(const std::string& search, const std::string& rest = "") {
  return "name: p\ntrial:\n  trainer: {model: mlp, hidden: [32], dataset: fashion-mnist, epochs: 7}\n"
         "objective: {metric: val_acc, mode: max}\n"
         "space: {base_lr: {log_uniform: [0.01, 1]}, batch_size: [64, 128, 256]}\n"
         "search: " + search + "\n" + rest;
}

std::string program_study(const std::string& search, const std::string& rest = "") {
  return "name: p\ntrial: {command: [prog]}\nobjective: {metric: acc, mode: max}\n"
         "space: {lr: {log_uniform: [0.01, 1]}, width: {int: [8, 64]}}\n"
         "search: " + search + "\n" + rest;
}

const char* kPbt = "{algorithm: pbt, population: 4, interval: {by: epoch, every: 2}, perturb: {base_lr: [0.8, 1.25], batch_size: [0.5, 2]}}";

}  // namespace

TEST_CASE("pbt study: dlsweep-train's generations follow from epochs; the budget is population x generations",
          "[study][pbt]") {
  auto r = parse_study(trainer_study(kPbt), StudyFormat::yaml, "s.yaml");
  INFO(messages(r));
  REQUIRE(r);
  CHECK(r->search.options["generations"] == 4);  // ceil(7 / 2)
  CHECK(trial_budget(*r) == 16);
  // The normalised spec (what the database stores) reads back the same.
  auto again = parse_study(r->to_json().dump(), StudyFormat::json, "s.json");
  INFO(messages(again));
  REQUIRE(again);
  CHECK(again->search.options == r->search.options);
  CHECK_FALSE(enqueue_supported(*r, "p"));
  CHECK_FALSE(grow_trial_budget(*r, r->to_json().dump(), 4, "p"));
}

TEST_CASE("pbt study: a user program needs generations or trials", "[study][pbt]") {
  const std::string base = "{algorithm: pbt, population: 4, interval: {by: step, every: 100}, perturb: {lr: [0.8, 1.25]}";
  auto with_trials = parse_study(program_study(base + ", trials: 12}"), StudyFormat::yaml, "s.yaml");
  INFO(messages(with_trials));
  REQUIRE(with_trials);
  CHECK(with_trials->search.options["generations"] == 3);
  auto with_generations = parse_study(program_study(base + ", generations: 5}"), StudyFormat::yaml, "s.yaml");
  REQUIRE(with_generations);
  CHECK(trial_budget(*with_generations) == 20);
  auto neither = parse_study(program_study(base + "}"), StudyFormat::yaml, "s.yaml");
  REQUIRE(error_at(neither, "search.generations"));
  CHECK(error_at(neither, "search.generations")->fix.find("trials") != std::string::npos);
  auto odd = parse_study(program_study(base + ", trials: 10}"), StudyFormat::yaml, "s.yaml");
  REQUIRE(error_at(odd, "search.trials"));
  CHECK(error_at(odd, "search.trials")->fix.find("multiple of population") != std::string::npos);
  // The one mistake is the trials: not also "needs a number of generations" (trials gave it).
  CHECK(odd.error().size() == 1);
  auto both = parse_study(program_study(base + ", trials: 8, generations: 3}"), StudyFormat::yaml, "s.yaml");
  REQUIRE(error_at(both, "search.trials"));
}

TEST_CASE("pbt study: mistakes are refused at their key path", "[study][pbt]") {
  struct Bad {
    std::string text, key, fix;
  };
  const std::string pbt = kPbt;
  const std::vector<Bad> bad = {
      {trainer_study(pbt, "pruner: {kind: median}\n"), "pruner.kind", "leave `pruner` out"},
      {trainer_study("{algorithm: pbt, population: 4, interval: {by: step, every: 100}, perturb: {base_lr: [0.8]}}"),
       "search.interval.by", "by: epoch"},
      {trainer_study("{algorithm: pbt, population: 4, interval: {every: 2}, perturb: {momentum: [0.8]}}",
                     "fixed: {momentum: 0.9}\n"),
       "search.perturb.momentum", "perturb"},
      {trainer_study(pbt, "fixed: {lr_schedule: \"0:0.1\"}\n"), "lr_schedule", "remove lr_schedule"},
      {trainer_study("{algorithm: pbt, population: 4, generations: 5, interval: {every: 2}, perturb: {base_lr: [0.8]}}"),
       "search.generations", "ceil(epochs / every) = 4"},
      {trainer_study("{algorithm: pbt, population: 1, interval: {every: 2}, perturb: {base_lr: [0.8]}}"),
       "search.population", ""},
      {trainer_study("{algorithm: pbt, population: 4, quantile: 0.75, interval: {every: 2}, perturb: {base_lr: [0.8]}}"),
       "search.quantile", ""},
      {trainer_study("{algorithm: pbt, population: 4, interval: {every: 2}, perturb: {base_lr: [0, 2]}}"),
       "search.perturb.base_lr", "[0.8, 1.25]"},
      {trainer_study("{algorithm: pbt, population: 4, interval: {every: 2}, perturb: {base_lr: [0.8]}, popuation: 3}"),
       "search.popuation", ""},
      {"name: p\ntrial: {command: [prog]}\nobjective: [{metric: acc, mode: max}, {metric: loss, mode: min}]\n"
       "space: {lr: {log_uniform: [0.01, 1]}}\n"
       "search: {algorithm: pbt, population: 4, generations: 2, interval: {every: 2}, perturb: {lr: [0.8]}}\n",
       "objective", "nsga2"},
  };
  for (const auto& b : bad) {
    auto r = parse_study(b.text, StudyFormat::yaml, "s.yaml");
    INFO(b.text << "\n" << messages(r));
    const ValidationError* e = error_at(r, b.key);
    REQUIRE(e);
    CHECK(e->fix.find(b.fix) != std::string::npos);
  }
}

TEST_CASE("an option of another algorithm or pruner kind names the one that takes it, once", "[study][pbt]") {
  const std::string mo = "name: p\ntrial: {command: [prog]}\nobjective: [{metric: acc, mode: max}, {metric: loss, mode: min}]\n"
                         "space: {lr: {log_uniform: [0.01, 1]}}\n";
  auto r = parse_study(mo + "search: {algorithm: nsga2, trials: 10, resample_probability: 0.2}\n", StudyFormat::yaml,
                       "s.yaml");
  INFO(messages(r));
  const ValidationError* e = error_at(r, "search.resample_probability");
  REQUIRE(e);
  CHECK(e->what == "'resample_probability' is an option of pbt, not of nsga2");
  CHECK(e->fix == "remove it, or set algorithm: pbt to use it");
  CHECK(r.error().size() == 1);  // not also "unknown key" or the sampler's own refusal
  // Several algorithms take it: all named; a pruner's key under another kind alike.
  auto t = parse_study(program_study("{algorithm: random, trials: 5, startup: qmc}"), StudyFormat::yaml, "s.yaml");
  INFO(messages(t));
  const ValidationError* s = error_at(t, "search.startup");
  REQUIRE(s);
  CHECK(s->what == "'startup' is an option of tpe, nsga2 or gp, not of random");
  auto p = parse_study(program_study("{algorithm: random, trials: 5}", "pruner: {kind: median, reduction_factor: 3}\n"),
                       StudyFormat::yaml, "s.yaml");
  INFO(messages(p));
  const ValidationError* k = error_at(p, "pruner.reduction_factor");
  REQUIRE(k);
  CHECK(k->what.find("is an option of") != std::string::npos);
  CHECK(k->what.find("not of median") != std::string::npos);
  // A key no algorithm takes stays "unknown" with the allowed list.
  auto u = parse_study(program_study("{algorithm: random, trials: 5, bogus: 1}"), StudyFormat::yaml, "s.yaml");
  const ValidationError* b = error_at(u, "search.bogus");
  REQUIRE(b);
  CHECK(b->what.find("unknown key") != std::string::npos);
}
