# The search library's sources (search/*.cpp), paths relative to search/. Included by
# search/CMakeLists.txt and fuzz/CMakeLists.txt (the study parser validates sampler and pruner
# options through the registries, so the study fuzz target needs all of them).
# The gp and cmaes samplers use Eigen (Debian libeigen3-dev) and LBFGSpp (liblbfgspp-dev,
# header-only in /usr/include, which includes <Eigen/Core>): the include directory is set here
# so that every includer of this list (search/, fuzz/) compiles them.
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
include_directories(SYSTEM ${EIGEN3_INCLUDE_DIRS})
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
  branch_options.cpp
  branch_sampler.cpp
  gp_kernel.cpp
  gp_fit.cpp
  log_ei.cpp
  gp_acquisition.cpp
  gp_ehvi.cpp
  gp_sampler.cpp
  cmaes.cpp
  cmaes_sampler.cpp
  auto_sampler.cpp
  make_sampler.cpp
  discovered.cpp
  enqueued_params.cpp
  median_pruner.cpp
  percentile_pruner.cpp
  threshold_pruner.cpp
  asha_pruner.cpp
  group_by_pruner.cpp
  make_pruner.cpp
  replay.cpp
  replay_sampler.cpp
)
