// script.cpp — batch script, index file and SubmitRequest for one batch; see
// slurm/script.hpp for the format and the quoting invariants.
#include "schedulers/slurm/script.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <kainjow/mustache.hpp>

#include "common/protocol.hpp"
#include "common/program_path.hpp"
#include "common/shell_quote.hpp"
#include "schedulers/launch.hpp"
#include "schedulers/slurm/quote.hpp"

#ifndef DLSWEEP_TEMPLATE_SOURCE_DIR
#define DLSWEEP_TEMPLATE_SOURCE_DIR ""
#endif

namespace dlsweep::sched::slurm {

namespace fs = std::filesystem;
namespace mus = kainjow::mustache;

std::string job_name_for(const std::string& study) { return "dlsweep:" + study; }

BatchRequest single_job_request(const JobSpec& spec, std::string tag, std::filesystem::path script_dir,
                                int time_limit_min) {
  BatchRequest req;
  req.study = spec.study;
  req.tag = std::move(tag);
  req.script_dir = std::move(script_dir);
  req.ranks = spec.ranks;
  req.launcher = spec.launcher;
  req.warn_always = spec.warn_always;
  req.time_limit_min = time_limit_min;
  req.tasks.push_back(BatchTask{spec.token(), spec.workdir, spec.argv, spec.env});
  return req;
}

Result<std::string> render_index(const BatchRequest& batch) {
  std::string out = fmt::format(
      "# dlsweep slurm index v1 for {}.sh: one line per array task (line 2 = task 0): "
      "TASK TOKEN TRIAL_DIR N_ENV KEY=VALUE... ARGV...\n",
      batch.tag);
  for (std::size_t i = 0; i < batch.tasks.size(); ++i) {
    const BatchTask& t = batch.tasks[i];
    const std::string where = fmt::format("slurm job {}", t.token);
    if (t.argv.empty() || t.argv[0].empty())
      return fail("empty command line", where, "give the job a program to run");
    if (t.trial_dir.empty() || !t.trial_dir.is_absolute())
      return fail(fmt::format("trial directory '{}' is not an absolute path", t.trial_dir.string()), where);
    std::vector<std::string> words;
    auto add = [&](std::string_view value, std::string what) -> Status {
      auto w = index_word(value, where + ": " + what);
      if (!w) return std::unexpected(w.error());
      words.push_back(std::move(*w));
      return {};
    };
    if (auto st = add(std::to_string(i), "task"); !st) return std::unexpected(st.error());
    if (auto st = add(t.token, "token"); !st) return std::unexpected(st.error());
    if (auto st = add(t.trial_dir.string(), "workdir"); !st) return std::unexpected(st.error());
    if (auto st = add(std::to_string(t.env.size()), "env"); !st) return std::unexpected(st.error());
    for (const auto& [k, v] : t.env) {
      if (!valid_env_name(k)) {
        return fail(fmt::format("'{}' is not a valid environment variable name", k), where + ": env",
                    "use letters, digits and _ (not starting with a digit)");
      }
      if (auto st = add(k + "=" + v, "env." + k); !st) return std::unexpected(st.error());
    }
    for (std::size_t a = 0; a < t.argv.size(); ++a)
      if (auto st = add(t.argv[a], fmt::format("argv[{}]", a)); !st) return std::unexpected(st.error());
    for (std::size_t w = 0; w < words.size(); ++w) out += (w ? " " : "") + words[w];
    out += '\n';
  }
  return out;
}

Result<SubmitRequest> build_submit_request(const SlurmOptions& o, const BatchRequest& batch) {
  const std::string where = fmt::format("slurm batch {} of study '{}'", batch.tag, batch.study);
  if (batch.tasks.empty()) return fail("no tasks", where);
  if (first_control_char(batch.study) >= 0)
    return fail("the study name contains a control character", where, "rename the study");
  if (!batch.script_dir.is_absolute())
    return fail(fmt::format("script directory '{}' is not absolute", batch.script_dir.string()), where);
  if (batch.script_dir.string().find('%') != std::string::npos) {
    return fail(fmt::format("script directory '{}' contains '%', which Slurm reads as a file name pattern",
                            batch.script_dir.string()),
                where, "use a directory without '%'");
  }
  if (batch.ranks < 1) return fail(fmt::format("ranks = {}", batch.ranks), where, "use 1 or more ranks");
  SubmitRequest r;
  r.script_path = batch.script_path();
  r.work_dir = batch.script_dir;
  r.job_name = job_name_for(batch.study);
  r.comment = "dlsweep:" + batch.tag;
  const std::size_t n = batch.tasks.size();
  if (n > 1) {
    r.array = fmt::format("0-{}", n - 1);
    if (batch.throttle > 0 && batch.throttle < n) r.array += fmt::format("%{}", batch.throttle);
  }
  r.std_out = (batch.script_dir / (n > 1 ? "slurm-%A_%a.out" : "slurm-%j.out")).string();
  r.partition = o.partition;
  r.account = o.account;
  r.qos = o.qos;
  r.constraint = o.constraint;
  r.mem = o.mem;
  r.gpus_per_node = o.gpus_per_node;
  r.gpus_per_task = o.gpus_per_task;
  r.cpus_per_gpu = o.cpus_per_gpu;
  r.time_limit_min = batch.time_limit_min > 0 ? batch.time_limit_min : o.time_limit;
  r.nodes = o.nodes;
  r.ntasks_per_node = o.ntasks_per_node;
  if (batch.ranks > 1 || !o.gpus_per_task.empty()) r.ntasks = batch.ranks;
  r.cpus_per_task = o.cpus_per_task;
  if (batch.launcher == "torchrun") {
    // One torchrun agent per node starts ranks/nodes workers: the allocation is one task per
    // node holding what those workers need.
    const int n = std::max(o.nodes, 1);
    if (batch.ranks % n != 0)
      return fail(fmt::format("{} ranks do not split evenly over {} nodes", batch.ranks, n), where,
                  "make trial.ranks a multiple of backend.nodes");
    const int per_node = batch.ranks / n;
    r.nodes = n;
    r.ntasks = n;
    r.ntasks_per_node = 1;
    if (o.cpus_per_task > 0) r.cpus_per_task = o.cpus_per_task * per_node;
    if (!o.gpus_per_task.empty()) {
      auto colon = o.gpus_per_task.rfind(':');
      const std::string type = colon == std::string::npos ? "" : o.gpus_per_task.substr(0, colon + 1);
      const int each = std::stoi(colon == std::string::npos ? o.gpus_per_task : o.gpus_per_task.substr(colon + 1));
      r.gpus_per_task.clear();
      r.gpus_per_node = fmt::format("{}{}", type, each * per_node);
    }
  }
  r.signal_lead_s = o.signal_lead_s;
  // A lead as long as the time limit would signal the trial as it starts: it would stop,
  // be requeued and stop again forever. Warn at half time instead.
  if (r.time_limit_min > 0 && r.signal_lead_s >= r.time_limit_min * 60) r.signal_lead_s = r.time_limit_min * 30;
  r.requeue = o.requeue;
  return r;
}

Result<std::vector<std::string>> sbatch_directives(const SubmitRequest& r, const SlurmOptions& o) {
  std::vector<std::string> lines;
  auto opt = [&](const char* name, const std::string& value) -> Status {
    if (value.empty()) return {};
    auto q = sbatch_quote(value, fmt::format("--{}", name));
    if (!q) return std::unexpected(q.error());
    lines.push_back(fmt::format("#SBATCH --{}={}", name, *q));
    return {};
  };
  auto num = [&](const char* name, int v) {
    if (v > 0) lines.push_back(fmt::format("#SBATCH --{}={}", name, v));
  };
  for (auto [name, value] : {std::pair{"job-name", &r.job_name}, {"comment", &r.comment}, {"array", &r.array},
                             {"output", &r.std_out}})
    if (auto st = opt(name, *value); !st) return std::unexpected(st.error());
  lines.push_back("#SBATCH --open-mode=append");
  if (auto st = opt("chdir", r.work_dir.string()); !st) return std::unexpected(st.error());
  for (auto [name, value] : {std::pair{"partition", &r.partition}, {"account", &r.account}, {"qos", &r.qos}})
    if (auto st = opt(name, *value); !st) return std::unexpected(st.error());
  num("time", r.time_limit_min);
  num("nodes", r.nodes);
  num("ntasks", r.ntasks);
  num("ntasks-per-node", r.ntasks_per_node);
  num("cpus-per-task", r.cpus_per_task);
  num("cpus-per-gpu", r.cpus_per_gpu);
  for (auto [name, value] : {std::pair{"gpus-per-node", &r.gpus_per_node}, {"gpus-per-task", &r.gpus_per_task}, {"mem", &r.mem},
                             {"constraint", &r.constraint}})
    if (auto st = opt(name, *value); !st) return std::unexpected(st.error());
  if (r.signal_lead_s > 0) lines.push_back(fmt::format("#SBATCH --signal=B:USR2@{}", r.signal_lead_s));
  lines.push_back(r.requeue ? "#SBATCH --requeue" : "#SBATCH --no-requeue");
  for (std::size_t i = 0; i < o.extra_sbatch.size(); ++i) {
    auto l = normalize_extra_sbatch(o.extra_sbatch[i], i);
    if (!l) return std::unexpected(l.error());
    lines.push_back(std::move(*l));
  }
  return lines;
}

namespace {
constexpr char kSectionMark = '\x01';
}

std::string mark_standalone_sections(const std::string& text) {
  // The mustache spec removes a line that holds only a section tag ({{#x}}, {{^x}}, {{/x}})
  // and whitespace; kainjow's renderer does so only for sections it renders, so a false
  // section left an empty line behind (blank lines between setup lines, after a skipped
  // trap). Each such line gets a mark before the tag (so the renderer keeps the line as
  // it is), and drop_section_marks removes the lines that are only marks after rendering:
  // the spec's output, for the project's template and a site's.
  std::string out;
  out.reserve(text.size() + 64);
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    std::string_view body = line;
    while (!body.empty() && (body.front() == ' ' || body.front() == '\t')) body.remove_prefix(1);
    while (!body.empty() && (body.back() == ' ' || body.back() == '\t' || body.back() == '\r')) body.remove_suffix(1);
    const bool section_tag = body.size() > 5 && body.substr(0, 2) == "{{" &&
                             (body[2] == '#' || body[2] == '^' || body[2] == '/') && body.find("}}") == body.size() - 2;
    if (section_tag) out.push_back(kSectionMark), out.append(body);
    else out.append(line);
    if (end < text.size()) out.push_back('\n');
    pos = end + 1;
  }
  return out;
}

