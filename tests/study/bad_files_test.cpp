// Bad study files: each must be rejected with an error at the exact key path, carrying a
// fix. One table row per mistake a user makes; the text is the whole file.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "study/spec.hpp"
#include "study_test_support.hpp"

using dlsweep::orch::parse_study;
using dlsweep::orch::StudyFormat;

namespace {

struct BadStudy {
  const char* label;
  StudyFormat format;
  const char* text;
  const char* key_path;      ///< exact key path of the expected error
  const char* fix_fragment;  ///< must appear in that error's fix
};

constexpr auto Y = StudyFormat::yaml;
constexpr auto J = StudyFormat::json;

const BadStudy kBad[] = {
    {"yaml syntax error", Y, "name: t\ntrial: [1, 2\nobjective: {}\n", "", "indentation"},
    {"json syntax error", J, R"({"name": "t", "trial": {"trainer": {}},})", "", "trailing commas"},
    {"empty file", Y, "# nothing here\n", "", "examples/"},
    {"top level is a list", Y, "- name: t\n", "", "examples/"},
    {"two yaml documents", Y, "name: a\n---\nname: b\n", "", "one study per file"},
    {"json duplicate key", J,
     R"({"name": "a", "name": "b", "trial": {"trainer": {}}, "objective": {"metric": "val_acc", "mode": "max"}})",
     "name", "only one"},
    {"yaml duplicate key", Y,
     "name: a\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nname: b\n", "name", "only one"},
    {"missing name", Y, "trial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\n", "name",
     "name: my-study"},
    {"bad name chars", Y, "name: my study!\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\n",
     "name", "letters, digits"},
    {"name not a string", Y, "name: [a]\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\n",
     "name", "quotes"},
    {"unknown top-level key", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nserach: {algorithm: grid}\n",
     "serach", "did you mean 'search'?"},
    {"unknown top-level key, far from all", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nzzzzzzzz: 1\n", "zzzzzzzz",
     "allowed keys: name, description"},
    {"unknown nested key", Y,
     "name: t\nbackend: {max_concurent: 2}\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\n",
     "backend.max_concurent", "did you mean 'max_concurrent'?"},
    {"bad backend kind", Y,
     "name: t\nbackend: {kind: pbs}\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\n",
     "backend.kind", "use one of: local, slurm"},
    {"pending_warn misspelt", Y,
     "name: t\nbackend: {pending_wran: 60}\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\n",
     "backend.pending_wran", "did you mean 'pending_warn'?"},
    {"pending_warn negative", Y,
     "name: t\nbackend: {pending_warn: -5}\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\n",
     "backend.pending_warn", ">= 0"},
    {"pending_warn not a number", Y,
     "name: t\nbackend: {pending_warn: 10m}\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\n",
     "backend.pending_warn", "number"},
    {"max_concurrent 0", Y,
     "name: t\nbackend: {max_concurrent: 0}\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\n",
     "backend.max_concurrent", ">= 1"},
    {"unknown pruner kind", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\npruner: {kind: bohb}\n",
     "pruner.kind", "use one of: none, median, percentile, threshold, asha, hyperband"},
    {"asha option of another pruner", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\npruner: {kind: median, reduction_factor: 3}\n",
     "pruner.reduction_factor", "remove it, or set kind: asha to use it"},
    {"asha reduction factor 1", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\npruner: {kind: asha, reduction_factor: 1}\n",
     "pruner.reduction_factor", "[2, "},
    {"hyperband without max_resource", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\npruner: {kind: hyperband}\n",
     "pruner.max_resource", "max_resource: 90"},
    {"percentile without percentile", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\npruner: {kind: percentile}\n",
     "pruner.percentile", "percentile: 25"},
    {"tpe gamma out of range", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nsearch: {algorithm: tpe, trials: 9, gamma: 1.5}\n",
     "search.gamma", "(0, 1]"},
    {"tpe option misspelt", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nsearch: {algorithm: tpe, trials: 9, multivariat: true}\n",
     "search.multivariat", "did you mean 'multivariate'?"},
    {"qmc without trials", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nsearch: {algorithm: qmc}\n",
     "search.trials", "trials: N"},
    {"when names an unknown parameter", Y,
     "name: t\ntrial: {command: [x]}\nobjective: {metric: m, mode: max}\nsearch: {algorithm: random, trials: 2}\n"
     "space:\n  opt: [sgd, lars]\n  trust: {log_uniform: [0.0001, 0.01], when: {optimiser: [lars]}}\n",
     "space.trust.when.optimiser", "name a parameter of `space`"},
    {"when value the parent never takes", Y,
     "name: t\ntrial: {command: [x]}\nobjective: {metric: m, mode: max}\nsearch: {algorithm: random, trials: 2}\n"
     "space:\n  opt: [sgd, lars]\n  trust: {log_uniform: [0.0001, 0.01], when: {opt: [adam]}}\n",
     "space.trust.when.opt", "values that opt can take"},
    {"when cycle", Y,
     "name: t\ntrial: {command: [x]}\nobjective: {metric: m, mode: max}\nsearch: {algorithm: random, trials: 2}\n"
     "space:\n  a: {choice: [1, 2], when: {b: [1]}}\n  b: {choice: [1, 2], when: {a: [1]}}\n",
     "space.b.when", "remove one of the conditions"},
    {"when not a map", Y,
     "name: t\ntrial: {command: [x]}\nobjective: {metric: m, mode: max}\nsearch: {algorithm: random, trials: 2}\n"
     "space:\n  opt: [sgd, lars]\n  trust: {log_uniform: [0.0001, 0.01], when: lars}\n",
     "space.trust.when", "when: {optimizer: [lars, larc]}"},
    {"pruner without kind", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\npruner: {startup_trials: 3}\n",
     "pruner.kind", "kind: median"},
    {"stop_at_target without a target", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max, stop_at_target: true}\n",
     "objective.stop_at_target", "add `target: 0.88` to objective"},
    {"stop_at_target not a boolean", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max, target: 0.8, stop_at_target: 2}\n",
     "objective.stop_at_target", ""},
    {"pruner startup_trials 0", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\npruner: {kind: median, startup_trials: 0}\n",
     "pruner.startup_trials", ">= 1"},
    {"pruner negative warmup", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\npruner: {kind: median, warmup: -1}\n",
     "pruner.warmup", ">= 0"},
    {"pruner key typo", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\npruner: {kind: median, warmpu: 1}\n",
     "pruner.warmpu", "did you mean 'warmup'?"},
    {"pruner bad axis", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\npruner: {kind: median, by: time}\n",
     "pruner.by", "use one of: epoch, step, samples, wall_s"},
    {"pruner group_by not a list", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\npruner: {kind: median, group_by: batch_size}\n",
     "pruner.group_by", "group_by: [batch_size]"},
    {"pruner group_by unknown parameter", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nspace: {batch_size: [64, 128]}\n"
     "pruner: {kind: median, group_by: [batch_sise]}\n",
     "pruner.group_by[0]", "name a key of `space`"},
    {"both trainer and command", Y,
     "name: t\ntrial: {trainer: {}, command: [a]}\nobjective: {metric: val_acc, mode: max}\n", "trial.command",
     "keep trainer:"},
    {"neither trainer nor command", Y, "name: t\ntrial: {ranks: 2}\nobjective: {metric: val_acc, mode: max}\n",
     "trial", "command: [prog"},
    {"missing trial", Y, "name: t\nobjective: {metric: val_acc, mode: max}\n", "trial", "trainer:"},
    {"command as a string", Y,
     "name: t\ntrial: {command: python3 train.py}\nobjective: {metric: acc, mode: max}\n", "trial.command",
     "write it as a list: [prog, arg, ...]"},
    {"command as a string (json)", J,
     R"({"name": "t", "trial": {"command": "python3 train.py"}, "objective": {"metric": "acc", "mode": "max"}})",
     "trial.command", "write it as a list"},
    {"empty command", Y, "name: t\ntrial: {command: []}\nobjective: {metric: acc, mode: max}\n", "trial.command",
     "[prog, arg, ...]"},
    {"empty command argument", Y, "name: t\ntrial: {command: [prog, '']}\nobjective: {metric: acc, mode: max}\n",
     "trial.command[1]", "remove it"},
    {"launcher srun on the local backend", Y,
     "name: t\ntrial: {command: [p], launcher: srun, ranks: 2}\nobjective: {metric: acc, mode: max}\n",
     "trial.launcher", "launcher: mpirun or torchrun"},
    {"launcher for the embedded trainer", Y,
     "name: t\ntrial: {trainer: {}, launcher: torchrun}\nobjective: {metric: val_acc, mode: max}\n",
     "trial.launcher", "trial.command"},
    {"unknown launcher", Y, "name: t\ntrial: {command: [p], launcher: deepspeed}\nobjective: {metric: acc, mode: max}\n",
     "trial.launcher", "torchrun"},
    {"ranks do not fit the node request", Y,
     "name: t\nbackend: {kind: slurm, nodes: 1, ntasks_per_node: 4}\ntrial: {command: [p], ranks: 8}\n"
     "objective: {metric: acc, mode: max}\n",
     "trial.ranks", "nodes x ntasks_per_node"},
    {"torchrun ranks uneven over nodes", Y,
     "name: t\nbackend: {kind: slurm, nodes: 2}\ntrial: {command: [p], launcher: torchrun, ranks: 3}\n"
     "objective: {metric: acc, mode: max}\n",
     "trial.ranks", "multiple of backend.nodes"},
    {"ranks both in trial and space", Y,
     "name: t\ntrial: {command: [p], ranks: 2}\nobjective: {metric: acc, mode: max}\nspace: {ranks: [1, 2]}\n",
     "trial.ranks", "keep one"},
    {"searched ranks below 1", Y,
     "name: t\ntrial: {command: [p]}\nobjective: {metric: acc, mode: max}\nspace: {ranks: [0, 1]}\n",
     "space.ranks", "[1, 2, 4]"},
    {"cpus_per_gpu with cpus_per_task", Y,
     "name: t\nbackend: {kind: slurm, gpus_per_task: 1, cpus_per_gpu: 8, cpus_per_task: 4}\ntrial: {command: [p]}\n"
     "objective: {metric: acc, mode: max}\n",
     "backend.cpus_per_gpu", "not both"},
    {"bad gpus_per_task", Y,
     "name: t\nbackend: {kind: slurm, gpus_per_task: 'one'}\ntrial: {command: [p]}\nobjective: {metric: acc, mode: max}\n",
     "backend.gpus_per_task", "a100:4"},
    {"bad gpu_bind", Y,
     "name: t\nbackend: {kind: slurm, gpu_bind: 'closest; rm -rf x'}\ntrial: {command: [p]}\n"
     "objective: {metric: acc, mode: max}\n",
     "backend.gpu_bind", "map_gpu"},
    {"unknown trainer param", Y,
     "name: t\ntrial:\n  trainer: {hiden: [256]}\nobjective: {metric: val_acc, mode: max}\n",
     "trial.trainer.hiden", "did you mean 'hidden'?"},
    {"bad model value", Y, "name: t\ntrial:\n  trainer: {model: resnet}\nobjective: {metric: val_acc, mode: max}\n",
     "trial.trainer.model", "mlp"},
    {"wrong type: epochs ten", Y,
     "name: t\ntrial:\n  trainer: {epochs: ten}\nobjective: {metric: val_acc, mode: max}\n",
     "trial.trainer.epochs", "write a number"},
    {"quoted number stays a string", Y,
     "name: t\ntrial:\n  trainer: {batch_size: \"128\"}\nobjective: {metric: val_acc, mode: max}\n",
     "trial.trainer.batch_size", "an integer"},
    {"log_uniform low <= 0", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nsearch: {algorithm: random, trials: 4}\n"
     "space:\n  base_lr: {log_uniform: [0, 1.0]}\n",
     "space.base_lr.log_uniform[0]", "positive lower bound"},
    {"log_uniform low >= high", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nsearch: {algorithm: random, trials: 4}\n"
     "space:\n  base_lr: {log_uniform: [0.5, 0.1]}\n",
     "space.base_lr.log_uniform[1]", "low < high"},
    {"uniform arity", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nsearch: {algorithm: random, trials: 4}\n"
     "space:\n  momentum: {uniform: [0.8, 0.9, 0.99]}\n",
     "space.momentum.uniform", "[low, high]"},
    {"uniform bound not a number", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nsearch: {algorithm: random, trials: 4}\n"
     "space:\n  momentum: {uniform: [low, 0.9]}\n",
     "space.momentum.uniform[0]", "number"},
    {"uniform bound out of the param's range", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nsearch: {algorithm: random, trials: 4}\n"
     "space:\n  momentum: {uniform: [0.5, 1.5]}\n",
     "space.momentum.uniform[1]", "[0, 1)"},
    {"empty choice list", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nspace:\n  batch_size: []\n",
     "space.batch_size", "at least one value"},
    {"empty choice map", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nspace:\n  batch_size: {choice: []}\n",
     "space.batch_size.choice", "at least one value"},
    {"int range on a string param", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nspace:\n  lr_rule: {int: [0, 2]}\n",
     "space.lr_rule", "give a list of values: [linear, sqrt, none]"},
    {"uniform on an integer param", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nsearch: {algorithm: random, trials: 4}\n"
     "space:\n  batch_size: {uniform: [128, 4096]}\n",
     "space.batch_size", "use {int: [lo, hi]}"},
    {"mixed dimension map", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nsearch: {algorithm: random, trials: 4}\n"
     "space:\n  momentum: {uniform: [0.8, 0.9], choice: [0.9]}\n",
     "space.momentum", "one kind"},
    {"misspelt dimension kind", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nsearch: {algorithm: random, trials: 4}\n"
     "space:\n  momentum: {unifrom: [0.8, 0.9]}\n",
     "space.momentum.unifrom", "did you mean 'uniform'?"},
    {"step on a uniform range", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nsearch: {algorithm: random, trials: 4}\n"
     "space:\n  momentum: {uniform: [0.8, 0.9], step: 2}\n",
     "space.momentum.step", "remove it"},
    {"int range high below low", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nspace:\n  warmup_epochs: {int: [5, 1]}\n",
     "space.warmup_epochs.int[1]", "low <= high"},
    {"log int range from 0", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nsearch: {algorithm: random, trials: 4}\n"
     "space:\n  batch_size: {int: [0, 4096], log: true}\n",
     "space.batch_size.int[0]", "at least 1"},
    {"scalar space entry", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nspace:\n  batch_size: 128\n",
     "space.batch_size", "put it under fixed:"},
    {"grid with a continuous dim", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nspace:\n  base_lr: {uniform: [0.1, 1]}\n",
     "space.base_lr", "grid search needs finite values: give a list, or use search.algorithm: random"},
    {"random without trials", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nsearch: {algorithm: random}\n",
     "search.trials", "trials: N"},
    {"misspelt algorithm", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nsearch: {algorithm: randon}\n",
     "search.algorithm", "did you mean 'random'?"},
    {"trials 0", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nsearch: {trials: 0}\n", "search.trials",
     ">= 1"},
    {"negative seed", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nsearch: {seed: -1}\n", "search.seed",
     ">= 0"},
    {"missing objective", Y, "name: t\ntrial: {trainer: {}}\n", "objective", "metric: val_acc"},
    {"objective missing mode", Y, "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc}\n", "objective.mode",
     "mode: max"},
    {"objective missing metric", Y, "name: t\ntrial: {trainer: {}}\nobjective: {mode: min}\n", "objective.metric",
     "metric: val_acc"},
    {"bad mode", Y, "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: maximize}\n",
     "objective.mode", "use one of: min, max"},
    {"unknown metric for the trainer", Y, "name: t\ntrial: {trainer: {}}\nobjective: {metric: accuracy, mode: max}\n",
     "objective.metric", "val_acc, val_loss, train_loss, train_acc"},
    {"target not a number", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max, target: high}\n", "objective.target",
     "number"},
    {"param in both fixed and space", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nfixed: {batch_size: 256}\n"
     "space:\n  batch_size: [128, 512]\n",
     "space.batch_size", "fixed.batch_size"},
    {"param in both trainer and fixed", Y,
     "name: t\ntrial: {trainer: {epochs: 2}}\nobjective: {metric: val_acc, mode: max}\nfixed: {epochs: 3}\n",
     "fixed.epochs", "trial.trainer.epochs"},
    {"unknown param in space", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nspace:\n  learning_rate: [0.1]\n",
     "space.learning_rate", "known trainer parameters: model, hidden"},
    {"bad env var name", Y,
     "name: t\ntrial: {trainer: {}, env: {1BAD: x}}\nobjective: {metric: val_acc, mode: max}\n", "trial.env.1BAD",
     "letters, digits and '_'"},
    {"env value a list", Y,
     "name: t\ntrial: {trainer: {}, env: {OMP: [1]}}\nobjective: {metric: val_acc, mode: max}\n", "trial.env.OMP",
     "NAME: value"},
    {"negative max_retries", Y,
     "name: t\ntrial: {trainer: {}, max_retries: -1}\nobjective: {metric: val_acc, mode: max}\n",
     "trial.max_retries", ">= 0"},
    {"timeout 0", Y, "name: t\ntrial: {trainer: {}, timeout: 0}\nobjective: {metric: val_acc, mode: max}\n",
     "trial.timeout", "> 0"},
    {"ranks as a float", Y, "name: t\ntrial: {trainer: {}, ranks: 1.5}\nobjective: {metric: val_acc, mode: max}\n",
     "trial.ranks", "whole number"},
    {"choice out of range", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nspace:\n  batch_size: [0, 128]\n",
     "space.batch_size[0]", "use a value in"},
    {"int-list param with scalar choices", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nspace:\n  hidden: [256, 512]\n",
     "space.hidden[0]", "[[256], [512, 512]]"},
    {"choice listed twice", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nspace:\n  batch_size: [128, 256, 128]\n",
     "space.batch_size[2]", "repeated"},
    {"command study: bad param name", Y,
     "name: t\ntrial: {command: [prog]}\nobjective: {metric: acc, mode: max}\nfixed: {9lives: 1}\n", "fixed.9lives",
     "starting with a letter"},
    {"command study: nested map value", Y,
     "name: t\ntrial: {command: [prog]}\nobjective: {metric: acc, mode: max}\nfixed: {opt: {lr: 1}}\n", "fixed.opt",
     "dotted names"},
    {"batch_ramp adaptive misspelt", Y,
     "name: t\ntrial:\n  trainer: {batch_ramp: adaptve}\nobjective: {metric: val_acc, mode: max}\n",
     "trial.trainer.batch_ramp", "\"adaptive\""},
    {"adaptive_step_time not [alpha, beta]", Y,
     "name: t\ntrial:\n  trainer: {batch_ramp: adaptive, adaptive_step_time: [0.1]}\nobjective: {metric: val_acc, mode: max}\n",
     "trial.trainer.adaptive_step_time", "[alpha, beta]"},
    {"adaptive_lr choice not known", Y,
     "name: t\ntrial: {trainer: {batch_ramp: adaptive}}\nobjective: {metric: val_acc, mode: max}\nspace:\n  adaptive_lr: [adascale, linear]\n",
     "space.adaptive_lr[1]", "adascale, rule"},
    {"adaptive_every 0", Y,
     "name: t\ntrial:\n  trainer: {batch_ramp: adaptive, adaptive_every: 0}\nobjective: {metric: val_acc, mode: max}\n",
     "trial.trainer.adaptive_every", "use a value in"},
    {"runs_dir not a string", Y,
     "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\nruns_dir: [a]\n", "runs_dir", "quotes"},
};

}  // namespace

