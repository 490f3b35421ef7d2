// branch_sampler.cpp — the branching study's plan: the trunk's segments and each point's waves
// of branches (branch_sampler.hpp; its options: branch_options.cpp).
#include "search/branch_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

namespace dlsweep::search {

BranchSampler::BranchSampler(Space space, BranchOptions options) : space_(std::move(space)), options_(std::move(options)) {}

std::optional<std::int64_t> BranchSampler::size() const {
  const auto m = static_cast<std::int64_t>(options_.points.size());
  const auto cells = static_cast<std::int64_t>(options_.lr_factors.size() * options_.batches.size());
  return (options_.trunk_to_end ? m + 1 : m) + m * options_.max_seeds * cells;
}

std::optional<double> branch_value(const TrialRecord& t, const BranchTrial& planned, Axis axis) {
  if (t.status != TrialStatus::complete) return std::nullopt;
  std::optional<double> v;
  for (const auto& p : t.curve)
    if (std::isfinite(p.value) && branch_report_counts(position(p, axis), planned.start, planned.end)) v = p.value;
  return v;
}

struct BranchSampler::Walked {
  enum class Kind { trial, undecided, done } kind = Kind::done;
  BranchTrial trial;
};

namespace {

/// One branch of a wave: batch and LR factor (indices into the options), seed, round.
struct Cell {
  std::size_t b = 0, f = 0;
  std::int64_t seed = 0, round = 0;
};

/// `seeds` seeds (from 0) of batches [b0, b1), every LR factor: seed-major, then factor, then batch.
std::vector<Cell> base_cells(const BranchOptions& o, std::size_t b0, std::size_t b1) {
  std::vector<Cell> out;
  for (std::int64_t s = 0; s < o.seeds; ++s)
    for (std::size_t f = 0; f < o.lr_factors.size(); ++f)
      for (std::size_t b = b0; b < b1; ++b) out.push_back({b, f, s, 0});
  return out;
}

/// The next wave of an upward scan at one point (branch_sampler.hpp), from the seeds tried per
/// batch so far and the point's finished branches; empty: the point is done.
std::vector<Cell> upward_wave(const BranchOptions& o, const std::vector<std::int64_t>& tried,
                              const std::vector<BranchValue>& values, bool maximize) {
  const std::size_t nb = o.batches.size();
  if (tried[0] == 0) return base_cells(o, 0, std::min<std::size_t>(2, nb));
  const auto a = branch_point_answer(0, 0, values, BranchRule{o.batches, o.tolerance, maximize, 2.0});
  if (!a.lo || !a.hi) return {};  // the reference measured nothing: more seeds cannot help
  const auto untried = static_cast<std::size_t>(std::find(tried.begin(), tried.end(), 0) - tried.begin());
  if (untried < nb && *a.hi == o.batches[untried - 1]) return base_cells(o, untried, untried + 1);
  if (a.determined) return {};
  // One more seed where the answer is open: the batches in (lo, hi], the batch that ended the hi
  // walk when it has no value (its branches failed), and the reference when it has no noise
  // estimate; never the reference alone once every open batch has max_seeds.
  auto measured = [&](std::size_t b) {
    for (const auto& s : a.batches)
      if (s.batch == o.batches[b]) return s.n;
    return std::int64_t{0};
  };
  const auto hi_index = static_cast<std::size_t>(std::find(o.batches.begin(), o.batches.end(), *a.hi) - o.batches.begin());
  std::vector<std::size_t> open;
  for (std::size_t b = 1; b < nb; ++b) {
    const bool in = tried[b] > 0 && o.batches[b] > *a.lo && o.batches[b] <= *a.hi;
    const bool failed_stop = b == hi_index + 1 && tried[b] > 0 && measured(b) == 0;
    if ((in || failed_stop) && tried[b] < o.max_seeds) open.push_back(b);
  }
  const bool thin_reference = measured(0) < 2 && tried[0] < o.max_seeds;
  if (open.empty() && !thin_reference) return {};
  if (tried[0] < o.max_seeds) open.insert(open.begin(), 0);
  std::vector<Cell> out;
  for (std::size_t b : open)
    for (std::size_t f = 0; f < o.lr_factors.size(); ++f) out.push_back({b, f, tried[b], tried[b] - o.seeds + 1});
  return out;
}

}  // namespace

BranchSampler::Walked BranchSampler::walk(std::int64_t number, const History& history) const {
  const auto& o = options_;
  const auto m = static_cast<std::int64_t>(o.points.size());
  const std::size_t nb = o.batches.size();
  Walked out;
  if (number < 0 || m == 0 || nb == 0) return out;
  std::unordered_map<std::int64_t, const TrialRecord*> by_number;
  for (const auto& t : history.trials) by_number[t.number] = &t;
  auto found = [&](std::int64_t n) -> const TrialRecord* {
    auto it = by_number.find(n);
    return it == by_number.end() ? nullptr : it->second;
  };
  auto point_at = [&](std::int64_t g) { return o.points[static_cast<std::size_t>(g - 1)]; };
  std::vector<BranchTrial> planned;  // by number, as the walk goes
  std::vector<std::int64_t> segment(static_cast<std::size_t>(m) + 1, -1);  // trunk segment g's number
  auto emit = [&](BranchTrial t) {
    planned.push_back(std::move(t));
    if (static_cast<std::int64_t>(planned.size()) - 1 == number) {
      out.kind = Walked::Kind::trial;
      out.trial = planned.back();
      return true;
    }
    return false;
  };
  auto trunk = [&](std::int64_t g) {
    BranchTrial t;
    t.role = {true, g, g == 0 ? 0.0 : point_at(g), o.batches.front(), 1.0, 0, 0};
    t.generation = g;
    t.start = g == 0 ? 0.0 : point_at(g);
    t.end = g < m ? point_at(g + 1) : o.end;
    if (g > 0) t.parent = segment[static_cast<std::size_t>(g - 1)];
    segment[static_cast<std::size_t>(g)] = static_cast<std::int64_t>(planned.size());
    return emit(std::move(t));
  };
  std::int64_t member = 1;
  auto branch = [&](std::int64_t g, const Cell& c) {
    BranchTrial t;
    t.role = {false, g, point_at(g), o.batches[c.b], o.lr_factors[c.f], c.seed, c.round};
    t.member = member++;
    t.generation = g;
    t.start = point_at(g);
    t.end = point_at(g) + o.delta;
    t.parent = segment[static_cast<std::size_t>(g - 1)];
    return emit(std::move(t));
  };
  // The finished branches among numbers [from, to), into values; false while one has not ended.
  std::map<std::int64_t, std::vector<BranchValue>> values;  // point -> its branches so far
  auto gather = [&](std::int64_t from, std::int64_t to) {
    for (std::int64_t n = from; n < to; ++n) {
      const TrialRecord* t = found(n);
      if (!t || !t->finished()) return false;
      const BranchTrial& p = planned[static_cast<std::size_t>(n)];
      if (p.role.trunk) continue;
      if (auto v = branch_value(*t, p, o.axis))
        values[p.role.point].push_back({p.role.batch, p.role.lr_factor, p.role.seed, *v, n});
    }
    return true;
  };
  auto has_segment = [&](std::int64_t g) { return g < m || o.trunk_to_end; };  // [p_g, ...)
  if (trunk(0)) return out;
  if (o.scan == BranchScan::upward && has_segment(1) && trunk(1)) return out;
  for (std::int64_t g = 1; g <= m; ++g) {
    if (o.scan == BranchScan::all) {
      if (has_segment(g) && trunk(g)) return out;
      for (const auto& c : base_cells(o, 0, nb))
        if (branch(g, c)) return out;
      continue;
    }
    std::vector<std::int64_t> tried(nb, 0);
    for (bool first_wave = true;; first_wave = false) {
      const auto wave = upward_wave(o, tried, values[g], history.maximize);
      if (wave.empty()) break;
      const auto first = static_cast<std::int64_t>(planned.size());
      for (const auto& c : wave) {
        if (branch(g, c)) return out;
        tried[c.b] = std::max(tried[c.b], c.seed + 1);
      }
      const auto last = static_cast<std::int64_t>(planned.size());
      // The trunk's next segment comes after the point's first wave: it needs only the segment
      // before it, so the trunk goes on while the point's later waves wait for their decisions.
      if (first_wave && g < m && has_segment(g + 1) && trunk(g + 1)) return out;
      if (!gather(first, last)) {  // the next wave waits for this one
        out.kind = Walked::Kind::undecided;
        return out;
      }
    }
  }
  if (o.scan == BranchScan::upward) return out;  // done
  // `scan: all`: rounds of extra seeds, each decided from every trial before it, once all have ended.
  std::int64_t decided = 0;
  for (std::int64_t round = 1; o.seeds + round <= o.max_seeds; ++round) {
    if (!gather(decided, static_cast<std::int64_t>(planned.size()))) {
      out.kind = Walked::Kind::undecided;
      return out;
    }
    decided = static_cast<std::int64_t>(planned.size());
    BranchRule rule{o.batches, o.tolerance, history.maximize, 2.0};
    bool any = false;
    for (std::int64_t g = 1; g <= m; ++g) {
      const auto a = branch_point_answer(g, point_at(g), values[g], rule);
      if (a.determined || !a.lo) continue;  // no reference at all: more seeds cannot help
      any = true;
      for (std::size_t f = 0; f < o.lr_factors.size(); ++f)
        for (std::size_t b = 0; b < nb; ++b)
          if (branch(g, {b, f, o.seeds + round - 1, round})) return out;
    }
    if (!any) break;  // every point decided: done
  }
  return out;
}

std::optional<BranchTrial> BranchSampler::plan(std::int64_t number, const History& history) const {
  auto w = walk(number, history);
  if (w.kind != Walked::Kind::trial) return std::nullopt;
  return w.trial;
}

bool BranchSampler::ready(std::int64_t number, const History& history) const {
  auto w = walk(number, history);
  if (w.kind == Walked::Kind::undecided) return false;
  if (w.kind == Walked::Kind::done || !w.trial.parent) return true;  // done: next() answers nullopt
  for (const auto& t : history.trials)
    if (t.number == *w.trial.parent) return t.finished();
  return false;
}

std::optional<Params> BranchSampler::next(std::int64_t number, const History& history) {
  if (!ready(number, history)) return std::nullopt;
  auto p = plan(number, history);
  if (!p) return std::nullopt;
  if (p->parent) {  // nothing branches from a trunk segment that did not complete
    auto t = std::find_if(history.trials.begin(), history.trials.end(),
                          [&](const TrialRecord& r) { return r.number == *p->parent; });
    if (t == history.trials.end() || t->status != TrialStatus::complete) return std::nullopt;
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
