// space.cpp — `trial.trainer`, `fixed` and `space` to a search::Space.
//
// Precedence when a name appears twice: trial.trainer, then fixed, then space; the error is
// reported at the later place so the user sees the line to delete.
#include "study/space.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "study/did_you_mean.hpp"
#include "common/train_params.hpp"

namespace dlsweep::orch {

namespace {

using search::Dimension;
using trainer::ParamInfo;
using PT = ParamInfo::Type;

constexpr std::string_view kDimKeys[] = {"choice", "uniform", "log_uniform", "int", "step", "log", "when"};

const char* section_name(const std::string& path) {
  if (path.starts_with("trial.trainer")) return "trial.trainer";
  if (path.starts_with("fixed")) return "fixed";
  return "space";
}

// Command studies pass names through to params.json: keep them to identifiers.
bool valid_command_param_name(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (unsigned char c : s)
    if (!(std::isalnum(c) || c == '_' || c == '.' || c == '-')) return false;
  return true;
}

std::vector<std::string_view> trainer_param_names() {
  std::vector<std::string_view> names;
  for (const auto& p : trainer::param_table()) names.push_back(p.name);
  return names;
}

std::string list_of_words(const ParamInfo& info) {
  if (info.type == PT::boolean) return "[true, false]";
  if (info.type == PT::int_list) return "a list of lists, e.g. [[256], [512, 512]]";
  if (!info.allowed.empty()) return fmt::format("[{}]", fmt::join(info.allowed, ", "));
  return "a list of values";
}

class SpaceReader {
 public:
  SpaceReader(StudyReader& r, bool embedded) : r_(r), embedded_(embedded) {}

  // A name in trial.trainer / fixed / space. Returns false (error recorded) if the name can
  // not be used; `info` is set for known trainer params.
  bool check_name(const Field& f, const std::string& name, const ParamInfo*& info) {
    info = nullptr;
    if (embedded_) {
      info = trainer::find_param(name);
      if (!info) {
        auto names = trainer_param_names();
        r_.error(f.path, fmt::format("unknown trainer parameter '{}'", name),
                 suggest_fix(name, names, "known trainer parameters"));
        return false;
      }
    } else if (!valid_command_param_name(name)) {
      r_.error(f.path, fmt::format("'{}' is not a valid parameter name", name),
               "use letters, digits, '_', '.' and '-', starting with a letter or '_'");
      return false;
    }
    if (auto it = set_at_.find(name); it != set_at_.end()) {
      r_.error(f.path,
               fmt::format("'{}' is set in both {} and {}", name, section_name(it->second),
                           section_name(f.path)),
               fmt::format("keep it in one place (first set at {})", it->second));
      return false;
    }
    set_at_.emplace(name, f.path);
    return true;
  }

  // One value for a parameter (a fixed value or a choice). nullopt: error recorded.
  std::optional<nlohmann::json> value(const Field& f, const ParamInfo* info) {
    nlohmann::json v = to_plain_json(*f);
    if (info) {
      if (auto s = trainer::check_param_value(*info, v); !s) {
        r_.error(f.path, s.error().what, s.error().fix);
        return std::nullopt;
      }
      // 128.0 is a valid batch size; hand the trainer 128.
      if (info->type == PT::integer && v.is_number_float()) v = static_cast<std::int64_t>(v.get<double>());
      return v;
    }
    if (embedded_) return std::nullopt;  // unknown trainer param: already reported
    bool ok = !v.is_object();
    if (v.is_array())
      for (const auto& item : v) ok = ok && item.is_primitive();
    if (!ok) {
      r_.error(f.path, fmt::format("expected a value or a list of values, got {}", describe_value(*f)),
               "parameters are scalars or flat lists; for nested settings use dotted names like opt.lr");
      return std::nullopt;
    }
    return v;
  }

  // trial.trainer or fixed: name -> value.
  void read_fixed(const Field& section, nlohmann::json& fixed) {
    if (!section || !r_.any_map(section, /*null_is_empty=*/true) || section->is_null()) return;
    for (const auto& [name, _] : section->items()) {
      Field f = StudyReader::field(section, name);
      const ParamInfo* info = nullptr;
      bool usable = check_name(f, name, info);
      if (auto v = value(f, info); v && usable) fixed[name] = std::move(*v);
    }
  }

