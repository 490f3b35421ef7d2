// pareto.cpp — domination, sorting into fronts, crowding, hypervolume.
#include "common/pareto.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dlsweep {

bool dominates(const Losses& a, const Losses& b) {
  bool better = false;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] > b[i]) return false;
    if (a[i] < b[i]) better = true;
  }
  return better;
}

double total_violation(const std::vector<double>& constraints) {
  double v = 0;
  for (double c : constraints)
    if (c > 0) v += c;
    else if (std::isnan(c)) return std::numeric_limits<double>::infinity();
  return v;
}

bool constrained_dominates(const Losses& a, double va, const Losses& b, double vb) {
  const bool fa = va <= 0, fb = vb <= 0;
  if (fa && fb) return dominates(a, b);
  if (fa != fb) return fa;
  return va < vb;
}

std::vector<std::vector<std::size_t>> non_dominated_sort(const std::vector<Losses>& points,
                                                         const std::vector<double>& violations) {
  const std::size_t n = points.size();
  auto dom = [&](std::size_t i, std::size_t j) {
    return violations.empty() ? dominates(points[i], points[j])
                              : constrained_dominates(points[i], violations[i], points[j], violations[j]);
  };
  std::vector<std::vector<std::size_t>> dominated(n);
  std::vector<std::size_t> count(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      if (dom(i, j)) { dominated[i].push_back(j); ++count[j]; }
      else if (dom(j, i)) { dominated[j].push_back(i); ++count[i]; }
    }
  std::vector<std::vector<std::size_t>> fronts;
  std::vector<std::size_t> current;
  for (std::size_t i = 0; i < n; ++i)
    if (count[i] == 0) current.push_back(i);
  while (!current.empty()) {
    std::vector<std::size_t> next;
    for (std::size_t i : current)
      for (std::size_t j : dominated[i])
        if (--count[j] == 0) next.push_back(j);
    std::sort(next.begin(), next.end());
    fronts.push_back(std::move(current));
    current = std::move(next);
  }
  return fronts;
}

std::vector<double> crowding_distance(const std::vector<Losses>& points, const std::vector<std::size_t>& front) {
  const std::size_t m = front.size();
  std::vector<double> dist(m, 0.0);
  if (m == 0) return dist;
  const double inf = std::numeric_limits<double>::infinity();
  if (m <= 2) return std::vector<double>(m, inf);
  const std::size_t dims = points[front[0]].size();
  std::vector<std::size_t> order(m);
  for (std::size_t k = 0; k < dims; ++k) {
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return points[front[a]][k] < points[front[b]][k]; });
    const double lo = points[front[order.front()]][k], hi = points[front[order.back()]][k];
    dist[order.front()] = dist[order.back()] = inf;
    if (!(hi > lo) || !std::isfinite(hi - lo)) continue;
    for (std::size_t r = 1; r + 1 < m; ++r)
      dist[order[r]] += (points[front[order[r + 1]]][k] - points[front[order[r - 1]]][k]) / (hi - lo);
  }
  return dist;
}

namespace {

// Volume of the union of boxes [p, ref) over `pts`, all strictly below ref, in `d` leading
// coordinates.
double volume(std::vector<Losses>& pts, const Losses& ref, std::size_t d) {
  if (pts.empty()) return 0.0;
  if (d == 1) {
    double lo = ref[0];
    for (const auto& p : pts) lo = std::min(lo, p[0]);
    return ref[0] - lo;
  }
  const std::size_t k = d - 1;
  std::sort(pts.begin(), pts.end(), [&](const Losses& a, const Losses& b) { return a[k] < b[k]; });
  if (d == 2) {  // sweep: ascending y, keep the running minimum x
    double v = 0, min_x = ref[0];
    for (std::size_t i = 0; i < pts.size(); ++i) {
      min_x = std::min(min_x, pts[i][0]);
      const double next_y = i + 1 < pts.size() ? pts[i + 1][1] : ref[1];
      v += (ref[0] - min_x) * (next_y - pts[i][1]);
    }
    return v;
  }
  double v = 0;
  std::vector<Losses> slice;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    slice.push_back(pts[i]);
    const double next = i + 1 < pts.size() ? pts[i + 1][k] : ref[k];
    if (next > pts[i][k]) {
      std::vector<Losses> copy = slice;
      v += (next - pts[i][k]) * volume(copy, ref, d - 1);
    }
  }
  return v;
}

}  // namespace

double hypervolume(std::vector<Losses> points, const Losses& reference) {
  std::erase_if(points, [&](const Losses& p) {
    if (p.size() != reference.size()) return true;
    for (std::size_t i = 0; i < p.size(); ++i)
      if (!(p[i] < reference[i])) return true;
    return false;
  });
  if (reference.empty()) return 0.0;
  // Dominated points add nothing; dropping them keeps the slices small.
  const auto fronts = non_dominated_sort(points);
  std::vector<Losses> front;
  if (!fronts.empty())
    for (std::size_t i : fronts[0]) front.push_back(points[i]);
  return volume(front, reference, reference.size());
}

std::vector<std::size_t> select_by_hypervolume(const std::vector<Losses>& points, std::size_t k,
                                               const Losses& reference) {
  std::vector<std::size_t> chosen;
  std::vector<bool> taken(points.size(), false);
  std::vector<Losses> picked;
  double base = 0;
  while (chosen.size() < k && chosen.size() < points.size()) {
    std::size_t best = points.size();
    double best_gain = -1;
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (taken[i]) continue;
      auto with = picked;
      with.push_back(points[i]);
      const double gain = hypervolume(with, reference) - base;
      if (gain > best_gain) { best_gain = gain; best = i; }
    }
    taken[best] = true;
    chosen.push_back(best);
    picked.push_back(points[best]);
    base = hypervolume(picked, reference);
  }
  return chosen;
}

}  // namespace dlsweep
