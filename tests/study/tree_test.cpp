// The YAML/JSON → tree layer and the did-you-mean rule.
#include <catch2/catch.hpp>

#include <string_view>
#include <vector>

#include "study/did_you_mean.hpp"
#include "study/tree.hpp"

using namespace dlsweep::orch;

TEST_CASE("YAML scalars are typed as the YAML 1.2 core schema says") {
  std::vector<ValidationError> errors;
  auto t = parse_yaml_tree(R"(i: 128
neg: -7
hex: 0x1F
oct: 0o17
f: 1e-3
g: 2.5
h: .5
quoted: "128"
single: '0.5'
yes_word: yes
t: true
f2: False
n: ~
n2: null
empty:
s: mlp
ver: 1.2.3
inf: .inf
big: 99999999999999999999
)",
                           "t.yaml", errors);
  REQUIRE(errors.empty());
  REQUIRE(t.has_value());
  const auto& r = t->root;
  CHECK(r["i"].is_number_integer());
  CHECK(r["i"] == 128);
  CHECK(r["neg"] == -7);
  CHECK(r["hex"] == 31);
  CHECK(r["oct"] == 15);
  CHECK(r["f"].is_number_float());
  CHECK(r["f"] == 0.001);
  CHECK(r["g"] == 2.5);
  CHECK(r["h"] == 0.5);
  CHECK(r["quoted"] == "128");
  CHECK(r["single"] == "0.5");
  CHECK(r["yes_word"] == "yes");  // YAML 1.1's yes/no are strings in 1.2
  CHECK(r["t"] == true);
  CHECK(r["f2"] == false);
  CHECK(r["n"].is_null());
  CHECK(r["n2"].is_null());
  CHECK(r["empty"].is_null());
  CHECK(r["s"] == "mlp");
  CHECK(r["ver"] == "1.2.3");
  CHECK(r["inf"] == ".inf");
  CHECK(r["big"].is_number_float());
  // Map order is file order.
  CHECK(r.begin().key() == "i");
  CHECK(t->lines.at("f") == 5);
}

TEST_CASE("JSON trees keep file order and signed integers") {
  std::vector<ValidationError> errors;
  auto t = parse_json_tree(R"({"z": 1, "a": [2, -3], // comment
    "m": 1.5})", "t.json", errors);
  REQUIRE(t.has_value());
  CHECK(t->root.begin().key() == "z");
  CHECK(t->root["z"].is_number_integer());
  CHECK_FALSE(t->root["z"].is_number_unsigned());
  CHECK(to_plain_json(t->root) == nlohmann::json{{"z", 1}, {"a", {2, -3}}, {"m", 1.5}});
}

TEST_CASE("did you mean: never a key of another meaning") {
  const std::vector<std::string_view> slurm = {"cpus_per_task", "gpus_per_node", "mem_per_cpu", "ntasks_per_node",
                                               "partition", "max_concurrent"};
  CHECK_FALSE(did_you_mean("gpus_per_task", slurm).has_value());  // was "cpus_per_task"
  CHECK_FALSE(did_you_mean("mem_per_gpu", slurm).has_value());    // gpu is a word of gpus_per_node
  CHECK_FALSE(did_you_mean("min_concurrent", slurm).has_value());
  CHECK(did_you_mean("cpu_per_task", slurm) == "cpus_per_task");  // plural only
  CHECK(did_you_mean("cpus_per_tsk", slurm) == "cpus_per_task");  // a typo inside a word
  CHECK(did_you_mean("cpus_pertask", slurm) == "cpus_per_task");  // a lost separator
  CHECK(did_you_mean("parition", slurm) == "partition");
  CHECK(did_you_mean("max_concurency", slurm) == "max_concurrent");
  const std::vector<std::string_view> lr = {"max_lr", "warmup_epochs", "base_lr"};
  CHECK_FALSE(did_you_mean("min_lr", lr).has_value());
  CHECK(did_you_mean("warmup_epoch", lr) == "warmup_epochs");
  CHECK(suggest_fix("gpus_per_task", slurm, "allowed keys").rfind("allowed keys: ", 0) == 0);
}

TEST_CASE("did you mean: a key shortened word by word") {
  const std::vector<std::string_view> pbt = {"population", "generations", "quantile", "resample_probability", "perturb"};
  CHECK(did_you_mean("resample_prob", pbt) == "resample_probability");  // too far for the edit distance
  CHECK(did_you_mean("pop", pbt) == "population");
  CHECK_FALSE(did_you_mean("resample", pbt).has_value());   // a word missing is not a shortening
  CHECK_FALSE(did_you_mean("p", pbt).has_value());          // too short to say
  const std::vector<std::string_view> two = {"max_concurrent", "max_concurrency_limit", "min_concurrent"};
  CHECK(did_you_mean("max_conc", two) == "max_concurrent");
  const std::vector<std::string_view> both = {"warmup_epochs", "warmup_steps", "warmer_epochs"};
  CHECK_FALSE(did_you_mean("warm_ep", both).has_value());   // two keys it may shorten: neither
}

TEST_CASE("edit distance and suggestions") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("max_concurent", "max_concurrent") == 1);
  CHECK(edit_distance("abc", "") == 3);
  constexpr std::string_view keys[] = {"metric", "mode", "target"};
  CHECK(did_you_mean("modee", keys) == "mode");
  CHECK(did_you_mean("metirc", keys) == "metric");
  CHECK_FALSE(did_you_mean("zzzzzz", keys).has_value());
  // The threshold grows with the word: 4 edits are fine for a 12-letter word...
  constexpr std::string_view long_keys[] = {"warmup_epochs"};
  CHECK(did_you_mean("wrmup_epoch", long_keys) == "warmup_epochs");
  // ...but never beyond max(2, len/3).
  CHECK_FALSE(did_you_mean("xy", std::span<const std::string_view>(keys)).has_value());
  CHECK(suggest_fix("zzzzzz", keys, "allowed keys") == "allowed keys: metric, mode, target");
  CHECK(suggest_fix("mod", keys, "allowed keys") == "did you mean 'mode'?");
}