  void read_space(const Field& space, SpaceResult& out) {
    if (!space) return;  // no `space` at all: one trial of the fixed settings
    if (space->is_null() || (space->is_object() && space->empty())) {
      // Written but empty: usually entries lost to indentation. (The list form [] is what
      // to_json() writes for a study without `space`, so it stays accepted.)
      r_.error(space.path, fmt::format("space is empty ({}): a study varies at least one parameter",
                                       space->is_null() ? "no value" : "{}"),
               "list what varies, e.g. `space: {batch_size: [256, 1024]}`; to repeat one configuration, "
               "vary `seed` (`space: {seed: [1, 2, 3]}`), or leave `space` out for a single trial");
      return;
    }
    if (space->is_array()) {
      // The ordered form written by to_json(): a list of one-key maps.
      for (std::size_t i = 0; i < space->size(); ++i) {
        Field entry = StudyReader::item(space, i);
        if (!entry->is_object() || entry->size() != 1) {
          r_.wrong_type(entry, "a one-key map (name: values)",
                        "write space as a map of parameter name -> values");
          continue;
        }
        read_dimension(StudyReader::field(entry, entry->begin().key()), entry->begin().key(), out);
      }
      return;
    }
    if (!r_.any_map(space)) return;
    for (const auto& [name, _] : space->items()) read_dimension(StudyReader::field(space, name), name, out);
  }

 private:
  void read_dimension(const Field& f, const std::string& name, SpaceResult& out) {
    const ParamInfo* info = nullptr;
    bool usable = check_name(f, name, info);
    Dimension d;
    d.name = name;
    bool ok = false;
    if (f->is_array()) {
      ok = read_choices(f, info, d);
    } else if (f->is_object()) {
      ok = read_dimension_map(f, info, d);
    } else {
      r_.error(f.path,
               fmt::format("expected a list of values or a map with one of choice, uniform, "
                           "log_uniform, int; got {}",
                           describe_value(*f)),
               fmt::format("to hold {} at one value, put it under fixed:; to vary it, write "
                           "[v1, v2, ...] or {{uniform: [low, high]}}",
                           name));
    }
    if (ok && usable) {
      out.space.dims.push_back(std::move(d));
      out.dim_paths.push_back(f.path);
    }
  }

  bool read_choices(const Field& f, const ParamInfo* info, Dimension& d) {
    d.kind = Dimension::Kind::choice;
    if (f->empty()) {
      r_.error(f.path, "the list of choices is empty", "give at least one value");
      return false;
    }
    bool ok = true;
    std::set<nlohmann::json> seen;  // json's < agrees with its == (1 and 1.0 are one value)
    for (std::size_t i = 0; i < f->size(); ++i) {
      Field item = StudyReader::item(f, i);
      if (info && info->type == PT::int_list && !item->is_array()) {
        // `hidden: [256, 512]` in space reads as two choices, each of which must be a list.
        r_.error(item.path, fmt::format("each choice of {} is a list of integers, got {}", info->name,
                                        describe_value(*item)),
                 fmt::format("write the choices as lists, e.g. {}: [[256], [512, 512]]", info->name));
        ok = false;
        continue;
      }
      auto v = value(item, info);
      if (!v) {
        ok = false;
        continue;
      }
      // A set, not a scan of the earlier choices: a list of 100,000 values must not take n^2.
      if (!seen.insert(*v).second) {
        r_.error(item.path, fmt::format("{} is listed twice", v->dump()), "remove the repeated value");
        ok = false;
      }
      d.choices.push_back(std::move(*v));
    }
    return ok;
  }

