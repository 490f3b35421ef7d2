// Good study files: what the StudySpec holds, YAML/JSON equivalence, the to_json round trip,
// load_study on disk and on the shipped examples.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "study/spec.hpp"
#include "search/sampler.hpp"

namespace fs = std::filesystem;
using dlsweep::orch::load_study;
using dlsweep::orch::parse_study;
using dlsweep::orch::StudyFormat;
using dlsweep::orch::StudySpec;
using Kind = dlsweep::search::Dimension::Kind;

namespace {

const char* kYaml = R"(# The quickstart study, every section used.
name: fmnist-quickstart
description: "large-batch schedules on Fashion-MNIST"
backend:
  kind: local
  max_concurrent: 2
trial:
  trainer:
    model: mlp
    epochs: 4
  ranks: 2
  timeout: 600
  max_retries: 1
  env: {OMP_PROC_BIND: "true", OMP_NUM_THREADS: 1}
objective:
  metric: val_acc
  mode: max
  target: 0.88
search:
  algorithm: random
  trials: 12
  seed: 1
space:
  batch_size: [128, 512, 2048]
  lr_rule: {choice: [linear, sqrt]}
  base_lr: {log_uniform: [0.01, 1.0]}
  momentum: {uniform: [0.8, 0.99]}
  warmup_epochs: {int: [0, 6], step: 2}
  hidden: [[256], [512, 512]]
fixed:
  base_batch: 128
  nesterov: true
runs_dir: my-runs
)";

const char* kJson = R"({
  "name": "fmnist-quickstart",
  "description": "large-batch schedules on Fashion-MNIST",
  "backend": {"kind": "local", "max_concurrent": 2},
  "trial": {
    "trainer": {"model": "mlp", "epochs": 4},
    "ranks": 2, "timeout": 600, "max_retries": 1,
    "env": {"OMP_PROC_BIND": "true", "OMP_NUM_THREADS": 1}
  },
  "objective": {"metric": "val_acc", "mode": "max", "target": 0.88},
  "search": {"algorithm": "random", "trials": 12, "seed": 1},
  "space": {
    "batch_size": [128, 512, 2048],
    "lr_rule": {"choice": ["linear", "sqrt"]},
    "base_lr": {"log_uniform": [0.01, 1.0]},
    "momentum": {"uniform": [0.8, 0.99]},
    "warmup_epochs": {"int": [0, 6], "step": 2},
    "hidden": [[256], [512, 512]]
  },
  "fixed": {"base_batch": 128, "nesterov": true},
  "runs_dir": "my-runs"
})";

std::string all_messages(const dlsweep::orch::StudyResult& r) {
  std::string s;
  if (!r)
    for (const auto& e : r.error()) s += e.message() + "\n";
  return s;
}

}  // namespace

TEST_CASE("a full YAML study becomes the StudySpec it describes") {
  auto r = parse_study(kYaml, StudyFormat::yaml, "quick.yaml");
  INFO(all_messages(r));
  REQUIRE(r.has_value());
  const StudySpec& s = *r;
  CHECK(s.name == "fmnist-quickstart");
  CHECK(s.source == "quick.yaml");
  CHECK(s.description == "large-batch schedules on Fashion-MNIST");
  CHECK(s.backend.kind == "local");
  CHECK(s.backend.max_concurrent == 2);
  CHECK(s.trial.embedded);
  CHECK(s.trial.command.empty());
  CHECK(s.trial.ranks == 2);
  CHECK(s.trial.timeout_s == 600);
  CHECK(s.trial.max_retries == 1);
  CHECK(s.trial.env == std::map<std::string, std::string>{{"OMP_NUM_THREADS", "1"}, {"OMP_PROC_BIND", "true"}});
  CHECK(s.objective.metric == "val_acc");
  CHECK(s.objective.mode == "max");
  REQUIRE(s.objective.target.has_value());
  CHECK(*s.objective.target == Approx(0.88));
  CHECK(s.search.algorithm == "random");
  CHECK(s.search.trials == 12);
  CHECK(s.search.seed == 1);
  CHECK(s.runs_dir == "my-runs");

  // Dims keep file order (not alphabetical): the grid order follows it.
  REQUIRE(s.space.dims.size() == 6);
  CHECK(s.space.dims[0].name == "batch_size");
  CHECK(s.space.dims[0].kind == Kind::choice);
  CHECK(s.space.dims[0].choices == std::vector<nlohmann::json>{128, 512, 2048});
  CHECK(s.space.dims[1].name == "lr_rule");
  CHECK(s.space.dims[1].choices == std::vector<nlohmann::json>{"linear", "sqrt"});
  CHECK(s.space.dims[2].name == "base_lr");
  CHECK(s.space.dims[2].kind == Kind::log_uniform);
  CHECK(s.space.dims[2].low == 0.01);
  CHECK(s.space.dims[2].high == 1.0);
  CHECK(s.space.dims[3].kind == Kind::uniform);
  CHECK(s.space.dims[4].kind == Kind::int_range);
  CHECK(s.space.dims[4].int_low == 0);
  CHECK(s.space.dims[4].int_high == 6);
  CHECK(s.space.dims[4].int_step == 2);
  CHECK_FALSE(s.space.dims[4].log);
  CHECK(s.space.dims[5].name == "hidden");
  CHECK(s.space.dims[5].choices == std::vector<nlohmann::json>{{256}, {512, 512}});

  // fixed = trainer settings merged with `fixed`; trainer defaults are not copied in.
  CHECK(s.space.fixed == nlohmann::json{{"model", "mlp"}, {"epochs", 4},
                                        {"base_batch", 128}, {"nesterov", true}});
}

