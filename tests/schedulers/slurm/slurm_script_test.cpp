// Batch script rendering (golden files), the index file, SubmitRequest fields, and the
// refusal of values that cannot be made safe. Regenerate the golden files after an
// intended template change with DLSWEEP_UPDATE_GOLDEN=1 (then review the diff).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <kainjow/mustache.hpp>

#include "schedulers/slurm/options.hpp"
#include "schedulers/slurm/quote.hpp"
#include "schedulers/slurm/script.hpp"
#include "slurm_test_support.hpp"

using namespace dlsweep::sched;
using namespace dlsweep::sched::slurm;
using slurm_test::read_file;

namespace {

SlurmOptions site_options() {
  SlurmOptions o;
  o.partition = "gpu";
  o.account = "proj-42";
  o.qos = "normal";
  o.time_limit = 30;
  o.nodes = 1;
  o.cpus_per_task = 8;
  o.gpus_per_node = "a100:2";
  o.mem = "64G";
  o.constraint = "ib&a100";
  o.extra_sbatch = {"#SBATCH --exclusive", "#SBATCH --mail-user=ops team@example.org"};
  o.setup = {"module load cuda/12.2", "source /opt/venv/bin/activate"};
  o.script_dir = "/scratch/study/slurm";
  o.signal_lead_s = 120;
  return o;
}

BatchRequest batch(std::size_t n, int ranks = 1) {
  BatchRequest b;
  b.study = "lb-sweep";
  b.tag = "batch-1700000000-42-1";
  b.script_dir = "/scratch/study/slurm";
  b.ranks = ranks;
  b.throttle = 4;
  for (std::size_t i = 0; i < n; ++i) {
    BatchTask t;
    t.token = "lb-sweep/" + std::to_string(10 + i) + "/0";
    t.trial_dir = "/scratch/study/trial-000" + std::to_string(i);
    t.argv = {"/opt/dlsweep/bin/dlsweep-train", "--lr=0." + std::to_string(i + 1)};
    t.env = {{"DLSWEEP_TRIAL_ID", std::to_string(10 + i)}, {"OMP_NUM_THREADS", "8"}};
    b.tasks.push_back(std::move(t));
  }
  return b;
}

std::string default_template() {
  SlurmOptions o;
  auto t = load_template(o);
  REQUIRE(t.has_value());
  return *t;
}

void check_golden(const std::string& name, const std::string& text) {
  auto path = slurm_test::data_dir() / name;
  if (const char* u = std::getenv("DLSWEEP_UPDATE_GOLDEN"); u && std::string(u) == "1") slurm_test::write_file(path, text);
  INFO("golden file " << path.string() << " (DLSWEEP_UPDATE_GOLDEN=1 rewrites it)");
  CHECK(text == read_file(path));
}

}  // namespace

TEST_CASE("golden: a throttled array with every site option", "[slurm][script]") {
  auto p = prepare_batch(default_template(), site_options(), batch(3));
  REQUIRE(p.has_value());
  check_golden("golden_array.sh", p->request.script);
  check_golden("golden_array.index", p->index_text);
  CHECK(p->request.array == "0-2");  // throttle 4 >= 3 tasks: no %
  CHECK(p->request.std_out == "/scratch/study/slurm/slurm-%A_%a.out");
  CHECK(p->request.job_name == "dlsweep:lb-sweep");
  CHECK(p->request.comment == "dlsweep:batch-1700000000-42-1");
  CHECK(p->request.time_limit_min == 30);
  CHECK(p->request.ntasks == 0);
}

TEST_CASE("golden: a single multi-rank job with defaults", "[slurm][script]") {
  SlurmOptions o;
  o.script_dir = "/scratch/study/slurm";
  o.requeue = false;
  o.signal_lead_s = 0;
  auto b = batch(1, 4);
  b.time_limit_min = 2;
  auto p = prepare_batch(default_template(), o, b);
  REQUIRE(p.has_value());
  check_golden("golden_single_mpi.sh", p->request.script);
  CHECK(p->request.array.empty());
  CHECK(p->request.std_out == "/scratch/study/slurm/slurm-%j.out");
  CHECK(p->request.ntasks == 4);
  CHECK(p->request.time_limit_min == 2);
  CHECK(p->request.script.find("srun --mpi=pmix --ntasks=4 \"$@\" &") != std::string::npos);
  CHECK(p->request.script.find("scontrol requeue") == std::string::npos);
}