TEST_CASE("bad study files are rejected at the exact key path, with a fix") {
  STATIC_REQUIRE(sizeof(kBad) / sizeof(kBad[0]) >= 25);
  for (const auto& bad : kBad) {
    INFO(bad.label);
    auto r = parse_study(bad.text, bad.format, "bad.study");
    REQUIRE_FALSE(r.has_value());
    bool found = false;
    std::string all;
    for (const auto& e : r.error()) {
      all += e.message() + "\n";
      CHECK(e.file == "bad.study");
      CHECK_FALSE(e.what.empty());
      CHECK_FALSE(e.fix.empty());
      if (e.key_path == bad.key_path && e.fix.find(bad.fix_fragment) != std::string::npos) {
        found = true;
        if (!e.key_path.empty()) CHECK(e.message().find(std::string(bad.key_path) + ": ") != std::string::npos);
      }
    }
    INFO("errors:\n" << all);
    CHECK(found);
  }
}

TEST_CASE("syntax errors name the line and column") {
  auto y = parse_study("name: t\ntrial: [1, 2\nobjective: {}\n", StudyFormat::yaml, "s.yaml");
  REQUIRE_FALSE(y.has_value());
  REQUIRE(y.error().size() == 1);
  CHECK(y.error()[0].what.find("YAML syntax error at line") != std::string::npos);

  auto j = parse_study("{\n  \"name\": \"t\",\n  \"trial\" {}\n}\n", StudyFormat::json, "s.json");
  REQUIRE_FALSE(j.has_value());
  REQUIRE(j.error().size() == 1);
  CHECK(j.error()[0].what.find("JSON syntax error at line 3") != std::string::npos);
}