std::string drop_section_marks(const std::string& rendered) {
  std::string out;
  out.reserve(rendered.size());
  std::size_t pos = 0;
  while (pos < rendered.size()) {
    std::size_t end = rendered.find('\n', pos);
    const bool newline = end != std::string::npos;
    if (!newline) end = rendered.size();
    std::string_view line(rendered.data() + pos, end - pos);
    if (line.find(kSectionMark) != std::string_view::npos) {
      std::string kept;
      for (char c : line)
        if (c != kSectionMark) kept.push_back(c);
      if (kept.find_first_not_of(" \t\r") != std::string::npos) {
        out += kept;
        if (newline) out.push_back('\n');
      }
    } else {
      out.append(line);
      if (newline) out.push_back('\n');
    }
    pos = end + 1;
  }
  return out;
}

Result<std::string> render_script(const std::string& template_text, const SlurmOptions& o, const BatchRequest& batch,
                                  const SubmitRequest& req) {
  auto directives = sbatch_directives(req, o);
  if (!directives) return std::unexpected(directives.error());
  mus::mustache tmpl(mark_standalone_sections(template_text));
  if (!tmpl.is_valid()) return fail(tmpl.error_message(), "slurm batch template", "fix the template's mustache syntax");
  // Values are quoted before they reach the template: no HTML escaping on top.
  tmpl.set_custom_escape([](const std::string& s) { return s; });
  mus::data d;
  mus::data dir_list{mus::data::type::list};
  for (const auto& l : *directives) dir_list << mus::data(l);
  mus::data setup_list{mus::data::type::list};
  for (const auto& l : o.setup) setup_list << mus::data(l);
  mus::data checked{mus::data::type::list};
  for (std::size_t i = 0; i < o.setup.size(); ++i) {
    mus::data line;
    line.set("line", o.setup[i]);
    line.set("index", std::to_string(i));
    line.set("quoted", shell_quote(o.setup[i]));
    line.set("first", i == 0 ? mus::data::type::bool_true : mus::data::type::bool_false);
    line.set("last", i + 1 == o.setup.size() ? mus::data::type::bool_true : mus::data::type::bool_false);
    checked << line;
  }
  d.set("directives", dir_list);
  d.set("setup", setup_list);  // plain lines, for site templates written before setup_checked
  d.set("setup_checked", checked);
  d.set("study_comment", shell_quote(batch.study));
  d.set("task_count", std::to_string(batch.tasks.size()));
  d.set("index_file", shell_quote(batch.index_path().string()));
  d.set("stdout_file", shell_quote(protocol::kStdoutFile));
  d.set("stderr_file", shell_quote(protocol::kStderrFile));
  d.set("ranks", std::to_string(batch.ranks));
  d.set("multi_rank", batch.ranks > 1 ? mus::data::type::bool_true : mus::data::type::bool_false);
  const int nodes = batch.launcher == "torchrun" ? std::max(req.nodes, 1) : std::max(o.nodes, 1);
  // With its separating space, so that a trial without a launcher starts the line.
  const std::string launch = slurm_launch_prefix(batch.ranks, nodes, batch.launcher, SrunOptions{o.mpi, o.gpu_bind, o.cpu_bind});
  d.set("launch", launch.empty() ? launch : launch + " ");
  d.set("torch_env", batch.launcher.empty() || batch.launcher == kLauncherAllocationOnly ? mus::data::type::bool_false
                                                                                        : mus::data::type::bool_true);
  d.set("warn_always", batch.warn_always ? mus::data::type::bool_true : mus::data::type::bool_false);
  d.set("preempt_handler_file", shell_quote(protocol::kPreemptHandlerFile));
  d.set("exit_setup_failed", std::to_string(protocol::kExitSetupFailed));
  d.set("requeue", o.requeue ? mus::data::type::bool_true : mus::data::type::bool_false);
  d.set("exit_stopped", std::to_string(protocol::kExitStopped));
  std::string text = drop_section_marks(tmpl.render(d));
  if (!tmpl.is_valid()) return fail(tmpl.error_message(), "slurm batch template", "fix the template");
  if (text.rfind("#!", 0) != 0)
    return fail("the rendered script does not start with '#!'", "slurm batch template", "start it with #!/bin/bash");
  return text;
}