TEST_CASE("array throttle appears only when it bounds the array", "[slurm][script]") {
  auto b = batch(10);
  b.throttle = 3;
  auto r = build_submit_request(site_options(), b);
  REQUIRE(r.has_value());
  CHECK(r->array == "0-9%3");
  b.throttle = 0;
  CHECK(build_submit_request(site_options(), b)->array == "0-9");
}

TEST_CASE("a warning lead as long as the time limit is cut to half of it", "[slurm][script]") {
  SlurmOptions o = site_options();
  auto b = batch(1);
  b.time_limit_min = 2;
  o.signal_lead_s = 120;  // would fire at the start: stop, requeue, stop, ...
  CHECK(build_submit_request(o, b)->signal_lead_s == 60);
  o.signal_lead_s = 50;
  CHECK(build_submit_request(o, b)->signal_lead_s == 50);
  b.time_limit_min = 0;
  o.time_limit = 0;
  o.signal_lead_s = 120;  // no limit: the lead only matters for preemption
  CHECK(build_submit_request(o, b)->signal_lead_s == 120);
}

TEST_CASE("every study value lands quoted: hostile values in every field", "[slurm][script][security]") {
  const std::string evil = "x'; touch /tmp/dlsweep-pwned-render; echo \"$(id)\" `id` #\\";
  SlurmOptions o = site_options();
  o.extra_sbatch = {"#SBATCH --mail-user=" + evil};
  BatchRequest b = batch(1);
  b.study = evil;
  b.tasks[0].token = evil;
  b.tasks[0].trial_dir = "/scratch/" + evil;
  b.tasks[0].argv = {"/bin/echo", evil, "line\nbreak"};
  b.tasks[0].env["EVIL"] = evil;
  auto p = prepare_batch(default_template(), o, b);
  REQUIRE(p.has_value());
  const std::string& s = p->request.script;
  // In the script: only as an sbatch-quoted value or inside a shell comment.
  CHECK(s.find("#SBATCH --job-name=\"dlsweep:x'; touch /tmp/dlsweep-pwned-render; echo \\\"$(id)\\\" `id` #\\\\\"") !=
        std::string::npos);
  CHECK(s.find("#SBATCH --mail-user=\"x'; touch") != std::string::npos);
  for (std::size_t pos = s.find("touch /tmp/dlsweep-pwned-render"); pos != std::string::npos;
       pos = s.find("touch /tmp/dlsweep-pwned-render", pos + 1)) {
    auto line_start = s.rfind('\n', pos) + 1;
    CHECK(s[line_start] == '#');  // never on a line bash executes
  }
  // In the index: the values come back exactly.
  auto lines = p->index_text.substr(p->index_text.find('\n') + 1);
  lines.pop_back();
  auto words = split_index_line(lines);
  REQUIRE(words.has_value());
  CHECK((*words)[1] == evil);
  CHECK((*words)[2] == "/scratch/" + evil);
  CHECK((*words)[4] == "DLSWEEP_TRIAL_ID=10");
  CHECK((*words)[5] == "EVIL=" + evil);
  CHECK(words->back() == "line\nbreak");
}

TEST_CASE("values that cannot be made safe are refused with the field named", "[slurm][script][security]") {
  auto b = batch(1);
  SECTION("env name") {
    b.tasks[0].env["BAD NAME;rm"] = "1";
    auto r = render_index(b);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message(), Catch::Contains("lb-sweep/10/0") && Catch::Contains("BAD NAME;rm"));
  }
  SECTION("NUL in argv") {
    b.tasks[0].argv.push_back(std::string("a\0b", 3));
    auto r = render_index(b);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message(), Catch::Contains("argv[2]"));
  }
  SECTION("empty argv") {
    b.tasks[0].argv.clear();
    CHECK_FALSE(render_index(b).has_value());
  }
  SECTION("line break in the study name") {
    b.study = "x\n#SBATCH --uid=0";
    CHECK_FALSE(build_submit_request(site_options(), b).has_value());
  }
  SECTION("percent in the script dir (a Slurm file name pattern)") {
    b.script_dir = "/scratch/100%/slurm";
    CHECK_FALSE(build_submit_request(site_options(), b).has_value());
  }
}