TEST_CASE("every error of a file is reported, not just the first") {
  const char* text = R"(name: three-errors
backend:
  max_concurent: 2
trial:
  trainer:
    epochs: ten
objective:
  metric: val_acc
  mode: maximum
)";
  auto r = parse_study(text, StudyFormat::yaml, "three.yaml");
  REQUIRE_FALSE(r.has_value());
  std::vector<std::string> paths;
  for (const auto& e : r.error()) paths.push_back(e.key_path);
  CHECK(paths == std::vector<std::string>{"backend.max_concurent", "trial.trainer.epochs", "objective.mode"});
  // YAML errors carry the line of the offending key.
  CHECK(r.error()[0].line == 3);
  CHECK(r.error()[1].line == 6);
  CHECK(r.error()[2].line == 9);
  CHECK(r.error()[0].message() ==
        "three.yaml:3: backend.max_concurent: unknown key 'max_concurent' (fix: did you mean 'max_concurrent'?)");
}

TEST_CASE("a missing key reports the line of its section") {
  auto r = parse_study("name: t\ntrial: {trainer: {}}\nobjective:\n  metric: val_acc\n", StudyFormat::yaml, "m.yaml");
  REQUIRE_FALSE(r.has_value());
  REQUIRE(r.error().size() == 1);
  CHECK(r.error()[0].key_path == "objective.mode");
  CHECK(r.error()[0].line == 3);
}

