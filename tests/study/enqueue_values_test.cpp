// `dlsweep enqueue --set NAME=VALUE`: the syntax, each kind of value against its dimension,
// names (did-you-mean, fixed), conditional parameters, and every problem reported at once.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "study/enqueue_values.hpp"
#include "study/spec.hpp"

using namespace dlsweep;
using namespace dlsweep::orch;
using nlohmann::json;

namespace {

// A command study over every kind of dimension, a conditional one and a fixed param.
search::Space space() {
  auto spec = parse_study(R"(
name: enq
trial: {command: [prog]}
objective: {metric: loss, mode: min}
search: {algorithm: random, trials: 4}
space:
  batch_size: {int: [64, 4096], step: 64}
  lr_rule: [linear, sqrt, none]
  lr: {log_uniform: [1.0e-3, 1.0]}
  momentum: {uniform: [0.8, 0.99]}
  warmup: {int: [0, 10]}
  hidden: [[256], [512, 512]]
  nesterov: [true, false]
  optimizer: [sgd, lars]
  trust: {log_uniform: [1.0e-4, 1.0e-2], when: {optimizer: [lars]}}
fixed: {epochs: 3}
)", StudyFormat::yaml, "enq.yaml");
  if (!spec) FAIL(spec.error().front().message());
  return spec->space;
}

std::string all_messages(const Errors& errors) {
  std::string out;
  for (const auto& e : errors) out += e.message() + "\n";
  return out;
}

Errors refused(const std::vector<std::string>& args) {
  auto r = enqueue_params_from_args(space(), args);
  REQUIRE_FALSE(r.has_value());
  return r.error();
}

}  // namespace

TEST_CASE("enqueue values: --set syntax") {
  auto ok = parse_set_args({"a=1", "b=x=y", "c="});
  REQUIRE(ok.has_value());
  REQUIRE(ok->size() == 3);
  CHECK((*ok)[1].name == "b");
  CHECK((*ok)[1].value == "x=y");  // split at the first '='
  CHECK((*ok)[2].value.empty());

  auto bad = parse_set_args({"noequals", "=5", "a=1", "a=2"});
  REQUIRE_FALSE(bad.has_value());
  REQUIRE(bad.error().size() == 3);
  auto text = all_messages(bad.error());
  CHECK_THAT(text, Catch::Contains("--set noequals: expected NAME=VALUE"));
  CHECK_THAT(text, Catch::Contains("--set =5: the parameter name before '=' is empty"));
  CHECK_THAT(text, Catch::Contains("'a' is set more than once"));
  for (const auto& e : bad.error()) CHECK_FALSE(e.fix.empty());
}

TEST_CASE("enqueue values: typed like the study's own values") {
  auto p = enqueue_params_from_args(space(), {"batch_size=4096", "lr_rule=sqrt", "lr=1e-2", "momentum=0.9",
                                              "warmup=+3", "hidden=[512,512]", "nesterov=true"});
  INFO((p ? std::string() : all_messages(p.error())));
  REQUIRE(p.has_value());
  CHECK((*p)["batch_size"].is_number_integer());
  CHECK((*p)["batch_size"] == 4096);
  CHECK((*p)["lr_rule"] == "sqrt");
  CHECK((*p)["lr"].get<double>() == 0.01);
  CHECK((*p)["momentum"].get<double>() == 0.9);
  CHECK((*p)["warmup"] == 3);
  CHECK((*p)["hidden"] == json::array({512, 512}));
  CHECK((*p)["nesterov"] == true);
  // Integers spelled as numbers; the bounds of a range are allowed.
  auto q = enqueue_params_from_args(space(), {"batch_size=4.032e3", "lr=1", "momentum=0.8"});
  REQUIRE(q.has_value());
  CHECK((*q)["batch_size"] == 4032);
  CHECK((*q)["lr"].get<double>() == 1.0);
}

