// warm_start.cpp — `search.warm_start` read and validated, and earlier trials placed into
// this study's space (warm_start.hpp). Pure.
#include "study/warm_start.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "search/conditional.hpp"
#include "search/sampler.hpp"

namespace dlsweep::orch {

namespace {

constexpr std::string_view kItemKeys[] = {"study", "db"};

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 64 || !std::isalnum(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '.' || c == '_' || c == '-'; });
}

std::string describe_dim(const search::Dimension& d) {
  using K = search::Dimension::Kind;
  switch (d.kind) {
    case K::choice: {
      std::string s;
      for (const auto& c : d.choices) s += (s.empty() ? "" : ", ") + c.dump();
      return "{" + s + "}";
    }
    case K::uniform:
    case K::log_uniform: return fmt::format("[{}, {}]", d.low, d.high);
    case K::int_range:
      return d.int_step > 1 ? fmt::format("{}..{} step {}", d.int_low, d.int_high, d.int_step)
                            : fmt::format("{}..{}", d.int_low, d.int_high);
  }
  return "?";
}

bool fits(const search::Dimension& d, const nlohmann::json& v) {
  using K = search::Dimension::Kind;
  switch (d.kind) {
    case K::choice: return std::find(d.choices.begin(), d.choices.end(), v) != d.choices.end();
    case K::uniform:
    case K::log_uniform: {
      if (!v.is_number()) return false;
      const double x = v.get<double>();
      return std::isfinite(x) && x >= d.low && x <= d.high;
    }
    case K::int_range: {
      if (!v.is_number()) return false;
      const double x = v.get<double>();
      if (x != std::floor(x)) return false;
      const auto i = static_cast<std::int64_t>(x);
      return i >= d.int_low && i <= d.int_high && (i - d.int_low) % std::max<std::int64_t>(1, d.int_step) == 0;
    }
  }
  return false;
}

const search::Dimension* find_dim(const search::Space& s, const std::string& name) {
  for (const auto& d : s.dims)
    if (d.name == name) return &d;
  return nullptr;
}

std::string objectives_text(const StudySpec& s) {
  std::string out;
  for (const auto& o : s.objective_defs())
    out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", o.metric, o.maximize ? "max" : "min");
  return out;
}

bool uses_target(const StudySpec& s) {
  for (const auto& o : s.objectives)
    if (needs_target(o.metric)) return true;
  for (const auto& c : s.constraints)
    if (c.reached_target || needs_target(c.metric)) return true;
  return false;
}

}  // namespace