TEST_CASE("option validation", "[slurm][options][security]") {
  SlurmOptions o;
  o.script_dir = "/tmp/x";
  CHECK(validate_options(o).has_value());
  auto bad = [&](auto mutate, const std::string& key) {
    SlurmOptions c = o;
    mutate(c);
    auto st = validate_options(c);
    REQUIRE_FALSE(st.has_value());
    CHECK_THAT(st.error().message(), Catch::Contains(key));
  };
  bad([](SlurmOptions& c) { c.partition = "debug\n#SBATCH --uid=0"; }, "slurm.partition");
  bad([](SlurmOptions& c) { c.partition = "a b"; }, "slurm.partition");
  bad([](SlurmOptions& c) { c.account = "x\"y"; }, "slurm.account");
  bad([](SlurmOptions& c) { c.qos = "$(id) x"; }, "slurm.qos");
  bad([](SlurmOptions& c) { c.mem = "16GB; rm"; }, "slurm.mem");
  bad([](SlurmOptions& c) { c.gpus_per_node = "a100:x"; }, "slurm.gpus_per_node");
  bad([](SlurmOptions& c) { c.extra_sbatch = {"--exclusive"}; }, "slurm.extra_sbatch[0]");
  bad([](SlurmOptions& c) { c.extra_sbatch = {"#SBATCH --array=0-99"}; }, "slurm.extra_sbatch[0]");
  bad([](SlurmOptions& c) { c.extra_sbatch = {"#SBATCH --x=1\necho pwned"}; }, "slurm.extra_sbatch[0]");
  bad([](SlurmOptions& c) { c.extra_sbatch = {"#SBATCH -N 2"}; }, "slurm.extra_sbatch[0]");
  bad([](SlurmOptions& c) { c.driver = "rest"; }, "slurm.driver");
  bad([](SlurmOptions& c) { c.time_limit = -1; }, "slurm.time_limit");
  bad([](SlurmOptions& c) { c.poll_max_s = 0.1; c.poll_min_s = 1; }, "slurm.poll_min_s");
  bad([](SlurmOptions& c) { c.script_dir.clear(); }, "slurm.script_dir");
  bad([](SlurmOptions& c) { c.driver = "api"; c.extra_sbatch = {"#SBATCH --exclusive"}; }, "slurm.extra_sbatch");
  CHECK(normalize_extra_sbatch("#SBATCH --exclusive", 0).value() == "#SBATCH --exclusive");
  CHECK(normalize_extra_sbatch("#SBATCH --gres gpu:2", 0).value() == "#SBATCH --gres=gpu:2");
  CHECK(normalize_extra_sbatch("#SBATCH --comment-x=a \"b\"", 0).value() == "#SBATCH --comment-x=\"a \\\"b\\\"\"");
  CHECK(mem_megabytes("16G") == 16384);
  CHECK(mem_megabytes("4000") == 4000);
  CHECK(mem_megabytes("512K") == 1);
  CHECK(mem_megabytes("2T") == 2 * 1024 * 1024);
}

TEST_CASE("a broken template is an error, not a broken script", "[slurm][script]") {
  auto b = batch(1);
  CHECK_FALSE(prepare_batch("#!/bin/bash\n{{#directives}}\n", site_options(), b).has_value());
  CHECK_FALSE(prepare_batch("no shebang {{index_file}}\n", site_options(), b).has_value());
  SlurmOptions o = site_options();
  o.template_path = "/nonexistent/dlsweep/template.mustache";
  CHECK_FALSE(load_template(o).has_value());
}

TEST_CASE("template: a line holding only a section tag leaves no line behind, rendered or not", "[slurm][script]") {
  auto render = [](const std::string& t, bool s) {
    kainjow::mustache::mustache m(mark_standalone_sections(t));
    kainjow::mustache::data d;
    d.set("s", s ? kainjow::mustache::data::type::bool_true : kainjow::mustache::data::type::bool_false);
    d.set("v", "V");
    return drop_section_marks(m.render(d));
  };
  const std::string t = "a\n{{#s}}\n\nx\n{{/s}}\n  {{^s}}  \ny\n\t{{/s}}\nb {{v}}\n";
  CHECK(render(t, true) == "a\n\nx\nb V\n");   // the blank line inside the section stays
  CHECK(render(t, false) == "a\ny\nb V\n");     // was "a\n\ny\n\nb V\n" (kainjow)
  // Tags sharing a line with text are not standalone: the line stays as rendered.
  CHECK(render("a {{#s}}x{{/s}}\nb\n", false) == "a \nb\n");
}