TEST_CASE("device x precision: GPU formats on a CPU-only study are refused at submit, every format runs on cuda") {
  using study_test::error_at;
  const std::string head = "name: t\nobjective: {metric: val_acc, mode: max}\n";
  // tf32 with the default device (cpu): the error sits at precision and names the default.
  auto a = parse_study(head + "trial:\n  trainer: {precision: tf32}\n", StudyFormat::yaml, "a.yaml");
  const auto* e = error_at(a, "trial.trainer.precision");
  REQUIRE(e != nullptr);
  CHECK(e->what.find("device: cpu, the default") != std::string::npos);
  CHECK(e->fix.find("device: cuda") != std::string::npos);
  // tf32 in a space with device cpu fixed: at the space entry.
  auto b = parse_study(head + "trial:\n  trainer: {device: cpu}\nspace:\n  precision: [fp32, tf32]\n",
                       StudyFormat::yaml, "b.yaml");
  REQUIRE(error_at(b, "space.precision") != nullptr);
  // fp16 with the CPU fixed: refused at the precision key.
  auto c = parse_study(head + "trial:\n  trainer: {device: cpu, precision: fp16}\n", StudyFormat::yaml, "c.yaml");
  REQUIRE(error_at(c, "trial.trainer.precision") != nullptr);
  // What may run is accepted: every format on cuda (bf16 and fp16 included), bf16 on cpu, and
  // anything with device auto or a device that varies (each trial is checked by dlsweep-train).
  for (const char* ok : {"trial:\n  trainer: {device: cuda, precision: tf32}\n",
                         "trial:\n  trainer: {device: cuda, precision: bf16}\n",
                         "trial:\n  trainer: {device: cuda, precision: fp16}\n",
                         "trial:\n  trainer: {precision: bf16}\n",
                         "trial:\n  trainer: {device: auto, precision: tf32}\n",
                         "trial:\n  trainer: {precision: tf32}\nspace:\n  device: [cpu, cuda]\n"}) {
    auto r = parse_study(head + ok, StudyFormat::yaml, "ok.yaml");
    INFO(ok << study_test::messages(r));
    CHECK(r);
  }
}