TEST_CASE("the same study in YAML and JSON gives the same spec") {
  auto y = parse_study(kYaml, StudyFormat::yaml, "a.yaml");
  auto j = parse_study(kJson, StudyFormat::json, "a.json");
  INFO(all_messages(y) << all_messages(j));
  REQUIRE(y.has_value());
  REQUIRE(j.has_value());
  CHECK(y->to_json() == j->to_json());
  CHECK(y->to_json().dump() == j->to_json().dump());
}

TEST_CASE("to_json round-trips through parse_study") {
  for (const char* text : {kYaml, static_cast<const char*>(R"(name: cmd.study_2
trial:
  command: [python3, "{study_dir}/train.py", --fast]
objective: {metric: accuracy, mode: min}
space:
  opt.lr: [0.1, 0.2]
  width: {int: [1, 64], log: true}
  dropout: {uniform: [0.0, 0.5]}
search: {algorithm: random, trials: 3}
pruner: {kind: median, by: step, group_by: [width], startup_trials: 3, warmup: 1.5}
fixed: {tag: baseline, layers: [1, 2]}
)"), static_cast<const char*>(R"(
name: new-keys
trial:
  command: [prog]
objective: {metric: loss, mode: min}
space:
  opt: [sgd, lars, larc]
  trust: {log_uniform: [0.0001, 0.01], when: {opt: [lars, larc]}}
  bs: {int: [256, 65536], log: true}
search: {algorithm: tpe, trials: 40, seed: 2, multivariate: true, gamma: 0.2, startup_trials: 8}
pruner: {kind: asha, by: wall_s, min_resource: 30, reduction_factor: 3, group_by: [bs]}
)"), static_cast<const char*>(R"(
name: hb
trial:
  command: [prog]
objective: {metric: loss, mode: min}
space: {x: {uniform: [0, 1]}}
search: {algorithm: qmc, trials: 16, scramble: false}
pruner: {kind: hyperband, by: samples, max_resource: 1000000, min_resource: 10000}
)")}) {
    auto first = parse_study(text, StudyFormat::yaml, "s.yaml");
    INFO(all_messages(first));
    REQUIRE(first.has_value());
    auto text2 = first->to_json().dump(2);
    auto second = parse_study(text2, StudyFormat::json, "stored.json");
    INFO(text2 << "\n" << all_messages(second));
    REQUIRE(second.has_value());
    CHECK(second->to_json() == first->to_json());
    REQUIRE(second->space.dims.size() == first->space.dims.size());
    for (std::size_t i = 0; i < first->space.dims.size(); ++i) CHECK(second->space.dims[i].name == first->space.dims[i].name);
    CHECK(second->trial.embedded == first->trial.embedded);
    CHECK(second->trial.command == first->trial.command);
    CHECK(second->pruner.kind == first->pruner.kind);
    CHECK(second->pruner.by == first->pruner.by);
    CHECK(second->pruner.group_by == first->pruner.group_by);
  }
}

TEST_CASE("pruner: median with its settings; none by default") {
  auto r = parse_study("name: p\ntrial: {trainer: }\nobjective: {metric: val_acc, mode: max}\n"
                       "space: {batch_size: [64, 128]}\n"
                       "pruner: {kind: median, group_by: [batch_size], startup_trials: 3, warmup: 1.5}\n",
                       StudyFormat::yaml, "p.yaml");
  INFO(all_messages(r));
  REQUIRE(r.has_value());
  CHECK(r->pruner.kind == "median");
  CHECK(r->pruner.startup_trials == 3);
  CHECK(r->pruner.warmup == 1.5);
  CHECK(r->pruner.by == "epoch");
  CHECK(r->pruner.group_by == std::vector<std::string>{"batch_size"});
  auto d = parse_study("name: d\ntrial: {trainer: }\nobjective: {metric: val_acc, mode: max}\n", StudyFormat::yaml,
                       "d.yaml");
  REQUIRE(d.has_value());
  CHECK(d->pruner.kind == "none");
}

TEST_CASE("search and pruner options reach the registries; when: is kept in order") {
  auto r = parse_study("name: n\ntrial: {command: [prog]}\nobjective: {metric: loss, mode: min}\n"
                       "space:\n  opt: [sgd, lars]\n  trust: {log_uniform: [0.0001, 0.01], when: {opt: lars}}\n"
                       "search: {algorithm: tpe, trials: 20, constant_liar: false}\n"
                       "pruner: {kind: threshold, upper: 3.5, by: step}\n",
                       StudyFormat::yaml, "n.yaml");
  INFO(all_messages(r));
  REQUIRE(r.has_value());
  CHECK(r->search.algorithm == "tpe");
  CHECK(r->search.options == nlohmann::json{{"constant_liar", false}});
  CHECK(r->pruner.kind == "threshold");
  CHECK(r->pruner.options["upper"] == 3.5);
  CHECK(r->pruner.options["by"] == "step");
  CHECK(r->pruner.warmup == 0);  // threshold's default
  REQUIRE(r->space.dims.size() == 2);
  REQUIRE(r->space.dims[1].when.size() == 1);
  CHECK(r->space.dims[1].when[0].param == "opt");
  CHECK(r->space.dims[1].when[0].values == std::vector<nlohmann::json>{"lars"});
  auto sampler = dlsweep::search::make_sampler(r->search.algorithm, r->space, r->search.seed, r->search.options);
  REQUIRE(sampler);
  auto pruner = dlsweep::search::make_pruner(r->pruner.kind, r->pruner.options);
  REQUIRE(pruner);
  CHECK((*pruner)->axis() == dlsweep::search::Axis::step);
}

TEST_CASE("defaults of a minimal study") {
  auto r = parse_study("name: min\ntrial: {trainer: }\nobjective: {metric: val_loss, mode: min}\n", StudyFormat::yaml,
                       "min.yaml");
  INFO(all_messages(r));
  REQUIRE(r.has_value());
  CHECK(r->backend.kind == "local");
  CHECK(r->backend.max_concurrent == 1);
  CHECK(r->trial.ranks == 1);
  CHECK(r->trial.timeout_s == 0);
  CHECK(r->search.algorithm == "grid");
  CHECK(r->search.trials == 0);
  CHECK(r->search.seed == 0);
  CHECK(r->space.dims.empty());
  CHECK(r->space.fixed == nlohmann::json::object());
  CHECK(r->runs_dir == "dlsweep-runs");
  CHECK_FALSE(r->objective.target.has_value());
  // The normalised form leaves out what is unset.
  auto j = r->to_json();
  CHECK_FALSE(j["trial"].contains("timeout"));
  CHECK_FALSE(j["objective"].contains("target"));
  CHECK_FALSE(j["search"].contains("trials"));
}

TEST_CASE("backend.pending_warn: seconds, 600 by default, any backend, kept by to_json", "[pending]") {
  auto min = parse_study("name: w\ntrial: {command: [p]}\nobjective: {metric: l, mode: min}\n", StudyFormat::yaml,
                         "w.yaml");
  REQUIRE(min.has_value());
  CHECK(min->backend.pending_warn_s == 600);
  CHECK_FALSE(min->to_json()["backend"].contains("pending_warn"));
  const std::pair<const char*, double> cases[] = {
      {"{kind: local, pending_warn: 90}", 90}, {"{kind: slurm, pending_warn: 90.5, max_concurrent: 2}", 90.5},
      {"{pending_warn: 0}", 0}};
  for (const auto& [backend, seconds] : cases) {
    auto r = parse_study(fmt::format("name: w\nbackend: {}\ntrial: {{command: [p]}}\nobjective: {{metric: l, mode: min}}\n",
                                     backend),
                         StudyFormat::yaml, "w.yaml");
    INFO(backend << "\n" << all_messages(r));
    REQUIRE(r.has_value());
    CHECK(r->backend.pending_warn_s == seconds);
    auto again = parse_study(r->to_json().dump(), StudyFormat::json, "stored.json");
    REQUIRE(again.has_value());
    CHECK(again->backend.pending_warn_s == r->backend.pending_warn_s);
  }
}

TEST_CASE("a command study passes names and values through") {
  auto r = parse_study(R"({"name": "c", "trial": {"command": ["./train", "--x"]},
    "objective": {"metric": "top1", "mode": "max"},
    "space": {"lr": [0.1, "auto", null, true]}, "fixed": {"a.b-c": 1e-3}})",
                       StudyFormat::json, "c.json");
  INFO(all_messages(r));
  REQUIRE(r.has_value());
  CHECK_FALSE(r->trial.embedded);
  CHECK(r->trial.command == std::vector<std::string>{"./train", "--x"});
  CHECK(r->objective.metric == "top1");
  REQUIRE(r->space.dims.size() == 1);
  CHECK(r->space.dims[0].choices == std::vector<nlohmann::json>{0.1, "auto", nullptr, true});
  CHECK(r->space.fixed["a.b-c"] == 0.001);
}

