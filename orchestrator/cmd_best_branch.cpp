// cmd_best_branch.cpp — `best` of a branching study: the critical-batch curve, the schedule
// that follows it, `--write-schedule` (cmd_best_branch.hpp).
#include "orchestrator/cmd_best_branch.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/atomic_file.hpp"
#include "common/exit_codes.hpp"
#include "common/lr_rule.hpp"
#include "common/train_params.hpp"
#include "orchestrator/cmd_best_pbt.hpp"
#include "orchestrator/error_printer.hpp"
#include "orchestrator/read_support.hpp"

namespace dlsweep::orch {

using nlohmann::json;

namespace {

bool same_position(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

double position(const analysis::EvalPoint& p, const std::string& axis) {
  return axis == "samples" ? static_cast<double>(p.samples) : p.epoch;
}

std::string axis_value(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e15) return fmt::format("{}", static_cast<std::int64_t>(v));
  return fmt::format("{:.6g}", v);
}

// The trial's curve by number.
std::map<std::int64_t, const analysis::TrialData*> trials_by_number(const analysis::StudyData& study) {
  std::map<std::int64_t, const analysis::TrialData*> out;
  for (const auto& t : study.trials) out[t.number] = &t;
  return out;
}

// The trunk segment ending at `at`: its last record when the segment reached `at`.
const analysis::EvalPoint* trunk_record_at(const BranchStudy& b, const std::map<std::int64_t, const analysis::TrialData*>& trials,
                                           double at) {
  for (const auto& [n, l] : b.links) {
    auto role = BranchRole::from_json(l.branch);
    if (!role || !role->trunk || !same_position(l.end, at)) continue;
    auto t = trials.find(n);
    if (t == trials.end() || t->second->curve.empty()) continue;
    const auto& last = t->second->curve.back();
    if (branch_report_counts(position(last, b.plan.by), l.start, l.end)) return &last;  // it got to its end
  }
  return nullptr;
}

// B_simple at the end of the trunk segment ending at `at`: its last grad_noise_scale.
std::optional<double> trunk_b_simple(const BranchStudy& b, const std::map<std::int64_t, const analysis::TrialData*>& trials,
                                     double at) {
  for (const auto& [n, l] : b.links) {
    auto role = BranchRole::from_json(l.branch);
    if (!role || !role->trunk || !same_position(l.end, at)) continue;
    auto t = trials.find(n);
    if (t == trials.end()) continue;
    for (auto p = t->second->curve.rbegin(); p != t->second->curve.rend(); ++p)
      if (p->noise_scale) return p->noise_scale;
  }
  return std::nullopt;
}

// A dlsweep-train parameter from the study's fixed params, else the trainer's default.
json train_param(const json& spec, const char* name) {
  if (auto f = spec.find("fixed"); f != spec.end() && f->is_object())
    if (auto v = f->find(name); v != f->end() && !v->is_null()) return *v;
  const auto* info = trainer::find_param(name);
  return info ? info->default_value : json(nullptr);
}

std::string plural(std::int64_t n, const char* word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

}  // namespace

Result<std::optional<BranchStudy>> load_branch(const db::Storage& storage, const db::StudyRow& st) {
  auto stored = read_stored_study(st.spec_json, st.name);
  if (!stored) return std::unexpected(stored.error());
  if (!stored->branch) return std::optional<BranchStudy>{};
  BranchStudy b;
  b.name = st.name;
  b.spec = json::parse(st.spec_json, nullptr, false);
  b.source_path = st.source_path;
  b.plan = *stored->branch;
  b.trainer = stored->trainer;
  auto links = load_links(storage, st.id);
  if (!links) return std::unexpected(links.error());
  for (auto& [n, l] : *links)
    if (l.branch.is_object()) b.links[n] = std::move(l);
  return std::optional<BranchStudy>{std::move(b)};
}

BranchAnswer branch_answer(const BranchStudy& b, const analysis::StudyData& study) {
  BranchAnswer a;
  a.axis = b.plan.by;
  const auto trials = trials_by_number(study);
  // Each finished branch's value, by point.
  std::map<std::int64_t, std::vector<BranchValue>> values;
  for (const auto& [n, l] : b.links) {
    auto role = BranchRole::from_json(l.branch);
    if (!role || role->trunk) continue;
    auto t = trials.find(n);
    if (t == trials.end()) continue;
    // Its value: the last report that counts (at its end, or a fraction of a step short of it).
    const analysis::EvalPoint* last = nullptr;
    for (auto p = t->second->curve.rbegin(); p != t->second->curve.rend() && !last; ++p)
      if (p->value && branch_report_counts(position(*p, a.axis), l.start, l.end)) last = &*p;
    if (!last) continue;  // it never got to its end
    values[role->point].push_back({role->batch, role->lr_factor, role->seed, *last->value, n});
    ++a.finished;
  }
  const BranchRule rule{b.plan.batches, b.plan.tolerance, study.mode == "max", 2};
  for (std::size_t g = 0; g < b.plan.points.size(); ++g) {
    const auto point = static_cast<std::int64_t>(g + 1);
    const double at = b.plan.points[g];
    a.points.push_back(branch_point_answer(point, at, values[point], rule));
    const auto* rec = trunk_record_at(b, trials, at);
    a.samples.push_back(rec ? std::optional<std::int64_t>(rec->samples) : std::nullopt);
    a.b_simple.push_back(trunk_b_simple(b, trials, at));
  }
  // samples -> epochs, from the trunk's latest record that has both.
  const analysis::EvalPoint* latest = nullptr;
  std::optional<double> trunk_end;
  for (const auto& [n, l] : b.links) {
    auto role = BranchRole::from_json(l.branch);
    if (!role || !role->trunk) continue;
    trunk_end = std::max(trunk_end.value_or(l.end), l.end);
    if (auto t = trials.find(n); t != trials.end())
      for (const auto& p : t->second->curve)
        if (p.samples > 0 && p.epoch > 0 && (!latest || p.samples > latest->samples)) latest = &p;
  }
  if (latest) a.epochs_per_sample = latest->epoch / static_cast<double>(latest->samples);
  // Training ends at the study's `end` (the trainer's epochs): the trunk stops at the last point
  // by default, so its segments end earlier.
  if (b.plan.end > 0) trunk_end = std::max(trunk_end.value_or(b.plan.end), b.plan.end);
  // The samples at a position of the trunk's run: the axis itself, 0 at the start, else a
  // trunk segment's end.
  auto samples_at = [&](double at) -> std::optional<std::int64_t> {
    if (a.axis == "samples") return static_cast<std::int64_t>(std::llround(at));
    if (at == 0) return 0;
    if (const auto* rec = trunk_record_at(b, trials, at)) return rec->samples;
    if (a.epochs_per_sample && *a.epochs_per_sample > 0)  // past the trunk: by its samples per epoch
      return static_cast<std::int64_t>(std::llround(at / *a.epochs_per_sample));
    return std::nullopt;
  };
  if (b.trainer) {
    if (const json rule = train_param(b.spec, "lr_rule"); rule.is_string()) a.lr_rule = rule.get<std::string>();
    if (const json lr = train_param(b.spec, "base_lr"); lr.is_number()) a.base_lr = lr.get<double>();
    if (const json bb = train_param(b.spec, "base_batch"); bb.is_number_integer()) a.base_batch = bb.get<std::int64_t>();
  }
  const auto stages = b.plan.batches.empty() ? std::vector<RampStage>{} : branch_schedule(a.points, b.plan.batches.front());
  for (std::size_t i = 0; i < stages.size(); ++i) {
    BranchStage s{stages[i], std::nullopt, std::nullopt, std::nullopt, std::nullopt};
    s.end = i + 1 < stages.size() ? std::optional<double>(stages[i + 1].at) : trunk_end;
    if (a.base_lr && a.base_batch)
      if (auto k = lr_rule_scale(a.lr_rule, s.stage.batch, *a.base_batch)) s.lr = *a.base_lr * *k;
    if (s.end && *s.end > s.stage.at)
      if (auto from = samples_at(s.stage.at), to = samples_at(*s.end); from && to && *to >= *from) {
        s.samples = *to - *from;
        s.steps = (*s.samples + s.stage.batch - 1) / s.stage.batch;
      }
    a.stages.push_back(s);
  }
  a.batch_ramp = ramp_text(stages);
  return a;
}

std::string branch_text(const BranchStudy& b, const analysis::StudyData& study, const BranchAnswer& a, bool explain) {
  std::string out;
  auto line = [&](std::string s) { out += std::move(s) + "\n"; };
  line(fmt::format("critical batch of {} (branch: trunk at batch {}, batches {}, each branch {} {} further, {} within "
                   "{:g}% of the trunk's batch, {}):",
                   b.name, b.plan.batches.empty() ? 0 : b.plan.batches.front(), fmt::join(b.plan.batches, ", "),
                   axis_value(b.plan.delta), a.axis, study.metric, b.plan.tolerance * 100,
                   study.mode == "max" ? "maximised" : "minimised"));
  for (std::size_t g = 0; g < a.points.size(); ++g) {
    const auto& p = a.points[g];
    const std::string where = a.axis == "samples" || !a.samples[g]
                                  ? fmt::format("{} {}", a.axis, axis_value(p.at))
                                  : fmt::format("{} {} ({} samples)", a.axis, axis_value(p.at), *a.samples[g]);
    std::int64_t most = p.min_seeds;  // extra seeds go to the open batches only: a range
    for (const auto& s : p.batches) most = std::max(most, s.n);
    line(fmt::format("  {}: {}; {}", where, p.why,
                     p.min_seeds == 0      ? std::string("a batch has no seed yet")
                     : most == p.min_seeds ? fmt::format("{} per batch", plural(p.min_seeds, "seed"))
                                           : fmt::format("{}-{} seeds per batch", p.min_seeds, most)));
    if (!explain || p.batches.empty()) continue;
    line(fmt::format("      {:>7}  {:>5}  {:>21}  {:>3}  {:>15}  {:<9}  {}", "batch", "LR x", "mean ± sd", "n", "worse",
                     "within", "trials"));
    for (const auto& s : p.batches) {
      const bool ref = &s == &p.batches.front() && p.lo;
      const std::string worse = ref ? "-" : std::isfinite(s.se) ? fmt::format("{:.3g}±{:.2g}", s.worse, 2 * s.se)
                                                                  : fmt::format("{:.3g}", s.worse);
      line(fmt::format("      {:>7}  {:>5g}  {:>21}  {:>3}  {:>15}  {:<9}  {}", s.batch, s.lr_factor,
                       fmt::format("{:.5g} ± {:.2g}", s.mean, s.sd), s.n, worse,
                       ref ? "reference" : s.surely ? "surely" : s.possibly ? "possibly" : "no", fmt::join(s.trials, " ")));
    }
  }
  if (a.finished == 0) return out;
  line(fmt::format("schedule that follows it: batch_ramp \"{}\" ({}){}", a.batch_ramp,
                   a.axis == "samples" ? "stages by samples" : "stages by epoch",
                   a.base_lr && a.base_batch && !a.lr_rule.empty()
                       ? fmt::format(", LR by lr_rule {} from base_lr {:g} at base_batch {}", a.lr_rule, *a.base_lr, *a.base_batch)
                       : ""));
  for (const auto& s : a.stages) {
    std::string l = fmt::format("  {} [{}, {}): batch {}", a.axis, axis_value(s.stage.at), s.end ? axis_value(*s.end) : "end",
                                s.stage.batch);
    if (s.lr) l += fmt::format(", LR {:.4g}", *s.lr);
    if (s.samples) l += fmt::format(", {} samples = {}", *s.samples, plural(*s.steps, "step"));
    line(l);
  }
  std::vector<std::string> noise;
  for (std::size_t g = 0; g < a.points.size(); ++g)
    if (a.b_simple[g]) noise.push_back(fmt::format("{} {}: {:.4g}", a.axis, axis_value(a.points[g].at), *a.b_simple[g]));
  if (!noise.empty()) line(fmt::format("B_simple on the trunk (grad_noise_scale): {}", fmt::join(noise, ", ")));
  return out;
}

json branch_json(const BranchStudy& b, const analysis::StudyData& study, const BranchAnswer& a, bool explain) {
  json points = json::array();
  for (std::size_t g = 0; g < a.points.size(); ++g) {
    json p = a.points[g].to_json();
    if (!explain) p.erase("batches");
    p["samples"] = opt(a.samples[g]);
    p["b_simple"] = opt(a.b_simple[g]);
    points.push_back(std::move(p));
  }
  json stages = json::array();
  for (const auto& s : a.stages)
    stages.push_back({{"at", s.stage.at}, {"batch", s.stage.batch}, {"end", opt(s.end)}, {"lr", opt(s.lr)},
                      {"samples", opt(s.samples)}, {"steps", opt(s.steps)}});
  return {{"study", b.name},
          {"kind", "branch"},
          {"axis", a.axis},
          {"objective", {{"metric", study.metric}, {"mode", study.mode}}},
          {"batches", b.plan.batches},
          {"delta", b.plan.delta},
          {"tolerance", b.plan.tolerance},
          {"finished_branches", a.finished},
          {"critical_batch", points},
          {"schedule",
           {{"batch_ramp", a.batch_ramp},
            {"lr_rule", a.lr_rule.empty() ? json(nullptr) : json(a.lr_rule)},
            {"base_lr", opt(a.base_lr)},
            {"base_batch", opt(a.base_batch)},
            {"stages", stages}}}};
}

Result<json> branch_schedule_study(const BranchStudy& b, const BranchAnswer& a) {
  std::vector<std::string> stages;
  for (const auto& s : a.stages) stages.push_back(fmt::format("{} {}: batch {}", a.axis, axis_value(s.stage.at), s.stage.batch));
  if (!b.trainer)
    return fail(fmt::format("study {} runs its own program: a batch schedule is the program's to apply, dlsweep cannot "
                            "write it as a study",
                            b.name),
                "--write-schedule",
                fmt::format("train with these stages (batch_ramp \"{}\" on {}): {}", a.batch_ramp, a.axis,
                            fmt::join(stages, "; ")));
  std::vector<RampStage> ramp;
  for (const auto& s : a.stages) ramp.push_back(s.stage);
  if (a.axis == "samples") {  // dlsweep-train's batch_ramp is by epoch
    if (!a.epochs_per_sample)
      return fail(fmt::format("study {}'s schedule is by samples and its trunk reported no epoch to turn them into epochs",
                              b.name),
                  "--write-schedule", fmt::format("set batch_ramp by hand from the stages: {}", fmt::join(stages, "; ")));
    for (auto& r : ramp) r.at = std::round(r.at * *a.epochs_per_sample * 1e6) / 1e6;
  }
  json j = b.spec;
  j["name"] = b.name + "-schedule";
  j["description"] = fmt::format("the batch schedule that follows the critical batch measured by branching study {}, "
                                 "run as one fixed trial",
                                 b.name);
  json search{{"algorithm", "grid"}};
  if (auto s = b.spec.find("search"); s != b.spec.end() && s->is_object() && s->contains("seed")) search["seed"] = (*s)["seed"];
  j["search"] = search;
  j.erase("space");
  j.erase("pruner");
  json fixed = j.contains("fixed") && j["fixed"].is_object() ? j["fixed"] : json::object();
  fixed["batch_size"] = ramp.front().batch;
  fixed["batch_ramp"] = ramp_text(ramp);
  j["fixed"] = fixed;
  return j;
}

int cmd_best_branch(const BestArgs& args, const BranchStudy& b, const analysis::StudyData& study) {
  const BranchAnswer a = branch_answer(b, study);
  if (a.finished == 0) {
    fmt::print(stderr, "study {}: no branch has finished yet: wait, or `dlsweep status {}`\n", b.name, b.name);
    return exit_code::trials_failed;
  }
  if (!args.write_schedule.empty()) {
    namespace fs = std::filesystem;
    auto j = branch_schedule_study(b, a);
    if (!j) return print_error(j.error(), exit_code::usage);
    std::error_code ec;
    const fs::path out = fs::absolute(args.write_schedule, ec);
    const bool source_known = fs::path(b.source_path).is_absolute();
    if (source_known && fs::equivalent(out, b.source_path, ec))
      return print_error(Error{fmt::format("{} is the study file of {} itself", args.write_schedule, b.name),
                               "--write-schedule", "write the schedule to a new file, e.g. --write-schedule schedule.yaml"},
                         exit_code::usage);
    if (source_known) *j = relocate_study_file(std::move(*j), fs::path(b.source_path).parent_path(), out.parent_path());
    if (auto st = write_file_atomic(out, j->dump(2) + "\n"); !st)
      return print_error(Error{fmt::format("cannot write {}: {}", args.write_schedule, st.error().what), "--write-schedule",
                               "give a file in a folder that exists and that you can write"},
                         exit_code::runtime);
  }
  if (args.format == "json") {
    json j = branch_json(b, study, a, args.explain);
    if (!args.write_schedule.empty()) j["schedule_study"] = args.write_schedule;
    fmt::print("{}\n", j.dump(2));
    return exit_code::ok;
  }
  fmt::print("{}", branch_text(b, study, a, args.explain));
  if (!args.write_schedule.empty())
    fmt::print("  schedule study written to {} (`dlsweep submit {}` runs it as one fixed trial)\n", args.write_schedule,
               args.write_schedule);
  else if (b.trainer)
    fmt::print("  run it: `dlsweep best {} --write-schedule schedule.yaml`, then `dlsweep submit schedule.yaml`\n", b.name);
  return exit_code::ok;
}

}  // namespace dlsweep::orch