  bool read_dimension_map(const Field& f, const ParamInfo* info, Dimension& d) {
    std::size_t before = r_.error_count();
    r_.map(f, kDimKeys);
    std::vector<std::string> kinds;
    for (auto k : {"choice", "uniform", "log_uniform", "int"})
      if (f->contains(k)) kinds.emplace_back(k);
    if (kinds.size() != 1) {
      if (kinds.size() > 1)
        r_.error(f.path, fmt::format("give exactly one of choice, uniform, log_uniform, int; got {}",
                                     fmt::join(kinds, " and ")),
                 "keep one kind of dimension per parameter");
      else if (r_.error_count() == before)  // an unknown key already says what is wrong
        r_.error(f.path, "a dimension map needs one of choice, uniform, log_uniform, int",
                 "e.g. {choice: [a, b]}, {uniform: [0.1, 0.9]}, {int: [1, 8]}");
      return false;
    }
    const std::string& kind = kinds[0];
    if (Field w = StudyReader::field(f, "when")) read_when(w, d);
    Field body = StudyReader::field(f, kind);
    if (kind != "int")
      for (auto extra : {"step", "log"})
        if (f->contains(extra))
          r_.error(child_path(f.path, extra), fmt::format("'{}' only applies to int ranges", extra),
                   "remove it");
    if (kind == "choice") {
      if (!r_.list(body, "write choice: [v1, v2, ...]")) return false;
      return read_choices(body, info, d) && r_.error_count() == before;
    }
    if (kind == "int") return read_int_range(f, body, info, d) && r_.error_count() == before;
    return read_real_range(body, kind == "log_uniform", info, d) && r_.error_count() == before;
  }

  // when: {param: value | [values], ...}: every condition must hold. Whether the params
  // exist and can take the values is checked once the whole space is known
  // (search::check_conditions).
  void read_when(const Field& w, Dimension& d) {
    if (!w->is_object() || w->empty()) {
      r_.wrong_type(w, "a map of parameter -> value or list of values",
                    "write e.g. when: {optimizer: [lars, larc]}");
      return;
    }
    for (const auto& [param, _] : w->items()) {
      Field c = StudyReader::field(w, param);
      Dimension::Condition cond{param, {}};
      nlohmann::json v = to_plain_json(*c);
      if (v.is_array()) {
        for (auto& item : v) cond.values.push_back(item);
      } else {
        cond.values.push_back(v);
      }
      bool ok = !cond.values.empty();
      for (const auto& item : cond.values) ok = ok && item.is_primitive() && !item.is_null();
      if (!ok) {
        r_.error(c.path, fmt::format("expected a value or a non-empty list of values, got {}", describe_value(*c)),
                 fmt::format("write {}: [v1, v2]", param));
        continue;
      }
      d.when.push_back(std::move(cond));
    }
  }

  // uniform / log_uniform: [low, high], low < high, low > 0 for log.
  bool read_real_range(const Field& body, bool log, const ParamInfo* info, Dimension& d) {
    d.kind = log ? Dimension::Kind::log_uniform : Dimension::Kind::uniform;
    const std::string kind = log ? "log_uniform" : "uniform";
    if (!body->is_array() || body->size() != 2) {
      r_.error(body.path, fmt::format("{} expects [low, high], got {}", kind, describe_value(*body)),
               fmt::format("write {}: [low, high]", kind));
      return false;
    }
    bool ok = true;
    if (info && info->type == PT::integer) {
      r_.error(body.path.substr(0, body.path.rfind('.')),
               fmt::format("{} is an integer parameter; a {} range would give fractions", info->name, kind),
               fmt::format("use {{int: [lo, hi]}}{}", log ? " with log: true" : ""));
      ok = false;
    } else if (info && info->type != PT::number) {
      r_.error(body.path.substr(0, body.path.rfind('.')),
               fmt::format("{} is not numeric; a {} range makes no sense", info->name, kind),
               fmt::format("give a list of values: {}", list_of_words(*info)));
      ok = false;
    }
    Field lo = StudyReader::item(body, 0), hi = StudyReader::item(body, 1);
    auto low = r_.number(lo, -std::numeric_limits<double>::max(), false);
    auto high = r_.number(hi, -std::numeric_limits<double>::max(), false);
    if (!low || !high) return false;
    if (log && *low <= 0) {
      r_.error(lo.path, fmt::format("log_uniform needs low > 0, got {}", lo->dump()),
               "use a positive lower bound, e.g. 1e-4");
      ok = false;
    }
    if (*low >= *high) {
      r_.error(hi.path, fmt::format("high ({}) must be greater than low ({})", hi->dump(), lo->dump()),
               "write [low, high] with low < high");
      ok = false;
    }
    if (ok && info) ok = value(lo, info).has_value() & value(hi, info).has_value();
    d.low = *low;
    d.high = *high;
    return ok;
  }