TEST_CASE("integral floats for integer trainer params become integers") {
  auto r = parse_study("name: f\ntrial: {trainer: {batch_size: 256.0}}\nobjective: {metric: val_acc, mode: max}\n"
                       "space: {base_batch: [64, 1e2]}\n",
                       StudyFormat::yaml, "f.yaml");
  INFO(all_messages(r));
  REQUIRE(r.has_value());
  CHECK(r->space.fixed["batch_size"].is_number_integer());
  CHECK(r->space.fixed["batch_size"] == 256);
  CHECK(r->space.dims[0].choices[1].is_number_integer());
  CHECK(r->space.dims[0].choices[1] == 100);
}

TEST_CASE("the parsed space drives a sampler") {
  auto r = parse_study("name: g\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\n"
                       "space:\n  batch_size: [128, 256, 512]\n  lr_rule: [linear, sqrt]\n"
                       "  warmup_epochs: {int: [0, 4], step: 2}\n",
                       StudyFormat::yaml, "g.yaml");
  INFO(all_messages(r));
  REQUIRE(r.has_value());
  auto sampler = dlsweep::search::make_sampler(r->search.algorithm, r->space, r->search.seed, r->search.options);
  REQUIRE(sampler);
  CHECK((*sampler)->size() == std::optional<std::int64_t>(3 * 2 * 3));
}

