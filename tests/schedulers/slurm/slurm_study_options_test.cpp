// The Slurm backend reads, validates and writes back its own study keys
// (slurm/study_options.hpp) through common/option_reader.hpp: here through a fake reader over
// a JSON object (study/'s SectionReader is the real one; tests/study/bad_files_test.cpp checks
// the messages as a user sees them, with file and line).
#include <catch2/catch.hpp>

#include <map>

#include <nlohmann/json.hpp>

#include "schedulers/slurm/study_options.hpp"

using namespace dlsweep;
using namespace dlsweep::sched;
using nlohmann::json;

namespace {

/// An OptionReader over a JSON object: the fake of study/'s SectionReader.
class JsonSection final : public OptionReader {
 public:
  explicit JsonSection(json j) : j_(std::move(j)) {}
  std::map<std::string, std::string> errors;  ///< key -> what

  bool has(std::string_view k) const override { return j_.contains(std::string(k)); }
  std::optional<std::string> text(std::string_view k) override {
    const json& v = j_.at(std::string(k));
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number()) return v.dump();
    return wrong(k, "a string");
  }
  std::optional<std::int64_t> integer(std::string_view k, std::int64_t min, std::int64_t max) override {
    const json& v = j_.at(std::string(k));
    if (!v.is_number_integer() || v.get<std::int64_t>() < min || v.get<std::int64_t>() > max)
      return wrong(k, "an integer in range");
    return v.get<std::int64_t>();
  }
  std::optional<double> number(std::string_view k, double min, bool excl) override {
    const json& v = j_.at(std::string(k));
    if (!v.is_number() || v.get<double>() < min || (excl && v.get<double>() == min)) return wrong(k, "a number");
    return v.get<double>();
  }
  std::optional<bool> boolean(std::string_view k) override {
    const json& v = j_.at(std::string(k));
    if (!v.is_boolean()) return wrong(k, "true or false");
    return v.get<bool>();
  }
  std::optional<std::string> word(std::string_view k, std::span<const std::string_view> words) override {
    auto t = text(k);
    for (auto w : words)
      if (t && *t == w) return t;
    return wrong(k, "one of the words");
  }
  std::optional<std::vector<std::string>> strings(std::string_view k, std::string_view) override {
    const json& v = j_.at(std::string(k));
    if (!v.is_array()) return wrong(k, "a list");
    std::vector<std::string> out;
    for (const auto& s : v)
      if (s.is_string()) out.push_back(s.get<std::string>());
    return out;
  }
  void error(std::string_view k, std::string what, std::string) override { errors[std::string(k)] = what; }

 private:
  std::nullopt_t wrong(std::string_view k, const char* expected) {
    errors[std::string(k)] = std::string("expected ") + expected;
    return std::nullopt;
  }
  json j_;
};

}  // namespace

TEST_CASE("slurm study options: every key read into SlurmOptions, and written back equal", "[slurm][options]") {
  const json section = {{"driver", "cli"},          {"partition", "gpu"},        {"account", "proj"},
                        {"qos", "normal"},          {"time", 30},                {"nodes", 2},
                        {"ntasks_per_node", 4},     {"cpus_per_task", 8},        {"mem", "16G"},
                        {"constraint", "a100"},     {"extra_sbatch", {"#SBATCH --exclusive"}},
                        {"setup", {"module load x"}}, {"signal_lead_s", 90},     {"requeue", false},
                        {"poll_min_s", 1.5},        {"poll_max_s", 30.0},        {"gpus_per_task", "1"},
                        {"gpu_bind", "closest"},    {"mpi", "pmi2"},             {"slurm_conf", "/etc/slurm/slurm.conf"}};
  JsonSection r(section);
  SlurmOptions o;
  slurm::read_study_options(r, o, 4);
  CHECK(r.errors.empty());
  CHECK(o.partition == "gpu");
  CHECK(o.time_limit == 30);
  CHECK(o.nodes == 2);
  CHECK(o.extra_sbatch == std::vector<std::string>{"#SBATCH --exclusive"});
  CHECK_FALSE(o.requeue);
  CHECK(o.poll_min_s == 1.5);
  CHECK(o.mpi == "pmi2");
  json back = json::object();
  slurm::write_study_options(o, back);
  CHECK(back == section);  // every key as given (each differs from its default)
  JsonSection again(back);
  SlurmOptions o2;
  slurm::read_study_options(again, o2, 4);
  json back2 = json::object();
  slurm::write_study_options(o2, back2);
  CHECK(back2 == back);
  // Defaults are not written back (a stored study reads as written), but the driver is.
  json d = json::object();
  slurm::write_study_options(SlurmOptions{}, d);
  CHECK(d == json{{"driver", "cli"}});
}

TEST_CASE("slurm study options: type and Slurm-syntax errors land at the study key", "[slurm][options]") {
  JsonSection r(json{{"time", "soon"}, {"mpi", "openmpi"}, {"requeue", "yes"}});
  SlurmOptions o;
  slurm::read_study_options(r, o, 1);
  CHECK(r.errors.count("time"));
  CHECK(r.errors.count("mpi"));
  CHECK(r.errors.count("requeue"));
  // Slurm syntax: the validator's "slurm.partition" comes back as the study's "partition".
  JsonSection bad(json{{"partition", "gpu;rm -rf /"}});
  SlurmOptions o2;
  slurm::read_study_options(bad, o2, 1);
  REQUIRE(bad.errors.size() == 1);
  CHECK(bad.errors.begin()->first == "partition");
}

TEST_CASE("slurm study options: the trials' shape against nodes, ntasks_per_node and the GPU request",
          "[slurm][options]") {
  SlurmOptions o;
  o.nodes = 2;
  o.ntasks_per_node = 4;
  const std::int64_t fits[] = {8}, misfit[] = {8, 6};
  CHECK_FALSE(slurm::check_ranks(o, fits, "", "trial.ranks"));
  auto e = slurm::check_ranks(o, misfit, "", "space.ranks");
  REQUIRE(e);
  CHECK(e->where == "space.ranks");
  CHECK(e->what == "6 ranks do not fit nodes: 2 x ntasks_per_node: 4 = 8 tasks");
  o.ntasks_per_node = 0;
  const std::int64_t three[] = {3};
  CHECK(slurm::check_ranks(o, three, "torchrun", "trial.ranks")->what.find("torchrun") != std::string::npos);
  const std::int64_t one[] = {1};
  CHECK(slurm::check_ranks(o, one, "", "trial.ranks")->what.find("cannot spread over nodes") != std::string::npos);

  SlurmOptions g;
  CHECK(slurm::check_gpu_request(g, "fixed.device")->where == "fixed.device");
  g.gpus_per_task = "1";
  CHECK_FALSE(slurm::check_gpu_request(g, "fixed.device"));
  SlurmOptions gres;
  gres.extra_sbatch = {"#SBATCH --gres=gpu:4"};
  CHECK_FALSE(slurm::check_gpu_request(gres, "fixed.device"));
}