void read_warm_start(StudyReader& r, const Field& f, StudySpec& spec) {
  if (!f->is_array()) {  // a lone entry is the likely slip: it wants to be a list of one
    r.wrong_type(f, "a list",
                 f->is_object()   ? "make it a list of one entry: `warm_start: [{study: NAME, db: PATH}]`"
                 : f->is_string() ? fmt::format("name the study as well as its database: `warm_start: [{{study: NAME, "
                                                "db: {}}}]`",
                                                f->get<std::string>())
                                  : "write warm_start: [{study: NAME, db: PATH}], one entry per earlier study");
    return;
  }
  if (f->empty()) {
    r.error(f.path, "warm_start is empty", "list the earlier studies: [{study: NAME, db: PATH}], or remove the key");
    return;
  }
  // A value of the wrong type: a scalar (a number, true/false) wants quotes; anything else
  // (nothing, a list, a map) wants the form of the key.
  auto text = [&](const Field& v, std::string_view fix) -> std::optional<std::string> {
    if (v->is_string()) return v->get<std::string>();
    const bool scalar = v->is_number() || v->is_boolean();
    r.wrong_type(v, "a string",
                 scalar ? fmt::format("put the value in quotes: `{}: \"{}\"`", v.key(), r.scalar_text(v))
                        : std::string(fix));
    return std::nullopt;
  };
  std::set<std::pair<std::string, std::string>> seen;
  for (std::size_t i = 0; i < f->size(); ++i) {
    Field item = StudyReader::item(f, i);
    if (!item->is_object()) {  // the reader's map() fix would say `0:`, meaningless for an entry
      r.wrong_type(item, "an entry {study: NAME, db: PATH}",
                   fmt::format("write the entry as `- {{study: {}, db: PATH}}` (the earlier study and its database)",
                               item->is_string() && valid_name(item->get<std::string>()) ? item->get<std::string>()
                                                                                         : "NAME"));
      continue;
    }
    if (!r.map(item, kItemKeys)) continue;
    StudySpec::SearchSpec::WarmStart w;
    bool ok = true;
    Field s = StudyReader::field(item, "study");
    if (r.require(s, "name the earlier study: `study: NAME`")) {
      if (auto v = text(s, "write `study: NAME`, the earlier study's name as `dlsweep status` lists it")) {
        if (!valid_name(*v)) {
          r.error(s.path, fmt::format("'{}' is not a valid study name", *v),
                  "give the name of the earlier study as `dlsweep status` lists it");
          ok = false;
        }
        w.study = *v;
      } else ok = false;
    } else ok = false;
    Field d = StudyReader::field(item, "db");
    if (r.require(d, "give the earlier study's database: `db: PATH` (relative to this file)")) {
      if (auto v = text(d, "write `db: PATH`, the earlier study's database (relative to this file)")) {
        if (v->empty()) {
          r.error(d.path, "db is empty", "give the path of the earlier study's database (relative to this file)");
          ok = false;
        }
        w.db = *v;
      } else ok = false;
    } else ok = false;
    if (!ok) continue;
    if (!seen.emplace(w.study, w.db).second) {
      r.error(item.path, fmt::format("study '{}' in {} is listed twice", w.study, w.db), "list each earlier study once");
      continue;
    }
    // Kept for the errors found when the database is read at submit (engine/warm_start_load).
    w.line = r.line_of(item.path);
    w.study_line = r.line_of(s.path);
    w.db_line = r.line_of(d.path);
    spec.search.warm_start.push_back(std::move(w));
  }
}

void check_warm_start_algorithm(StudyReader& r, const std::string& path, const StudySpec& spec) {
  if (spec.search.warm_start.empty() || search::sampler_learns_from_history(spec.search.algorithm)) return;
  r.error(path,
          fmt::format("{} search ignores earlier trials: warm_start would change nothing", spec.search.algorithm),
          "use algorithm: tpe or nsga2 with warm_start, or remove warm_start");
}

std::string WarmPlacement::skip_note() const {
  if (skipped == 0) return {};
  std::string out = fmt::format("{} skipped:", skipped);
  for (std::size_t i = 0; i < skip_reasons.size(); ++i)
    out += fmt::format("{} {} {}", i == 0 ? "" : ";", skip_reasons[i].second, skip_reasons[i].first);
  return out;
}