TEST_CASE("load_study reads files by extension and reports unreadable ones") {
  fs::path dir = fs::temp_directory_path() / "dlsweep_study_test";
  fs::create_directories(dir);
  {
    std::ofstream(dir / "s.yml") << kYaml;
    std::ofstream(dir / "s.json") << kJson;
    std::ofstream(dir / "s.txt") << kYaml;
  }
  auto y = load_study(dir / "s.yml");
  auto j = load_study(dir / "s.json");
  REQUIRE(y.has_value());
  REQUIRE(j.has_value());
  CHECK(y->source == (dir / "s.yml").string());
  CHECK(y->to_json() == j->to_json());

  auto t = load_study(dir / "s.txt");
  REQUIRE_FALSE(t.has_value());
  CHECK(t.error()[0].fix.find("*.yaml, *.yml or *.json") != std::string::npos);

  auto missing = load_study(dir / "absent.yaml");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error()[0].what.find("cannot read") != std::string::npos);
  CHECK(missing.error()[0].file == (dir / "absent.yaml").string());
  fs::remove_all(dir);
}

TEST_CASE("every study file in examples/ is valid") {
  fs::path examples = fs::path(DLSWEEP_SOURCE_DIR) / "examples";
  int found = 0;
  if (fs::is_directory(examples)) {
    for (const auto& entry : fs::recursive_directory_iterator(examples)) {
      auto ext = entry.path().extension();
      if (ext != ".yaml" && ext != ".yml") continue;
      ++found;
      auto r = load_study(entry.path());
      INFO(entry.path().string() << "\n" << all_messages(r));
      CHECK(r.has_value());
    }
  }
  if (found == 0) WARN("no examples/*.yaml yet: nothing to check");
}

TEST_CASE("environment values keep the text the user wrote") {
  auto y = parse_study("name: e\ntrial:\n  trainer: {}\n  env: {UMASK: 022, SCALE: 1e3, FLAG: true, S: 'x y'}\n"
                       "objective: {metric: val_acc, mode: max}\n",
                       StudyFormat::yaml, "e.yaml");
  INFO(all_messages(y));
  REQUIRE(y.has_value());
  CHECK(y->trial.env == std::map<std::string, std::string>{
                            {"UMASK", "022"}, {"SCALE", "1e3"}, {"FLAG", "true"}, {"S", "x y"}});
  auto j = parse_study(R"({"name": "e", "trial": {"trainer": {}, "env": {"N": 1.5, "B": false}},
                          "objective": {"metric": "val_acc", "mode": "max"}})",
                       StudyFormat::json, "e.json");
  REQUIRE(j.has_value());
  CHECK(j->trial.env == std::map<std::string, std::string>{{"N", "1.5"}, {"B", "false"}});
}