Result<PreparedBatch> prepare_batch(const std::string& template_text, const SlurmOptions& options,
                                    const BatchRequest& batch) {
  auto req = build_submit_request(options, batch);
  if (!req) return std::unexpected(req.error());
  auto index = render_index(batch);
  if (!index) return std::unexpected(index.error());
  auto script = render_script(template_text, options, batch, *req);
  if (!script) return std::unexpected(script.error());
  req->script = std::move(*script);
  return PreparedBatch{std::move(*req), std::move(*index)};
}

Result<fs::path> find_default_template() {
  std::vector<fs::path> tried;
  if (const char* env = std::getenv("DLSWEEP_TEMPLATE_DIR"); env && *env) tried.push_back(fs::path(env) / kTemplateFile);
  std::error_code ec;
  if (auto exe = self_executable())
    tried.push_back(exe->parent_path().parent_path() / "share" / "dlsweep" / "templates" / kTemplateFile);
  if (*DLSWEEP_TEMPLATE_SOURCE_DIR) tried.push_back(fs::path(DLSWEEP_TEMPLATE_SOURCE_DIR) / kTemplateFile);
  std::string list;
  for (const auto& p : tried) {
    if (fs::is_regular_file(p, ec)) return p;
    list += (list.empty() ? "" : ", ") + p.string();
  }
  return fail(fmt::format("the Slurm batch template {} was not found (looked in: {})", kTemplateFile, list),
              "slurm.template", "set DLSWEEP_TEMPLATE_DIR or slurm.template to the template's path");
}

Result<std::string> load_template(const SlurmOptions& options) {
  fs::path path = options.template_path;
  if (path.empty()) {
    auto p = find_default_template();
    if (!p) return std::unexpected(p.error());
    path = *p;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(fmt::format("cannot read '{}'", path.string()), "slurm.template", "check the path");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace dlsweep::sched::slurm