TEST_CASE("enqueue values: out of range, not a choice, wrong type: each says what is allowed") {
  auto text = all_messages(refused({"batch_size=5000", "lr_rule=sqr", "lr=2", "momentum=abc", "warmup=2.5",
                                    "nesterov=yes", "hidden=[1024]"}));
  CHECK_THAT(text, Catch::Contains("--set batch_size=5000: 5000 is outside batch_size's range [64, 4096]"));
  CHECK_THAT(text, Catch::Contains("give an integer in [64, 4096] in steps of 64"));
  CHECK_THAT(text, Catch::Contains("'sqr' is not one of lr_rule's choices (fix: give one of [\"linear\", \"sqrt\", \"none\"])"));
  CHECK_THAT(text, Catch::Contains("--set lr=2: 2 is outside lr's range [0.001, 1]"));
  CHECK_THAT(text, Catch::Contains("log scale"));
  CHECK_THAT(text, Catch::Contains("--set momentum=abc: 'abc' is not a number (fix: give a number in [0.8, 0.99])"));
  CHECK_THAT(text, Catch::Contains("--set warmup=2.5: '2.5' is not an integer"));
  CHECK_THAT(text, Catch::Contains("'yes' is not one of nesterov's choices"));
  CHECK_THAT(text, Catch::Contains("'[1024]' is not one of hidden's choices"));
  auto step = all_messages(refused({"batch_size=100"}));
  CHECK_THAT(step, Catch::Contains("100 is not on batch_size's steps of 64 from 64 (nearest: 64 or 128)"));
  CHECK_THAT(all_messages(refused({"lr=nan"})), Catch::Contains("is not a number"));
  CHECK_THAT(all_messages(refused({"lr=inf"})), Catch::Contains("is not a number"));
  CHECK_THAT(all_messages(refused({"warmup=1e30"})), Catch::Contains("is not an integer"));
}

TEST_CASE("enqueue values: unknown names get a did-you-mean; fixed ones are not searched") {
  auto text = all_messages(refused({"batchsize=4096", "momentun=0.9", "zzz=1", "epochs=4"}));
  CHECK_THAT(text, Catch::Contains("--set batchsize=4096: unknown parameter 'batchsize' (fix: did you mean 'batch_size'?)"));
  CHECK_THAT(text, Catch::Contains("did you mean 'momentum'?"));
  CHECK_THAT(text, Catch::Contains("unknown parameter 'zzz' (fix: the study's search parameters are: batch_size, lr_rule"));
  CHECK_THAT(text, Catch::Contains("--set epochs=4: 'epochs' is fixed at 3 in this study, not searched"));
}

TEST_CASE("enqueue values: conditional parameters come with parents that switch them on") {
  auto ok = enqueue_params_from_args(space(), {"optimizer=lars", "trust=1e-3"});
  REQUIRE(ok.has_value());
  CHECK((*ok)["trust"].get<double>() == 0.001);
  auto alone = all_messages(refused({"trust=1e-3"}));
  CHECK_THAT(alone, Catch::Contains("trust exists only when optimizer is one of [\"lars\"]"));
  CHECK_THAT(alone, Catch::Contains("also give --set optimizer=lars"));
  auto off = all_messages(refused({"optimizer=sgd", "trust=1e-3"}));
  CHECK_THAT(off, Catch::Contains("and it is set to \"sgd\""));
  // A parent whose value is itself wrong is reported once, not again through its child.
  auto errors = refused({"optimizer=adam", "trust=1e-3"});
  CHECK(errors.size() == 1);
}

TEST_CASE("enqueue values: nothing to enqueue; JSON params checked the same way (request files)") {
  CHECK_THAT(all_messages(refused({})), Catch::Contains("nothing to enqueue"));
  const auto s = space();
  CHECK(check_enqueued_params(s, json{{"batch_size", 128}, {"lr_rule", "none"}}).empty());
  CHECK_FALSE(check_enqueued_params(s, json::array()).empty());
  CHECK_FALSE(check_enqueued_params(s, json::object()).empty());
  auto e = check_enqueued_params(s, json{{"batch_size", "128"}, {"lr", 0.5}, {"warmup", 1.0}});
  REQUIRE(e.size() == 2);
  CHECK_THAT(all_messages(e), Catch::Contains("enqueue: batch_size: \"128\" is not an integer"));
  CHECK_THAT(all_messages(e), Catch::Contains("enqueue: warmup: 1.0 is not an integer"));
}