TEST_CASE("batch_size larger than a fixed train_subset is refused at submit, not trial by trial (issue 38)") {
  using study_test::error_at;
  const std::string head = "name: t\nobjective: {metric: val_acc, mode: max}\n";
  // Varied: at the space entry, naming the batches too large and the subset.
  auto a = parse_study(head + "trial:\n  trainer: {train_subset: 2048}\nspace:\n  batch_size: [256, 1024, 4096, 8192]\n",
                       StudyFormat::yaml, "a.yaml");
  const auto* e = error_at(a, "space.batch_size");
  REQUIRE(e != nullptr);
  CHECK(e->what.find("batch_size 4096, 8192 are larger than the training set (train_subset: 2048") != std::string::npos);
  CHECK(e->fix.find("<= 2048") != std::string::npos);
  // Fixed: at the fixed key; an int range by its high end.
  auto b = parse_study(head + "trial:\n  trainer: {train_subset: 500, batch_size: 512}\n", StudyFormat::yaml, "b.yaml");
  REQUIRE(error_at(b, "trial.trainer.batch_size") != nullptr);
  auto c = parse_study(head + "trial:\n  trainer: {train_subset: 500}\nsearch: {algorithm: random, trials: 4}\n"
                              "space:\n  batch_size: {int: [32, 1000]}\n",
                       StudyFormat::yaml, "c.yaml");
  INFO(study_test::messages(c));
  REQUIRE(error_at(c, "space.batch_size") != nullptr);
  // Accepted: batches within the subset (equal included), or no train_subset (the whole set).
  for (const char* ok : {"trial:\n  trainer: {train_subset: 2048}\nspace:\n  batch_size: [256, 2048]\n",
                         "trial:\n  trainer: {}\nspace:\n  batch_size: [256, 4096]\n"}) {
    auto r = parse_study(head + ok, StudyFormat::yaml, "ok.yaml");
    INFO(ok << study_test::messages(r));
    CHECK(r);
  }
}