std::expected<WarmPlacement, std::vector<WarmProblem>> place_warm_trials(const StudySpec& self,
                                                                          const StudySpec& earlier,
                                                                          const std::vector<EarlierTrial>& trials) {
  std::vector<WarmProblem> problems;
  // Objectives: the same list of (metric, mode).
  const auto mine = self.objective_defs(), theirs = earlier.objective_defs();
  bool same = mine.size() == theirs.size();
  for (std::size_t i = 0; same && i < mine.size(); ++i)
    same = mine[i].metric == theirs[i].metric && mine[i].maximize == theirs[i].maximize;
  if (!same)
    problems.push_back({fmt::format("it optimises {}, this study {}: its values are not this study's",
                                    objectives_text(earlier), objectives_text(self)),
                        "warm-start only from a study with the same objective (metric and mode)"});
  else if (uses_target(self) && self.objective.target != earlier.objective.target)
    problems.push_back(
        {fmt::format("its target is {}, this study's {}: the *_to_target figures and reached_target differ",
                     earlier.objective.target ? fmt::format("{}", *earlier.objective.target) : "unset",
                     self.objective.target ? fmt::format("{}", *self.objective.target) : "unset"),
         "warm-start only from a study with the same objective.target"});
  // Parameters: each of this study's must be the earlier study's (searched or fixed) ...
  for (const auto& d : self.space.dims)
    if (!find_dim(earlier.space, d.name) && !earlier.space.fixed.contains(d.name))
      problems.push_back({fmt::format("parameter '{}' of this study is neither searched nor fixed there, so its "
                                      "trials cannot be placed",
                                      d.name),
                          fmt::format("warm-start from a study that searched or fixed '{}', or fix '{}' here too "
                                      "(move it from space to fixed)",
                                      d.name, d.name)});
  // ... and each it searched must be one of this study's.
  for (const auto& d : earlier.space.dims)
    if (!find_dim(self.space, d.name) && !self.space.fixed.contains(d.name))
      problems.push_back({fmt::format("it searched '{}', which this study does not have: its parameters must be this "
                                      "study's or a subset",
                                      d.name),
                          fmt::format("add '{}' to this study's space or fixed, or warm-start from another study", d.name)});
  // Constraints on reported metrics: the earlier trials must have reported them.
  for (const auto& c : self.constraints) {
    if (c.reached_target || is_derived_figure(c.metric)) continue;
    const bool reported = std::any_of(trials.begin(), trials.end(),
                                      [&](const EarlierTrial& t) { return t.figures.metrics.contains(c.metric); });
    if (!reported && !trials.empty())
      problems.push_back({fmt::format("the constraint {} cannot be computed: none of its trials reported '{}'",
                                      describe(c), c.metric),
                          "warm-start from a study whose trials report that metric, or drop the constraint"});
  }
  if (!problems.empty()) return std::unexpected(std::move(problems));

  WarmPlacement out;
  auto skip = [&](std::string why) {
    ++out.skipped;
    for (auto& [w, n] : out.skip_reasons)
      if (w == why) { ++n; return; }
    out.skip_reasons.emplace_back(std::move(why), 1);
  };
  const auto order = search::sampling_order(self.space);
  const auto defs = self.objective_defs();
  for (const auto& t : trials) {
    search::Params p = self.space.fixed.is_object() ? self.space.fixed : search::Params::object();
    std::optional<std::string> why;
    for (const auto& [k, v] : self.space.fixed.items()) {
      auto it = t.params.find(k);
      if (it != t.params.end() && *it != v) {
        why = fmt::format("with {} {} (fixed to {} here)", k, it->dump(), v.dump());
        break;
      }
    }
    for (std::size_t i : order) {
      if (why) break;
      const auto& d = self.space.dims[i];
      if (!d.when.empty() && !search::is_active(d, p)) continue;  // absent here: its value, if any, does not matter
      auto it = t.params.find(d.name);
      if (it == t.params.end()) { why = fmt::format("without '{}'", d.name); break; }
      if (!fits(d, *it)) { why = fmt::format("with {} outside {}", d.name, describe_dim(d)); break; }
      p[d.name] = *it;
    }
    // This study's objective.rank_by says which of the earlier trial's reports is its value.
    const std::optional<double> value = self.objective.rank_final() ? t.last_value : t.best_value;
    if (!why && !value) why = fmt::format("without a value of {}", self.objective.metric);
    WarmTrial w;
    if (!why && self.multi_objective()) {
      auto v = objective_values(defs, t.figures);
      if (!v) why = "without a value of every objective";
      else w.values = std::move(*v);
    }
    if (why) { skip(*why); continue; }
    w.source_number = t.number;
    w.params = std::move(p);
    w.value = *value;
    if (!self.constraints.empty()) w.constraints = constraint_values(self.constraints, t.figures);
    out.trials.push_back(std::move(w));
  }
  if (out.trials.empty()) {
    std::string note = out.skip_note();
    return std::unexpected(std::vector<WarmProblem>{
        {trials.empty() ? std::string("it has no COMPLETE trial")
                        : fmt::format("none of its {} COMPLETE trials fits this study's space ({})", trials.size(), note),
         "warm-start from a study with COMPLETE trials inside this study's space, or remove this entry"}});
  }
  return out;
}

search::TrialRecord warm_record(const WarmTrial& t, std::int64_t number) {
  search::TrialRecord r;
  r.number = number;
  r.params = t.params;
  r.status = search::TrialStatus::complete;
  r.value = t.value;
  r.values = t.values;
  r.constraints = t.constraints;
  return r;
}

}  // namespace dlsweep::orch