  // int: [low, high] inclusive, optional step >= 1 and log: true (low >= 1, no step).
  bool read_int_range(const Field& f, const Field& body, const ParamInfo* info, Dimension& d) {
    d.kind = Dimension::Kind::int_range;
    if (!body->is_array() || body->size() != 2) {
      r_.error(body.path, fmt::format("int expects [low, high], got {}", describe_value(*body)),
               "write int: [low, high] (both inclusive)");
      return false;
    }
    bool ok = true;
    if (info && info->type != PT::integer && info->type != PT::number) {
      r_.error(f.path, fmt::format("{} is not numeric; an int range makes no sense", info->name),
               fmt::format("give a list of values: {}", list_of_words(*info)));
      ok = false;
    }
    constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
    constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
    Field lo = StudyReader::item(body, 0), hi = StudyReader::item(body, 1);
    auto low = r_.integer(lo, kMin, kMax);
    auto high = r_.integer(hi, kMin, kMax);
    std::optional<std::int64_t> step = 1;
    if (Field s = StudyReader::field(f, "step")) step = r_.integer(s, 1, kMax);
    std::optional<bool> log = false;
    if (Field l = StudyReader::field(f, "log")) log = r_.boolean(l);
    if (!low || !high || !step || !log) return false;
    if (*low > *high) {
      r_.error(hi.path, fmt::format("high ({}) is below low ({})", *high, *low),
               "write [low, high] with low <= high");
      ok = false;
    }
    if (*log && *low < 1) {
      r_.error(lo.path, fmt::format("a log int range needs low >= 1, got {}", *low),
               "use a lower bound of at least 1");
      ok = false;
    }
    if (*log && *step != 1) {
      r_.error(child_path(f.path, "step"), "step cannot be combined with log: true",
               "drop step, or drop log");
      ok = false;
    }
    if (ok && info) ok = value(lo, info).has_value() & value(hi, info).has_value();
    d.int_low = *low;
    d.int_high = *high;
    d.int_step = *step;
    d.log = *log;
    return ok;
  }

 public:
  /// Where a fixed parameter was set ("" if it was not).
  std::string fixed_path(const std::string& name) const {
    auto it = set_at_.find(name);
    return it == set_at_.end() ? std::string() : it->second;
  }