TEST_CASE("device: cuda on Slurm without a GPU request is refused at submit, with the fix") {
  using study_test::error_at;
  const std::string head = "name: t\nobjective: {metric: val_acc, mode: max}\n";
  auto bad = parse_study(head + "backend: {kind: slurm, partition: gpu}\ntrial:\n  trainer: {device: cuda}\n",
                         StudyFormat::yaml, "g.yaml");
  const auto* e = error_at(bad, "trial.trainer.device");
  REQUIRE(e != nullptr);
  CHECK(e->fix.find("gpus_per_task") != std::string::npos);
  auto in_space = parse_study(head + "backend: {kind: slurm}\ntrial: {trainer: {}}\nspace:\n  device: [cuda]\n",
                              StudyFormat::yaml, "g.yaml");
  CHECK(error_at(in_space, "space.device") != nullptr);
  for (const char* ok : {"backend: {kind: slurm, gpus_per_task: \"1\"}\ntrial:\n  trainer: {device: cuda}\n",
                         "backend: {kind: slurm, gpus_per_node: \"a100:4\"}\ntrial:\n  trainer: {device: cuda}\n",
                         "backend: {kind: slurm}\ntrial:\n  trainer: {device: auto}\n",
                         "backend: {kind: local}\ntrial:\n  trainer: {device: cuda}\n"}) {
    auto r = parse_study(head + ok, StudyFormat::yaml, "ok.yaml");
    INFO(ok << study_test::messages(r));
    CHECK(r);
  }
}

