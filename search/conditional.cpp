// conditional.cpp — activity of conditional dimensions, their order, and validation.
#include "search/conditional.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace dlsweep::search {

bool is_active(const Dimension& d, const Params& params) {
  for (const auto& c : d.when) {
    auto it = params.find(c.param);
    if (it == params.end()) return false;
    if (std::find(c.values.begin(), c.values.end(), *it) == c.values.end()) return false;
  }
  return true;
}

std::vector<std::size_t> sampling_order(const Space& space) {
  const std::size_t n = space.dims.size();
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < n; ++i) index[space.dims[i].name] = i;
  std::vector<bool> placed(n, false);
  std::vector<std::size_t> order;
  order.reserve(n);
  // Repeatedly take the first dimension (file order) whose parents are all placed or are
  // not dimensions (fixed params). O(n^2) on a handful of dimensions.
  while (order.size() < n) {
    bool progressed = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (placed[i]) continue;
      bool ready = true;
      for (const auto& c : space.dims[i].when)
        if (auto it = index.find(c.param); it != index.end() && !placed[it->second]) ready = false;
      if (!ready) continue;
      placed[i] = true;
      order.push_back(i);
      progressed = true;
      break;
    }
    if (!progressed) {  // a cycle: the validator reports it; keep the rest in file order
      for (std::size_t i = 0; i < n; ++i)
        if (!placed[i]) order.push_back(i);
      break;
    }
  }
  return order;
}

void drop_inactive(const Space& space, Params& params) {
  if (!has_conditions(space)) return;
  for (std::size_t i : sampling_order(space)) {
    const auto& d = space.dims[i];
    if (!d.when.empty() && !is_active(d, params)) params.erase(d.name);
  }
}

bool has_conditions(const Space& space) {
  return std::any_of(space.dims.begin(), space.dims.end(), [](const Dimension& d) { return !d.when.empty(); });
}

namespace {

// Whether `v` is a value the dimension can take (or, for fixed params, equals it).
bool can_take(const Dimension& d, const nlohmann::json& v) {
  switch (d.kind) {
    case Dimension::Kind::choice:
      return std::find(d.choices.begin(), d.choices.end(), v) != d.choices.end();
    case Dimension::Kind::int_range: {
      if (!v.is_number()) return false;
      const double x = v.get<double>();
      if (x < double(d.int_low) || x > double(d.int_high)) return false;
      const auto step = d.int_step > 0 ? d.int_step : 1;
      return v.is_number_integer() && (v.get<std::int64_t>() - d.int_low) % step == 0;
    }
    case Dimension::Kind::uniform:
    case Dimension::Kind::log_uniform:
      return false;  // a continuous value is never exactly equal to a listed one
  }
  return false;
}

}  // namespace

std::vector<OptionError> check_conditions(const Space& space) {
  std::vector<OptionError> out;
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < space.dims.size(); ++i) index[space.dims[i].name] = i;
  for (const auto& d : space.dims) {
    for (const auto& c : d.when) {
      const std::string key = fmt::format("{}.when.{}", d.name, c.param);
      if (c.param == d.name) {
        out.push_back({key, fmt::format("'{}' is conditioned on itself", d.name), "name another parameter in when:"});
        continue;
      }
      if (c.values.empty()) {
        out.push_back({key, "the list of values is empty", fmt::format("list the values of {} that enable {}", c.param, d.name)});
        continue;
      }
      auto it = index.find(c.param);
      if (it == index.end()) {
        if (space.fixed.contains(c.param)) {
          const auto& f = space.fixed[c.param];
          if (std::find(c.values.begin(), c.values.end(), f) == c.values.end())
            out.push_back({key, fmt::format("{} is fixed at {}, so {} would never be set", c.param, f.dump(), d.name),
                           fmt::format("include {} in the values, or drop the condition", f.dump())});
          continue;
        }
        out.push_back({key, fmt::format("unknown parameter '{}' in when:", c.param),
                       "name a parameter of `space` (or of `fixed`)"});
        continue;
      }
      const auto& parent = space.dims[it->second];
      if (parent.kind == Dimension::Kind::uniform || parent.kind == Dimension::Kind::log_uniform) {
        out.push_back({key, fmt::format("{} is continuous; a condition needs listed values", c.param),
                       fmt::format("condition on a choice or int parameter, or make {} a list", c.param)});
        continue;
      }
      for (const auto& v : c.values)
        if (!can_take(parent, v))
          out.push_back({key, fmt::format("{} can never be {}", c.param, v.dump()),
                         fmt::format("list values that {} can take", c.param)});
    }
  }
  // Cycles: depth-first search over parent edges between dimensions.
  std::vector<int> mark(space.dims.size(), 0);  // 0 new, 1 on stack, 2 done
  std::vector<bool> reported(space.dims.size(), false);
  auto visit = [&](auto&& self, std::size_t i) -> void {
    mark[i] = 1;
    for (const auto& c : space.dims[i].when) {
      auto it = index.find(c.param);
      if (it == index.end() || it->second == i) continue;
      if (mark[it->second] == 1) {
        if (!reported[i]) {
          reported[i] = true;
          out.push_back({space.dims[i].name + ".when",
                         fmt::format("conditions form a cycle through {} and {}", space.dims[i].name, c.param),
                         "a parameter cannot depend, directly or not, on itself: remove one of the conditions"});
        }
      } else if (mark[it->second] == 0) {
        self(self, it->second);
      }
    }
    mark[i] = 2;
  };
  for (std::size_t i = 0; i < space.dims.size(); ++i)
    if (mark[i] == 0) visit(visit, i);
  return out;
}

}  // namespace dlsweep::search
