// make_pruner.cpp — the pruner registry: kind -> (its own option keys, default warmup,
// constructor). The shared keys (by, warmup, group_by) are read here, once.
#include <fmt/format.h>

#include "search/asha_pruner.hpp"
#include "search/group_by_pruner.hpp"
#include "search/percentile_pruner.hpp"
#include "search/pruner.hpp"
#include "search/threshold_pruner.hpp"

namespace dlsweep::search {

namespace {

using Make = std::unique_ptr<Pruner> (*)(OptionReader& r, PrunerBasics b);

struct Entry {
  std::string_view kind;
  std::initializer_list<std::string_view> keys;
  double default_warmup;
  Make make;
};

std::unique_ptr<Pruner> make_none(OptionReader&, PrunerBasics) { return std::make_unique<NonePruner>(); }

/// Optuna's MedianPruner/PercentilePruner options (percentile_pruner.hpp), the percentile aside.
PercentileOptions read_percentile(OptionReader& r, const PrunerBasics& b) {
  PercentileOptions o;
  o.startup_trials = r.integer("startup_trials", o.startup_trials, 1, 1'000'000);
  o.min_trials = r.integer("min_trials", o.min_trials, 1, 1'000'000);
  // Optuna's rule needs positions that line up across trials; samples and wall_s seldom do.
  const bool aligned = b.by == Axis::step || b.by == Axis::epoch;
  const auto compare = r.word("compare", aligned ? "same_point" : "best_by_then", {"same_point", "best_by_then"});
  o.compare = compare == "best_by_then" ? PercentileCompare::best_by_then : PercentileCompare::same_point;
  const double every = o.compare == PercentileCompare::same_point ? 1.0 : 0.0;  // best_by_then: every report
  o.interval = r.has("interval") ? r.number("interval", 1.0, 0.0, 1e300, /*low_open=*/true) : every;
  return o;
}

std::unique_ptr<Pruner> make_median(OptionReader& r, PrunerBasics b) {
  return std::make_unique<PercentilePruner>(b, read_percentile(r, b), /*is_median=*/true);
}

std::unique_ptr<Pruner> make_percentile(OptionReader& r, PrunerBasics b) {
  PercentileOptions o = read_percentile(r, b);
  if (!r.has("percentile")) r.error("percentile", "percentile needs `percentile`", "add e.g. `percentile: 25` (keep the top 25%)");
  o.percentile = r.number("percentile", 50.0, 0.0, 100.0);
  return std::make_unique<PercentilePruner>(b, o, /*is_median=*/false);
}

std::unique_ptr<Pruner> make_threshold(OptionReader& r, PrunerBasics b) {
  auto lower = r.optional_number("lower");
  auto upper = r.optional_number("upper");
  if (lower && upper && *lower > *upper)
    r.error("upper", fmt::format("upper ({:g}) is below lower ({:g})", *upper, *lower), "swap them");
  return std::make_unique<ThresholdPruner>(b, lower, upper);
}

AshaOptions read_asha(OptionReader& r) {
  AshaOptions o;
  o.min_resource = r.number("min_resource", o.min_resource, 0.0, 1e15, /*low_open=*/true);
  o.reduction_factor = r.number("reduction_factor", o.reduction_factor, 2.0, 1e6);
  o.min_early_stopping_rate = r.integer("min_early_stopping_rate", 0, 0, 60);
  o.max_resource = r.optional_number("max_resource");
  if (o.max_resource && *o.max_resource <= o.min_resource)
    r.error("max_resource", fmt::format("max_resource ({:g}) must exceed min_resource ({:g})", *o.max_resource, o.min_resource),
            "give the full training length on the axis, e.g. the number of epochs");
  return o;
}

std::unique_ptr<Pruner> make_asha(OptionReader& r, PrunerBasics b) {
  return std::make_unique<AshaPruner>(b, read_asha(r));
}

std::unique_ptr<Pruner> make_hyperband(OptionReader& r, PrunerBasics b) {
  if (!r.has("max_resource"))
    r.error("max_resource", "hyperband needs max_resource", "add the full training length on the axis, e.g. `max_resource: 90`");
  AshaOptions o = read_asha(r);
  if (!r.errors().empty() || !o.max_resource) return nullptr;
  return std::make_unique<HyperbandPruner>(b, o.min_resource, *o.max_resource, o.reduction_factor);
}

const Entry kRegistry[] = {
    {"none", {"startup_trials"}, 1, make_none},  // startup_trials: studies stored before pruners had options
    {"median", {"startup_trials", "interval", "min_trials", "compare"}, 0, make_median},
    {"percentile", {"startup_trials", "percentile", "interval", "min_trials", "compare"}, 0, make_percentile},
    {"threshold", {"lower", "upper"}, 0, make_threshold},
    {"asha", {"min_resource", "reduction_factor", "min_early_stopping_rate", "max_resource"}, 0, make_asha},
    {"hyperband", {"min_resource", "reduction_factor", "max_resource"}, 0, make_hyperband},
};

constexpr std::string_view kShared[] = {"by", "warmup", "group_by"};

}  // namespace

PrunerResult make_pruner(const std::string& kind, const nlohmann::json& options) {
  for (const auto& e : kRegistry) {
    if (e.kind != kind) continue;
    OptionReader r(options, std::string(kind));
    // Unknown keys: the shared ones plus the kind's own.
    {
      const nlohmann::json opts = options.is_object() ? options : nlohmann::json::object();
      for (const auto& [key, _] : opts.items()) {
        bool ok = false;
        for (auto k : kShared) ok = ok || k == key;
        for (auto k : e.keys) ok = ok || k == key;
        if (ok) continue;
        std::string list;
        for (auto k : e.keys) list += std::string(k) + ", ";
        for (auto k : kShared) list += std::string(k) + (k == kShared[2] ? "" : ", ");
        r.error(key, fmt::format("unknown option '{}' for the {} pruner", key, kind), fmt::format("{} takes: {}", kind, list));
      }
    }
    PrunerBasics b;
    if (options.is_object() && options.contains("by")) {
      const auto& v = options["by"];
      auto axis = v.is_string() ? parse_axis(v.get<std::string>()) : std::nullopt;
      if (!axis) r.error("by", fmt::format("expected one of epoch, step, samples, wall_s, got {}", v.dump()),
                         "write by: epoch (or step, samples, wall_s)");
      else b.by = *axis;
    }
    b.warmup = r.number("warmup", e.default_warmup, 0.0, 1e300);
    auto group = r.strings("group_by");
    auto p = e.make(r, b);
    if (!p || !r.errors().empty()) return std::unexpected(r.take_errors());
    if (!group.empty()) p = std::make_unique<GroupByPruner>(std::move(p), std::move(group));
    return p;
  }
  std::string names;
  for (const auto& e : kRegistry) names += (names.empty() ? "" : ", ") + std::string(e.kind);
  return std::unexpected(std::vector<OptionError>{
      {"kind", fmt::format("unknown pruner '{}'", kind), fmt::format("use one of: {}", names)}});
}

std::vector<std::string_view> pruner_option_keys(const std::string& kind) {
  for (const auto& e : kRegistry)
    if (e.kind == kind) return std::vector<std::string_view>(e.keys);
  return {};
}

double pruner_default_warmup(const std::string& kind) {
  for (const auto& e : kRegistry)
    if (e.kind == kind) return e.default_warmup;
  return 0;
}

std::vector<std::string_view> pruner_names() {
  std::vector<std::string_view> out;
  for (const auto& e : kRegistry) out.push_back(e.kind);
  return out;
}

std::optional<double> best_until(const TrialRecord& t, Axis axis, double x, bool maximize) {
  std::optional<double> best;
  for (const auto& p : t.curve) {
    if (position(p, axis) > x + 1e-9 || std::isnan(p.value)) continue;
    if (!best || (maximize ? p.value > *best : p.value < *best)) best = p.value;
  }
  return best;
}

}  // namespace dlsweep::search