TEST_CASE("trial.unread_params: a list of names, kept through to_json") {
  using study_test::error_at;
  const std::string head = "name: t\nobjective: {metric: val_acc, mode: max}\n";
  auto ok = parse_study(head + "trial:\n  command: [python3, x.py]\n  unread_params: [note, tag]\nspace:\n  lr: [0.1, 0.2]\n",
                        StudyFormat::yaml, "u.yaml");
  INFO(study_test::messages(ok));
  REQUIRE(ok);
  CHECK(ok->trial.unread_params == std::vector<std::string>{"note", "tag"});
  auto again = parse_study(ok->to_json().dump(), StudyFormat::json, "u.json");
  REQUIRE(again);
  CHECK(again->trial.unread_params == ok->trial.unread_params);
  auto bad = parse_study(head + "trial:\n  command: [python3, x.py]\n  unread_params: note\nspace:\n  lr: [0.1]\n",
                         StudyFormat::yaml, "u.yaml");
  CHECK(error_at(bad, "trial.unread_params") != nullptr);
}

TEST_CASE("backend.keep_imported: the local backend takes it (kept through to_json); a non-boolean is refused at its key") {
  using study_test::error_at;
  const std::string head = "name: t\nobjective: {metric: value, mode: max}\n"
                           "trial:\n  command: [python3, -m, dlsweep_optuna, \"o.py:objective\"]\nspace:\n  x: [1, 2]\n";
  auto ok = parse_study(head + "backend: {kind: local, max_concurrent: 2, keep_imported: true}\n", StudyFormat::yaml,
                        "k.yaml");
  INFO(study_test::messages(ok));
  REQUIRE(ok);
  CHECK(ok->backend.options.local.keep_imported);
  auto again = parse_study(ok->to_json().dump(), StudyFormat::json, "k.json");
  REQUIRE(again);
  CHECK(again->backend.options.local.keep_imported);
  auto plain = parse_study(head + "backend: {kind: local}\n", StudyFormat::yaml, "p.yaml");
  REQUIRE(plain);
  CHECK_FALSE(plain->backend.options.local.keep_imported);
  CHECK_FALSE(plain->to_json()["backend"].contains("keep_imported"));
  auto bad = parse_study(head + "backend: {kind: local, keep_imported: maybe}\n", StudyFormat::yaml, "b.yaml");
  CHECK(error_at(bad, "backend.keep_imported") != nullptr);
}
