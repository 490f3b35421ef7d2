// branch_options.cpp — a branching study's options under `search:`, read and checked together
// (branch_sampler.hpp: BranchOptions).
#include "search/branch_sampler.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace dlsweep::search {

namespace {

std::vector<double> read_numbers(OptionReader& r, const std::string& key, const nlohmann::json& v) {
  std::vector<double> out;
  if (!v.is_array() || v.empty()) {
    r.error(key, fmt::format("expected a list of numbers, got {}", v.dump()), fmt::format("write {}: [1, 2, 4]", key));
    return out;
  }
  for (const auto& x : v) {
    if (!x.is_number() || !std::isfinite(x.get<double>()) || x.get<double>() <= 0) {
      r.error(key, fmt::format("{} is not a positive number", x.dump()), fmt::format("write {}: [1, 2, 4]", key));
      return {};
    }
    out.push_back(x.get<double>());
  }
  return out;
}

bool ascending(const std::vector<double>& v) {
  for (std::size_t i = 1; i < v.size(); ++i)
    if (!(v[i] > v[i - 1])) return false;
  return true;
}

}  // namespace

BranchOptions BranchOptions::read(OptionReader& r, const Space& space) {
  BranchOptions o;
  r.only({"points", "by", "batches", "delta", "tolerance", "seeds", "max_seeds", "lr_factors", "end", "generations", "scan",
          "trunk_to_end"});
  const std::string by = r.word("by", "epoch", {"epoch", "samples"});
  o.axis = by == "samples" ? Axis::samples : Axis::epoch;
  // points: a list, or {first, last}: first, 2 first, 4 first, ... up to last.
  if (const auto* p = r.get("points"); !p) {
    r.error("points", "a branching study needs the points where branches start",
            "add e.g. `points: [0.5, 1, 2, 4]` (on the axis `by`), or `points: {first: 0.5, last: 4}` (every doubling)");
  } else if (p->is_object()) {
    const double first = p->value("first", 0.0), last = p->value("last", 0.0);
    if (!(first > 0) || !(last >= first) || !std::isfinite(last))
      r.error("points", fmt::format("{{first, last}} needs 0 < first <= last, got {}", p->dump()),
              "write points: {first: 0.5, last: 4}");
    else
      for (double x = first; x <= last * (1 + 1e-12) && o.points.size() < 64; x *= 2) o.points.push_back(x);
  } else {
    o.points = read_numbers(r, "points", *p);
    if (!o.points.empty() && !ascending(o.points))
      r.error("points", "the points must ascend, each once", "sort them, e.g. points: [0.5, 1, 2]");
  }
  if (const auto* b = r.get("batches"); !b) {
    r.error("batches", "a branching study needs the batch sizes its branches train at",
            "add e.g. `batches: [64, 128, 256, 512, 1024]` (the smallest is the trunk's and the reference)");
  } else if (!b->is_array() || b->size() < 2) {
    r.error("batches", fmt::format("expected a list of at least 2 batch sizes, got {}", b->dump()),
            "write batches: [64, 128, 256, 512]");
  } else {
    for (const auto& x : *b) {
      if (!x.is_number_integer() || x.get<std::int64_t>() < 1) {
        r.error("batches", fmt::format("{} is not a whole number >= 1", x.dump()), "write batches: [64, 128, 256]");
        o.batches.clear();
        break;
      }
      o.batches.push_back(x.get<std::int64_t>());
    }
    for (std::size_t i = 1; i < o.batches.size(); ++i)
      if (o.batches[i] <= o.batches[i - 1]) {
        r.error("batches", "the batch sizes must ascend, each once", "sort them, e.g. batches: [64, 128, 256]");
        break;
      }
  }
  if (!r.has("delta"))
    r.error("delta", "a branching study needs delta: how far each branch trains from its point",
            "add e.g. `delta: 0.5` (on the axis `by`; the same samples for every batch)");
  o.delta = r.number("delta", 0, 0, 1e18, /*low_open=*/true);
  o.tolerance = r.number("tolerance", 0.01, 0, 10, /*low_open=*/true);
  o.seeds = r.integer("seeds", 2, 2, 64);
  o.max_seeds = r.integer("max_seeds", std::max<std::int64_t>(o.seeds, 4), 2, 64);
  if (o.max_seeds < o.seeds)
    r.error("max_seeds", fmt::format("max_seeds {} is below seeds {}", o.max_seeds, o.seeds),
            fmt::format("use max_seeds >= {} (or equal, for no extra seeds)", o.seeds));
  if (const auto* f = r.get("lr_factors")) {
    o.lr_factors = read_numbers(r, "lr_factors", *f);
    if (o.lr_factors.empty()) o.lr_factors = {1.0};
    std::vector<double> sorted = o.lr_factors;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      r.error("lr_factors", "an LR factor is listed twice", "list each factor once, e.g. lr_factors: [0.5, 1, 2]");
    const bool others = std::any_of(o.lr_factors.begin(), o.lr_factors.end(), [](double x) { return x != 1.0; });
    if (others && !space.fixed.contains("base_lr"))
      r.error("lr_factors", "lr_factors multiply the study's base_lr, and it fixes none",
              "add base_lr under trial.trainer (or fixed:), or leave lr_factors out");
  }
  o.end = r.number("end", 0, 0, 1e18, /*low_open=*/true);
  if (!r.has("end"))
    r.error("end", "a branching study needs where its trunk ends",
            "add `end:` under search: (on the axis `by`; dlsweep-train's is its epochs, filled in for you)");
  o.scan = r.word("scan", "upward", {"upward", "all"}) == "all" ? BranchScan::all : BranchScan::upward;
  o.trunk_to_end = r.boolean("trunk_to_end", false);
  o.generations = r.integer("generations", 0, 0, 1 << 20);
  if (!o.points.empty() && o.delta > 0 && o.end > 0) {
    if (o.points.back() >= o.end)
      r.error("points", fmt::format("the last point ({:g}) is not before the trunk's end ({:g})", o.points.back(), o.end),
              "use points before the end of training");
    else if (o.points.back() + o.delta > o.end * (1 + 1e-12))
      r.error("delta", fmt::format("the branch at {:g} would train to {:g}, past the trunk's end ({:g})",
                                   o.points.back(), o.points.back() + o.delta, o.end),
              fmt::format("use delta <= {:g}, or an earlier last point", o.end - o.points.back()));
  }
  // generations is the engine's bookkeeping (the trunk's last segment, M, runs to the end),
  // filled in from the points: any other value would stop the wrong segment.
  if (o.generations != 0 && !o.points.empty() && o.generations != static_cast<std::int64_t>(o.points.size()) + 1)
    r.error("generations", fmt::format("a branching study with {} points has {} generations, not {}", o.points.size(),
                                       o.points.size() + 1, o.generations),
            "leave generations out (it follows from the points)");
  if (o.generations == 0) o.generations = static_cast<std::int64_t>(o.points.size()) + 1;
  return o;
}

}  // namespace dlsweep::search
