// stored_study.cpp — the typed reading of studies.spec_json (stored_study.hpp).
#include "common/stored_study.hpp"

#include <algorithm>
#include <type_traits>

#include <fmt/format.h>

#include "common/objective.hpp"

namespace dlsweep {

namespace {

using nlohmann::json;

constexpr std::int64_t kMaxRanks = std::int64_t{1} << 20;

// Reads keys of one stored spec; the first key of the wrong type is the error.
class Reader {
 public:
  explicit Reader(std::string_view study) : study_(study) {}

  std::unexpected<Error> wrong(const std::string& key, const json& value, std::string_view expected) const {
    return fail_as(ErrorKind::bad_input,
                   fmt::format("study '{}': its stored spec has {} = {}, expected {}", study_, key, value.dump(), expected),
                   "studies.spec_json: " + key,
                   "the row was changed outside dlsweep: restore the database from a copy, or submit the study again "
                   "under a new name");
  }

  // The member `key` of `obj`, or nullptr when it is absent or null.
  static const json* member(const json& obj, const char* key) {
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }

 private:
  std::string study_;
};

std::string path_of(const std::string& parent, const char* key) { return parent.empty() ? key : parent + "." + key; }

Result<ObjectiveDef> read_objective(const Reader& r, const json& j, const std::string& path,
                                    std::optional<double>* target) {
  if (!j.is_object()) return r.wrong(path, j, "a map {metric, mode}");
  const json* metric = Reader::member(j, "metric");
  if (!metric || !metric->is_string() || metric->get<std::string>().empty())
    return r.wrong(path_of(path, "metric"), metric ? *metric : json(nullptr), "a metric name");
  ObjectiveDef o{metric->get<std::string>(), true};
  if (const json* mode = Reader::member(j, "mode")) {
    if (!mode->is_string() || !valid_mode(mode->get<std::string>())) return r.wrong(path_of(path, "mode"), *mode, "max or min");
    o.maximize = maximizes(mode->get<std::string>());
  }
  if (const json* rb = Reader::member(j, "rank_by")) {
    if (!rb->is_string() || !valid_rank_by(rb->get<std::string>()))
      return r.wrong(path_of(path, "rank_by"), *rb, "best or final");
    o.final = rb->get<std::string>() == "final";
  }
  if (const json* t = Reader::member(j, "target"); t && target) {
    if (!t->is_number()) return r.wrong(path_of(path, "target"), *t, "a number");
    *target = t->get<double>();
  }
  return o;
}

Status read_objectives(const Reader& r, const json& spec, StoredStudy& out) {
  const json* o = Reader::member(spec, "objective");
  if (!o) return {};
  if (o->is_array()) {
    for (std::size_t i = 0; i < o->size(); ++i) {
      auto d = read_objective(r, (*o)[i], fmt::format("objective[{}]", i), i == 0 ? &out.target : nullptr);
      if (!d) return std::unexpected(d.error());
      out.objectives.push_back(std::move(*d));
    }
    return {};
  }
  if (!o->is_object()) return r.wrong("objective", *o, "a map {metric, mode} or a list of them");
  auto d = read_objective(r, *o, "objective", &out.target);
  if (!d) return std::unexpected(d.error());
  out.objectives.push_back(std::move(*d));
  return {};
}

Status read_constraints(const Reader& r, const json& spec, StoredStudy& out) {
  const json* cs = Reader::member(spec, "constraints");
  if (!cs) return {};
  if (!cs->is_array()) return r.wrong("constraints", *cs, "a list");
  for (std::size_t i = 0; i < cs->size(); ++i) {
    const json& j = (*cs)[i];
    const std::string path = fmt::format("constraints[{}]", i);
    if (!j.is_object()) return r.wrong(path, j, "a map {metric, min, max} or {reached_target: true}");
    ConstraintDef c;
    if (const json* m = Reader::member(j, "metric")) {
      if (!m->is_string()) return r.wrong(path + ".metric", *m, "a metric name");
      c.metric = m->get<std::string>();
    }
    for (auto [key, bound] : {std::pair<const char*, std::optional<double>*>{"min", &c.min}, {"max", &c.max}})
      if (const json* v = Reader::member(j, key)) {
        if (!v->is_number()) return r.wrong(path_of(path, key), *v, "a number");
        *bound = v->get<double>();
      }
    if (const json* rt = Reader::member(j, "reached_target")) {
      if (!rt->is_boolean()) return r.wrong(path + ".reached_target", *rt, "true or false");
      c.reached_target = rt->get<bool>();
    }
    out.constraints.push_back(std::move(c));
  }
  return {};
}

Status read_trial(const Reader& r, const json& spec, StoredStudy& out) {
  const json* trial = Reader::member(spec, "trial");
  if (!trial) return {};
  if (!trial->is_object()) return r.wrong("trial", *trial, "a map");
  if (const json* ranks = Reader::member(*trial, "ranks")) {
    if (!ranks->is_number_integer() || ranks->get<std::int64_t>() < 1 || ranks->get<std::int64_t>() > kMaxRanks)
      return r.wrong("trial.ranks", *ranks, "a whole number >= 1");
    out.ranks = static_cast<int>(ranks->get<std::int64_t>());
  }
  if (const json* trainer = Reader::member(*trial, "trainer")) {
    if (!trainer->is_object()) return r.wrong("trial.trainer", *trainer, "a map");
    out.trainer = true;
  }
  return {};
}

// A list of numbers at search.<key> into `out` (ascending when `ascending`).
template <class T>
Status read_numbers(const Reader& r, const json& search, const char* key, bool ascending, std::vector<T>& out) {
  const json* v = Reader::member(search, key);
  if (!v) return {};
  const char* expected = std::is_integral_v<T> ? "an ascending list of whole numbers >= 1"
                         : ascending          ? "an ascending list of numbers >= 0"
                                              : "a list of numbers > 0";
  if (!v->is_array() || v->empty()) return r.wrong(path_of("search", key), *v, expected);
  std::vector<T> xs;
  for (const json& x : *v) {
    if (std::is_integral_v<T> ? !x.is_number_integer() || x.get<std::int64_t>() < 1
                              : !x.is_number() || x.get<double>() < 0 || (!ascending && x.get<double>() <= 0))
      return r.wrong(path_of("search", key), *v, expected);
    if (ascending && !xs.empty() && x.get<T>() <= xs.back()) return r.wrong(path_of("search", key), *v, expected);
    xs.push_back(x.get<T>());
  }
  out = std::move(xs);
  return {};
}

Status read_branch(const Reader& r, const json& search, StoredStudy& out) {
  StoredBranch b;
  if (auto st = read_numbers(r, search, "points", true, b.points); !st) return st;
  if (auto st = read_numbers(r, search, "batches", true, b.batches); !st) return st;
  if (auto st = read_numbers(r, search, "lr_factors", false, b.lr_factors); !st) return st;
  if (const json* by = Reader::member(search, "by")) {
    if (!by->is_string() || (by->get<std::string>() != "epoch" && by->get<std::string>() != "samples"))
      return r.wrong("search.by", *by, "epoch or samples");
    b.by = by->get<std::string>();
  }
  if (const json* scan = Reader::member(search, "scan")) {
    if (!scan->is_string() || (scan->get<std::string>() != "upward" && scan->get<std::string>() != "all"))
      return r.wrong("search.scan", *scan, "upward or all");
    b.scan = scan->get<std::string>();
  }
  for (auto [key, value] : {std::pair<const char*, double*>{"delta", &b.delta}, {"tolerance", &b.tolerance}, {"end", &b.end}})
    if (const json* v = Reader::member(search, key)) {
      if (!v->is_number() || v->get<double>() < 0) return r.wrong(path_of("search", key), *v, "a number >= 0");
      *value = v->get<double>();
    }
  for (auto [key, value] : {std::pair<const char*, std::int64_t*>{"seeds", &b.seeds}, {"max_seeds", &b.max_seeds}})
    if (const json* v = Reader::member(search, key)) {
      if (!v->is_number_integer() || v->get<std::int64_t>() < 0) return r.wrong(path_of("search", key), *v, "a whole number");
      *value = v->get<std::int64_t>();
    }
  out.branch = std::move(b);
  return {};
}

Status read_search(const Reader& r, const json& spec, StoredStudy& out) {
  const json* search = Reader::member(spec, "search");
  if (!search) return {};
  if (!search->is_object()) return r.wrong("search", *search, "a map");
  if (const json* a = Reader::member(*search, "algorithm")) {
    if (!a->is_string() || a->get<std::string>().empty()) return r.wrong("search.algorithm", *a, "an algorithm name");
    out.algorithm = a->get<std::string>();
  }
  if (out.algorithm == "branch") return read_branch(r, *search, out);
  if (out.algorithm != "pbt") return {};
  StoredPbt pbt;
  for (auto [key, value] : {std::pair<const char*, std::int64_t*>{"population", &pbt.population}, {"generations", &pbt.generations}})
    if (const json* v = Reader::member(*search, key)) {
      if (!v->is_number_integer() || v->get<std::int64_t>() < 0) return r.wrong(path_of("search", key), *v, "a whole number");
      *value = v->get<std::int64_t>();
    }
  if (const json* iv = Reader::member(*search, "interval")) {
    if (!iv->is_object()) return r.wrong("search.interval", *iv, "a map {by, every}");
    if (const json* by = Reader::member(*iv, "by")) {
      if (!by->is_string() || by->get<std::string>().empty()) return r.wrong("search.interval.by", *by, "epoch, step or samples");
      pbt.interval_by = by->get<std::string>();
    }
  }
  out.pbt = std::move(pbt);
  return {};
}

// `space`: a list of one-key maps (what to_json writes: dims keep their order), or a map.
Status read_space(const Reader& r, const json& spec, StoredStudy& out) {
  const json* space = Reader::member(spec, "space");
  if (!space) return {};
  if (space->is_object()) {
    for (auto it = space->begin(); it != space->end(); ++it) out.searched.push_back(it.key());
    return {};
  }
  if (!space->is_array()) return r.wrong("space", *space, "a list of {name: distribution}");
  for (std::size_t i = 0; i < space->size(); ++i) {
    const json& d = (*space)[i];
    if (!d.is_object() || d.size() != 1) return r.wrong(fmt::format("space[{}]", i), d, "a map {name: distribution}");
    out.searched.push_back(d.begin().key());
  }
  return {};
}

}  // namespace

Result<StoredStudy> read_stored_study(const nlohmann::json& spec, std::string_view study) {
  const Reader r(study);
  if (!spec.is_object())
    return fail_as(ErrorKind::bad_input, fmt::format("study '{}': its stored spec is not a JSON object", study),
                   "studies.spec_json",
                   "the row was changed outside dlsweep: restore the database from a copy, or submit the study again "
                   "under a new name");
  StoredStudy out;
  for (auto part : {read_objectives, read_constraints, read_trial, read_search, read_space})
    if (auto st = part(r, spec, out); !st) return std::unexpected(st.error());
  return out;
}

Result<StoredStudy> read_stored_study(const std::string& spec_json, std::string_view study) {
  return read_stored_study(nlohmann::json::parse(spec_json, nullptr, /*allow_exceptions=*/false), study);
}

int trial_ranks(int study_ranks, const nlohmann::json& params) {
  if (params.is_object())
    if (auto it = params.find("ranks"); it != params.end() && it->is_number_integer() && it->get<std::int64_t>() >= 1)
      return static_cast<int>(std::min<std::int64_t>(it->get<std::int64_t>(), kMaxRanks));
  return study_ranks;
}

}  // namespace dlsweep
