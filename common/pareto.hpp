// pareto.hpp — the arithmetic of several objectives: domination, constrained domination,
// non-dominated sorting (Deb et al. 2002), crowding distance, hypervolume (exact, any number
// of objectives; meant for 2-3), and the greedy hypervolume subset selection of Optuna's
// multi-objective TPE. Pure functions of plain vectors.
//
// Every point here is a *loss* vector: lower is better in each coordinate (a maximised
// objective is negated; search/pareto.hpp's to_losses, analysis/front.hpp).
// Shared by search/ (NSGA-II, multi-objective TPE) and analysis/ (the front `best` names).
// Constraint violations follow Optuna's constraints_func: each entry <= 0 is satisfied; a
// trial's total violation is the sum of its positive entries; feasible means zero.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>


namespace dlsweep {

using Losses = std::vector<double>;

/// a Pareto-dominates b: no worse in every coordinate, better in one (same sizes assumed).
bool dominates(const Losses& a, const Losses& b);

/// Sum of the positive entries (0: feasible).
double total_violation(const std::vector<double>& constraints);

/// Deb's constrained domination (and Optuna's NSGA-II): a feasible point dominates an
/// infeasible one; of two infeasible points the smaller total violation dominates; two
/// feasible points compare by Pareto domination.
bool constrained_dominates(const Losses& a, double violation_a, const Losses& b, double violation_b);

/// The fronts, best first: indices into `points`, each front in index order. With
/// `violations` (one per point, or empty for none) domination is constrained_dominates.
std::vector<std::vector<std::size_t>> non_dominated_sort(const std::vector<Losses>& points,
                                                         const std::vector<double>& violations = {});

/// Crowding distance of each member of `front` (indices into points), in the front's order:
/// per objective, the boundary points get +inf and the others the normalised gap between
/// their neighbours, summed over objectives (Deb et al. 2002, Sec. III-B).
std::vector<double> crowding_distance(const std::vector<Losses>& points, const std::vector<std::size_t>& front);

/// The volume dominated by `points` and bounded by `reference` (loss space). Points not
/// strictly better than the reference in every coordinate add nothing. Exact, by slicing
/// on the last coordinate (O(n^2 log n) for 3 objectives).
double hypervolume(std::vector<Losses> points, const Losses& reference);

/// Greedy hypervolume subset selection: `k` of `points` (indices), each pick the one adding
/// the most hypervolume to those picked; ties go to the lower index. Optuna's _solve_hssp.
std::vector<std::size_t> select_by_hypervolume(const std::vector<Losses>& points, std::size_t k,
                                               const Losses& reference);

}  // namespace dlsweep
