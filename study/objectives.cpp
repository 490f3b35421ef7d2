// objectives.cpp — `objective:` (one or several) and `constraints:`, with every problem
// reported at its key path.
#include "study/objectives.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "common/objective.hpp"
#include "common/train_params.hpp"

namespace dlsweep::orch {

namespace {

constexpr std::string_view kObjectiveKeys[] = {"metric", "mode", "target", "stop_at_target", "rank_by"};
constexpr std::string_view kConstraintKeys[] = {"metric", "min", "max", "reached_target"};
constexpr std::string_view kModes[] = {"min", "max"};
constexpr std::string_view kRankBy[] = {"best", "final"};

// One objective map. `first`: the curve dlsweep follows (reported metric; target allowed).
// `several`: part of a list (derived figures allowed after the first).
std::optional<StudySpec::Objective> read_one(StudyReader& r, const Field& o, bool trainer, bool first, bool several) {
  if (!r.map(o, kObjectiveKeys)) return std::nullopt;
  StudySpec::Objective obj;
  bool ok = true;
  Field metric = StudyReader::field(o, "metric");
  if (r.require(metric, "add `metric: val_acc` (the metric to optimise)")) {
    auto s = metric->is_string() ? std::optional(metric->get<std::string>()) : std::nullopt;
    if (several && !first && s && is_derived_figure(*s)) {
      obj.metric = *s;
    } else if (several && first && s && is_derived_figure(*s)) {
      r.error(metric.path, fmt::format("the first objective must be a metric the trial reports, not the derived '{}'", *s),
              "list the reported metric (e.g. val_acc with its target) first; dlsweep follows its curve");
      ok = false;
    } else if (trainer) {
      std::vector<std::string_view> names(trainer::reported_metrics().begin(), trainer::reported_metrics().end());
      if (several && !first)
        for (auto d : derived_figures()) names.push_back(d);
      if (auto w = r.word(metric, names)) obj.metric = *w;
      else ok = false;
    } else if (auto str = r.string(metric)) {
      if (str->empty()) { r.error(metric.path, "metric is empty", "name a metric your program reports"); ok = false; }
      else obj.metric = *str;
    } else {
      ok = false;
    }
  } else {
    ok = false;
  }
  Field mode = StudyReader::field(o, "mode");
  if (r.require(mode, "add `mode: max` (higher is better) or `mode: min`")) {
    if (auto s = r.word(mode, kModes)) obj.mode = *s;
    else ok = false;
  } else {
    ok = false;
  }
  // rank_by: which report of the metric ranks a trial (any objective; a derived figure has one value).
  if (Field rb = StudyReader::field(o, "rank_by")) {
    if (auto s = r.word(rb, kRankBy)) obj.rank_by = *s;
    else ok = false;
  }
  Field t = StudyReader::field(o, "target");
  Field stop = StudyReader::field(o, "stop_at_target");
  if (!first) {
    for (const Field& f : {t, stop})
      if (f) {
        r.error(f.path, fmt::format("only the first objective takes {}", f.key()),
                "move it to the first objective (the curve dlsweep follows), or remove it");
        ok = false;
      }
    return ok ? std::optional(obj) : std::nullopt;
  }
  if (t)
    if (auto v = r.number(t, -std::numeric_limits<double>::max(), false)) obj.target = *v;
  if (stop) {
    if (auto b = r.boolean(stop)) {
      if (*b && !t)
        r.error(stop.path, "stop_at_target needs a target to stop at",
                "add `target: 0.88` to objective, or remove stop_at_target");
      else obj.stop_at_target = *b;
    }
  }
  return ok ? std::optional(obj) : std::nullopt;
}

// Whether the first objective, as written, has a `target:` key. What needs the target is
// checked against this, not against the objective as read, so that a first objective with
// another error (`mode: maximize`) is not also blamed for a target it has.
bool target_written(const Field& o) {
  if (!o) return false;
  if (o->is_array()) return !o->empty() && bool(StudyReader::field(StudyReader::item(o, 0), "target"));
  return bool(StudyReader::field(o, "target"));
}

void read_constraints(StudyReader& r, const Field& root, bool trainer, bool has_target, StudySpec& spec) {
  Field cs = StudyReader::field(root, "constraints");
  if (!cs || !r.list(cs, "write constraints: [{metric: rank_seconds, max: 3600}, {reached_target: true}]")) return;
  for (std::size_t i = 0; i < cs->size(); ++i) {
    Field c = StudyReader::item(cs, i);
    if (!r.map(c, kConstraintKeys)) continue;
    ConstraintDef def;
    Field reached = StudyReader::field(c, "reached_target");
    Field metric = StudyReader::field(c, "metric");
    Field lo = StudyReader::field(c, "min"), hi = StudyReader::field(c, "max");
    if (reached) {
      auto b = r.boolean(reached);
      if (!b) continue;
      if (!*b) {
        r.error(reached.path, "reached_target: false constrains nothing", "write reached_target: true, or remove the item");
        continue;
      }
      if (metric || lo || hi) {
        r.error(c.path, "a constraint is either {reached_target: true} or {metric, min/max}, not both",
                "split it into two items");
        continue;
      }
      if (!has_target) {
        r.error(reached.path, "reached_target needs a target", "add `target:` to the (first) objective");
        continue;
      }
      def.reached_target = true;
      spec.constraints.push_back(std::move(def));
      continue;
    }
    if (!r.require(metric, "add `metric: rank_seconds` and `max: 3600` (or `reached_target: true`)")) continue;
    if (auto s = r.string(metric)) {
      if (s->empty()) { r.error(metric.path, "metric is empty", "name a reported metric or a derived figure"); continue; }
      if (trainer && !is_derived_figure(*s)) {
        std::vector<std::string_view> names(trainer::reported_metrics().begin(), trainer::reported_metrics().end());
        for (auto d : derived_figures()) names.push_back(d);
        if (!r.word(metric, names)) continue;
      }
      if (needs_target(*s) && !has_target) {
        r.error(metric.path, fmt::format("{} needs a target", *s), "add `target:` to the (first) objective");
        continue;
      }
      def.metric = *s;
    } else {
      continue;
    }
    if (lo)
      if (auto v = r.number(lo, -std::numeric_limits<double>::max(), false)) def.min = *v;
    if (hi)
      if (auto v = r.number(hi, -std::numeric_limits<double>::max(), false)) def.max = *v;
    if (!lo && !hi) {
      r.error(c.path, fmt::format("the constraint on {} has no bound", def.metric), "add `max: <number>` and/or `min: <number>`");
      continue;
    }
    if (def.min && def.max && *def.min > *def.max) {
      r.error(lo.path, fmt::format("min {} is above max {}", *def.min, *def.max), "swap them");
      continue;
    }
    if ((lo && !def.min) || (hi && !def.max)) continue;
    spec.constraints.push_back(std::move(def));
  }
}

}  // namespace

void read_objectives(StudyReader& r, const Field& root, bool trainer, StudySpec& spec) {
  Field o = StudyReader::field(root, "objective");
  if (!r.require(o, "add `objective: {metric: val_acc, mode: max}`")) return;
  const bool has_target = target_written(o);
  if (o->is_array()) {
    if (o->empty()) {
      r.error(o.path, "objective is an empty list", "list at least one {metric: val_acc, mode: max}");
      return;
    }
    const bool several = o->size() > 1;
    for (std::size_t i = 0; i < o->size(); ++i) {
      Field item = StudyReader::item(o, i);
      auto one = read_one(r, item, trainer, i == 0, several);
      if (!one) continue;
      const bool dup = std::any_of(spec.objectives.begin(), spec.objectives.end(),
                                   [&](const auto& x) { return x.metric == one->metric; });
      if (dup) {
        r.error(StudyReader::field(item, "metric").path, fmt::format("{} is already an objective", one->metric),
                "list each metric once");
        continue;
      }
      if (i > 0 && needs_target(one->metric) && !has_target) {
        r.error(StudyReader::field(item, "metric").path, fmt::format("{} needs a target", one->metric),
                fmt::format("add `target:` to the first objective ({} is counted to it)", one->metric));
        continue;
      }
      spec.objectives.push_back(*one);
    }
  } else {
    if (auto one = read_one(r, o, trainer, /*first=*/true, /*several=*/false)) spec.objectives.push_back(*one);
  }
  if (!spec.objectives.empty()) spec.objective = spec.objectives[0];
  // No objective read at all: its errors are reported; the constraints are not also refused for a target.
  read_constraints(r, root, trainer, has_target || spec.objectives.empty(), spec);
}

void check_pruner_objectives(StudyReader& r, const Field& root, const StudySpec& spec) {
  if (!spec.multi_objective() || spec.pruner.kind == "none") return;
  Field kind = StudyReader::field(StudyReader::field(root, "pruner"), "kind");
  r.error(kind ? kind.path : "pruner",
          fmt::format("pruner {} compares trials on one curve; with {} objectives a trial behind on {} may still be on "
                      "the Pareto front",
                      spec.pruner.kind, spec.objectives.size(), spec.objectives[0].metric),
          "remove `pruner:` (or write kind: none), or keep one objective");
}

void check_rank_by(StudyReader& r, const Field& root, const StudySpec& spec) {
  if (spec.search.algorithm != "pbt") return;
  Field o = StudyReader::field(root, "objective");
  if (o && o->is_array() && !o->empty()) o = StudyReader::item(o, 0);
  if (!o || !o->is_object()) return;
  Field rb = StudyReader::field(o, "rank_by");
  if (rb && spec.objective.rank_by == "best")
    r.error(rb.path,
            "pbt ranks a member by the final report of its interval: the checkpoint the next generation continues "
            "from holds that model, not the best epoch's",
            "write `rank_by: final`, or leave rank_by out");
}

std::vector<ObjectiveDef> StudySpec::objective_defs() const {
  std::vector<ObjectiveDef> out;
  for (const auto& o : objectives) out.push_back({o.metric, maximizes(o.mode), o.rank_final()});
  if (out.empty()) out.push_back({objective.metric, maximizes(objective.mode), objective.rank_final()});
  return out;
}

}  // namespace dlsweep::orch
