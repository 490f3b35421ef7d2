# The search library's sources (search/*.cpp), paths relative to search/. Included by
# search/CMakeLists.txt and fuzz/CMakeLists.txt (the study parser validates sampler and pruner
# options through the registries, so the study fuzz target needs all of them).
set(DLSWEEP_SEARCH_SOURCES
  search_space.cpp
  history.cpp
  options.cpp
  conditional.cpp
  value_map.cpp
  grid_sampler.cpp
  random_sampler.cpp
  sobol.cpp
  qmc_sampler.cpp
  parzen_estimator.cpp
  tpe_sampler.cpp
  pareto.cpp
  nsga2_crossover.cpp
  nsga2_sampler.cpp
  pbt_sampler.cpp
  make_sampler.cpp
  discovered.cpp
  enqueued_params.cpp
  median_pruner.cpp
  percentile_pruner.cpp
  threshold_pruner.cpp
  asha_pruner.cpp
  group_by_pruner.cpp
  make_pruner.cpp
)
