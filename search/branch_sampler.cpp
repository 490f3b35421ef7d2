// branch_sampler.cpp — the branching study's options, its plan and its rounds of extra
// seeds (branch_sampler.hpp).
#include "search/branch_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <map>

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
  r.only({"points", "by", "batches", "delta", "tolerance", "seeds", "max_seeds", "lr_factors", "end", "generations"});
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
  if (o.generations == 0) o.generations = static_cast<std::int64_t>(o.points.size()) + 1;
  return o;
}

BranchSampler::BranchSampler(Space space, BranchOptions options) : space_(std::move(space)), options_(std::move(options)) {}

std::int64_t BranchSampler::base_size() const {
  const auto m = static_cast<std::int64_t>(options_.points.size());
  const auto per = options_.seeds * static_cast<std::int64_t>(options_.lr_factors.size()) *
                   static_cast<std::int64_t>(options_.batches.size());
  return 1 + m * (1 + per);
}

std::optional<std::int64_t> BranchSampler::size() const {
  const auto m = static_cast<std::int64_t>(options_.points.size());
  const auto round = static_cast<std::int64_t>(options_.lr_factors.size() * options_.batches.size());
  return base_size() + (options_.max_seeds - options_.seeds) * m * round;
}

std::int64_t BranchSampler::trunk_segment_number(std::int64_t g) const {
  if (g <= 1) return 0;
  const auto per = options_.seeds * static_cast<std::int64_t>(options_.lr_factors.size()) *
                   static_cast<std::int64_t>(options_.batches.size());
  return 1 + (g - 2) * (1 + per);
}

namespace {

const TrialRecord* find_trial(const History& h, std::int64_t number) {
  for (const auto& t : h.trials)
    if (t.number == number) return &t;
  return nullptr;
}

}  // namespace

std::optional<double> branch_value(const TrialRecord& t, const BranchTrial& planned, Axis axis) {
  if (t.status != TrialStatus::complete) return std::nullopt;
  std::optional<double> v;
  for (const auto& p : t.curve)
    if (std::isfinite(p.value) && branch_report_counts(position(p, axis), planned.start, planned.end)) v = p.value;
  return v;
}

std::optional<BranchTrial> BranchSampler::plan(std::int64_t number, const History& history) const {
  const auto& o = options_;
  const auto m = static_cast<std::int64_t>(o.points.size());
  const auto nf = static_cast<std::int64_t>(o.lr_factors.size()), nb = static_cast<std::int64_t>(o.batches.size());
  if (number < 0 || m == 0 || nb == 0) return std::nullopt;
  auto point_at = [&](std::int64_t g) { return o.points[static_cast<std::size_t>(g - 1)]; };
  auto branch = [&](std::int64_t g, std::int64_t s, std::int64_t f, std::int64_t b, std::int64_t round, std::int64_t member) {
    BranchTrial t;
    t.role = {false, g, point_at(g), o.batches[static_cast<std::size_t>(b)], o.lr_factors[static_cast<std::size_t>(f)], s, round};
    t.member = member;
    t.generation = g;
    t.start = point_at(g);
    t.end = point_at(g) + o.delta;
    t.parent = trunk_segment_number(g);
    return t;
  };
  if (number == 0) {
    BranchTrial t;
    t.role = {true, 0, 0, o.batches.front(), 1.0, 0, 0};
    t.end = point_at(1);
    return t;
  }
  const std::int64_t per = o.seeds * nf * nb;
  if (number < base_size()) {
    const std::int64_t g = 1 + (number - 1) / (1 + per), k = (number - 1) % (1 + per);
    if (k == 0) {
      BranchTrial t;
      t.role = {true, g, point_at(g), o.batches.front(), 1.0, 0, 0};
      t.generation = g;
      t.start = point_at(g);
      t.end = g < m ? point_at(g + 1) : o.end;
      t.parent = trunk_segment_number(g);
      return t;
    }
    const std::int64_t j = k - 1;  // seed-major, then factor, then batch
    return branch(g, j / (nf * nb), (j / nb) % nf, j % nb, 0, 1 + (g - 1) * per + j);
  }
  // Rounds of extra seeds: each decided from every trial before it, once all have ended.
  std::int64_t start = base_size(), member = 1 + m * per;
  for (std::int64_t round = 1; o.seeds + round <= o.max_seeds; ++round) {
    std::map<std::int64_t, std::vector<BranchValue>> values;  // point -> its branches so far
    for (std::int64_t n = 0; n < start; ++n) {
      const TrialRecord* t = find_trial(history, n);
      if (!t || !t->finished()) return std::nullopt;  // not decided yet
      auto p = plan(n, history);
      if (!p || p->role.trunk) continue;
      if (auto v = branch_value(*t, *p, o.axis))
        values[p->role.point].push_back({p->role.batch, p->role.lr_factor, p->role.seed, *v, n});
    }
    BranchRule rule{o.batches, o.tolerance, history.maximize, 2.0};
    std::vector<std::int64_t> again;
    for (std::int64_t g = 1; g <= m; ++g) {
      const auto a = branch_point_answer(g, point_at(g), values[g], rule);
      if (!a.determined && a.lo) again.push_back(g);  // no reference at all: more seeds cannot help
    }
    const std::int64_t count = static_cast<std::int64_t>(again.size()) * nf * nb;
    if (number < start + count) {
      const std::int64_t j = number - start;
      const std::int64_t g = again[static_cast<std::size_t>(j / (nf * nb))];
      return branch(g, o.seeds + round - 1, (j / nb) % nf, j % nb, round, member + j);
    }
    if (count == 0) return std::nullopt;  // every point decided: done
    start += count;
    member += count;
  }
  return std::nullopt;
}

bool BranchSampler::ready(std::int64_t number, const History& history) const {
  if (number == 0) return true;
  if (number < base_size()) {
    const auto per = options_.seeds * static_cast<std::int64_t>(options_.lr_factors.size()) *
                     static_cast<std::int64_t>(options_.batches.size());
    const std::int64_t g = 1 + (number - 1) / (1 + per);
    const TrialRecord* t = find_trial(history, trunk_segment_number(g));
    return t && t->finished();
  }
  for (std::int64_t n = 0; n < number; ++n) {
    const TrialRecord* t = find_trial(history, n);
    if (!t || !t->finished()) return false;
  }
  return true;
}

std::optional<Params> BranchSampler::next(std::int64_t number, const History& history) {
  if (!ready(number, history)) return std::nullopt;
  auto p = plan(number, history);
  if (!p) return std::nullopt;
  if (p->parent) {  // nothing branches from a trunk segment that did not complete
    const TrialRecord* t = find_trial(history, *p->parent);
    if (!t || t->status != TrialStatus::complete) return std::nullopt;
  }
  Params out = space_.fixed;
  out["batch_size"] = p->role.batch;
  if (auto lr = space_.fixed.find("base_lr"); lr != space_.fixed.end() && lr->is_number())
    out["base_lr"] = lr->get<double>() * p->role.lr_factor;
  if (!p->role.trunk) out["branch_seed"] = p->role.seed + 1;
  return out;
}

nlohmann::json BranchSampler::lineage(std::int64_t number, const History& history) const {
  auto p = plan(number, history);
  if (!p) return nullptr;
  return {{"member", p->member},
          {"generation", p->generation},
          {"axis", std::string(axis_name(options_.axis))},
          {"start", p->start},
          {"end", p->end},
          {"parent", p->parent ? nlohmann::json(*p->parent) : nlohmann::json(nullptr)},
          {"exploit", nullptr},
          {"branch", p->role.to_json()}};
}

}  // namespace dlsweep::search
