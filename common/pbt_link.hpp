// pbt_link.hpp — one trial's link in a PBT member's lineage (population-based training,
// search/pbt_sampler.hpp): its member, generation and interval, the trial it continues
// from, and whether it exploited a donor (whose weights and params it took) and how it
// explored (the factors, and the keys resampled from their distribution). Recorded by the engine as a `pbt` event whose reason is to_json();
// read back by `resume`, `status`, `best` (engine/pbt_lineage.hpp) and the report's lineage
// card. Plain data and its JSON and text forms; no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dlsweep {

/// The event kind of a PBT link (events.kind).
inline constexpr const char* kPbtEventKind = "pbt";

struct PbtLink {
  std::int64_t number = 0;       ///< the trial
  std::int64_t member = 0;
  std::int64_t generation = 0;
  std::string axis = "epoch";    ///< epoch | step | samples
  double start = 0, end = 0;     ///< the interval [start, end) on the axis
  std::optional<std::int64_t> parent;        ///< the trial it continues from (generation > 0)
  std::optional<std::int64_t> rank;          ///< its parent's rank in the previous generation (0 = best)
  std::optional<std::int64_t> exploit_from;  ///< the donor trial it copied (exploit), if any
  std::optional<std::int64_t> from_member;   ///< the donor's member
  nlohmann::json factors = nlohmann::json::object();  ///< explore: parameter -> factor
  nlohmann::json resampled = nlohmann::json::object();  ///< explore: parameter -> its fresh value (resample_probability)
  /// A branching study's trial (search: {algorithm: branch}): its role, common/branch_cbs.hpp's
  /// BranchRole as JSON; null in a pbt study. A branch always stops at its `end`.
  nlohmann::json branch = nullptr;

  /// From the sampler's lineage JSON (or an event's reason); nullopt when not a link.
  static std::optional<PbtLink> from_json(std::int64_t number, const nlohmann::json& j);
  nlohmann::json to_json() const;
  /// One line: "member 3, generation 2, epoch [4, 6): exploits trial 9 (member 1), base_lr x0.8,
  /// batch_size resampled to 512".
  std::string describe() const;
  /// Short, for a table cell: "m3 g2 <- 9 (exploit m1: base_lr x0.8, batch_size resampled to 512)".
  std::string brief() const;
};

/// An explore step in key order: "base_lr x0.8, batch_size resampled to 512" (empty when
/// nothing moved). `factors`: key -> factor; `resampled`: key -> fresh value.
std::string pbt_explore_text(const nlohmann::json& factors, const nlohmann::json& resampled);

using PbtLinks = std::map<std::int64_t, PbtLink>;  ///< by trial number

/// The links of `number`'s member from generation 0 to `number` (empty if it has none; cut
/// where a parent's link is missing).
std::vector<const PbtLink*> pbt_chain(const PbtLinks& links, std::int64_t number);

}  // namespace dlsweep
