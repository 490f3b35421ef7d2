// search_parts.cpp — the study's sampler, pruner and budget, built once (search_parts.hpp).
#include "engine/search_parts.hpp"

#include <fmt/format.h>

#include "study/growth.hpp"

namespace dlsweep::orch {

namespace {

Error option_error(const StudySpec& spec, const char* section, const search::OptionError& e) {
  const std::string key = e.key.empty() ? std::string(section) : fmt::format("{}.{}", section, e.key);
  return Error{e.what, fmt::format("{}: {}", spec.source, key), e.fix};
}

}  // namespace

Result<SearchParts> make_search_parts(const StudySpec& spec) {
  auto sampler = search::make_sampler(spec.search.algorithm, spec.space, spec.search.seed, spec.search.options);
  if (!sampler) return std::unexpected(option_error(spec, "search", sampler.error().front()));
  auto pruner = search::make_pruner(spec.pruner.kind, spec.pruner.options);
  if (!pruner) return std::unexpected(option_error(spec, "pruner", pruner.error().front()));
  SearchParts parts;
  parts.budget = trial_budget(spec, (*sampler)->size());
  parts.sampler = std::move(*sampler);
  parts.pruner = std::move(*pruner);
  return parts;
}

}  // namespace dlsweep::orch