 private:
  StudyReader& r_;
  bool embedded_;
  std::map<std::string, std::string> set_at_;  ///< name -> key path where it was first set
};

// The values a trainer parameter can take in this study (fixed, varied as choices, or its
// default) and where the study says so ("" for the default). Continuous dimensions: none.
std::pair<std::vector<std::string>, std::string> string_values(const SpaceResult& out, const SpaceReader& reader,
                                                               const std::string& name) {
  if (out.space.fixed.contains(name) && out.space.fixed[name].is_string())
    return {{out.space.fixed[name].get<std::string>()}, reader.fixed_path(name)};
  for (std::size_t i = 0; i < out.space.dims.size(); ++i) {
    const auto& d = out.space.dims[i];
    if (d.name != name) continue;
    std::vector<std::string> v;
    for (const auto& c : d.choices)
      if (c.is_string()) v.push_back(c.get<std::string>());
    return {v, i < out.dim_paths.size() ? out.dim_paths[i] : std::string()};
  }
  const auto* info = trainer::find_param(name);
  return {{info && info->default_value.is_string() ? info->default_value.get<std::string>() : std::string()}, ""};
}

// device x precision, known before any trial runs: GPU formats (tf32, fp16) on a study that
// trains on the CPU only. Every format runs on device: cuda.
void check_device_precision(StudyReader& r, const SpaceResult& out, const SpaceReader& reader, const Field& trainer) {
  const auto [devices, device_at] = string_values(out, reader, "device");
  const auto [precisions, precision_at] = string_values(out, reader, "precision");
  auto all = [](const std::vector<std::string>& v, const char* x) {
    return !v.empty() && std::all_of(v.begin(), v.end(), [&](const std::string& s) { return s == x; });
  };
  const std::string where = precision_at.empty() ? trainer.path : precision_at;
  const std::string device_text = device_at.empty() ? "device: cpu, the default" : "device: " + devices.front();
  for (const auto& p : precisions) {
    if ((p == "tf32" || p == "fp16") && all(devices, "cpu"))
      r.error(where, fmt::format("precision {} is a GPU format, but this study trains on the CPU ({})", p, device_text),
              "set device: cuda under trial.trainer (on Slurm with backend.gpus_per_task), or use precision fp32 or bf16");
  }
}

// batch_size x a fixed train_subset, known before any trial runs: a batch larger than the
// training set fails every trial that draws it (dlsweep-train refuses it at start), so the
// study is refused with the batches named, not one trial after another.
void check_batch_subset(StudyReader& r, const SpaceResult& out, const SpaceReader& reader, const Field& trainer) {
  const auto& fixed = out.space.fixed;
  if (!fixed.contains("train_subset") || !fixed["train_subset"].is_number_integer()) return;
  const std::int64_t subset = fixed["train_subset"].get<std::int64_t>();
  if (subset <= 0) return;
  std::vector<std::int64_t> too_big;
  std::string where;
  if (fixed.contains("batch_size") && fixed["batch_size"].is_number_integer()) {
    if (fixed["batch_size"].get<std::int64_t>() > subset) too_big.push_back(fixed["batch_size"].get<std::int64_t>());
    where = reader.fixed_path("batch_size");
  }
  for (std::size_t i = 0; i < out.space.dims.size(); ++i) {
    const auto& d = out.space.dims[i];
    if (d.name != "batch_size") continue;
    where = i < out.dim_paths.size() ? out.dim_paths[i] : where;
    if (d.kind == search::Dimension::Kind::int_range && d.int_high > subset) too_big.push_back(d.int_high);
    for (const auto& c : d.choices)
      if (c.is_number_integer() && c.get<std::int64_t>() > subset) too_big.push_back(c.get<std::int64_t>());
  }
  if (too_big.empty()) return;
  std::string list;
  for (auto b : too_big) list += (list.empty() ? "" : ", ") + std::to_string(b);
  r.error(where.empty() ? trainer.path : where,
          fmt::format("batch_size {} {} larger than the training set (train_subset: {} at {}): every such trial "
                      "would fail at its start",
                      list, too_big.size() == 1 ? "is" : "are", subset, reader.fixed_path("train_subset")),
          fmt::format("use batch sizes <= {}, or a larger train_subset", subset));
}

}  // namespace

SpaceResult read_space(StudyReader& r, const Field& trainer, const Field& fixed, const Field& space,
                       bool embedded) {
  SpaceResult out;
  SpaceReader reader(r, embedded);
  if (embedded) reader.read_fixed(trainer, out.space.fixed);
  reader.read_fixed(fixed, out.space.fixed);
  reader.read_space(space, out);
  if (embedded) {
    check_device_precision(r, out, reader, trainer);
    check_batch_subset(r, out, reader, trainer);
    // A parameter without a default must come from the study.
    for (const auto& p : trainer::param_table()) {
      if (!p.default_value.is_null() || out.space.fixed.contains(p.name)) continue;
      bool varied = false;
      for (const auto& d : out.space.dims) varied = varied || d.name == p.name;
      if (!varied)
        r.error(trainer.path, fmt::format("trainer parameter '{}' has no default", p.name),
                fmt::format("set {} under trial.trainer ({})", p.name, p.help));
    }
  }
  return out;
}

nlohmann::json dimension_to_json(const search::Dimension& d) {
  using K = Dimension::Kind;
  nlohmann::json j;
  switch (d.kind) {
    case K::choice: j = {{"choice", d.choices}}; break;
    case K::uniform: j = {{"uniform", {d.low, d.high}}}; break;
    case K::log_uniform: j = {{"log_uniform", {d.low, d.high}}}; break;
    case K::int_range: {
      j = {{"int", {d.int_low, d.int_high}}};
      if (d.int_step != 1) j["step"] = d.int_step;
      if (d.log) j["log"] = true;
      break;
    }
  }
  if (!d.when.empty()) {
    nlohmann::json w = nlohmann::json::object();
    for (const auto& c : d.when) w[c.param] = c.values;
    j["when"] = w;
  }
  return j;
}

}  // namespace dlsweep::orch
