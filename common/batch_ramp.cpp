#include "common/batch_ramp.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace dlsweep::trainer::schedule {

namespace {

constexpr const char* kRampForms = "\"none\", \"smith\", \"adaptive\" or stages \"EPOCH:BATCH,...\" such as \"0:256,2:1024,4:4096\"";

constexpr const char* kLrForms = "\"none\" or stages \"EPOCH:LR,...\" such as \"0:0.1,2:0.05\"";

Result<double> parse_number(std::string_view s, const char* param = "batch_ramp", const char* forms = kRampForms) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v))
    return fail(fmt::format("'{}' is not a number", s), param, fmt::format("write {}", forms));
  return v;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

Result<BatchRamp> parse_batch_ramp(std::string_view text) {
  BatchRamp r;
  text = trim(text);
  if (text == "none") return r;
  if (text == "smith") {
    r.kind = BatchRamp::Kind::smith;
    return r;
  }
  if (text == "adaptive") {
    r.kind = BatchRamp::Kind::adaptive;
    return r;
  }
  r.kind = BatchRamp::Kind::stages;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const auto colon = item.find(':');
    if (colon == std::string_view::npos)
      return fail(fmt::format("batch_ramp stage '{}' has no ':'", item), "batch_ramp",
                  fmt::format("write {}", kRampForms));
    auto epoch = parse_number(trim(item.substr(0, colon)));
    if (!epoch) return std::unexpected(epoch.error());
    auto batch = parse_number(trim(item.substr(colon + 1)));
    if (!batch) return std::unexpected(batch.error());
    if (*batch < 1 || *batch > (1 << 24) || std::floor(*batch) != *batch)
      return fail(fmt::format("batch_ramp stage '{}': the batch must be an integer in [1, 16777216]", item),
                  "batch_ramp", fmt::format("write {}", kRampForms));
    const double prev = r.stages.empty() ? -1 : r.stages.back().epoch;
    if (*epoch < 0 || *epoch <= prev)
      return fail(fmt::format("batch_ramp stage '{}': epochs must be non-negative and increasing", item),
                  "batch_ramp", fmt::format("write {}", kRampForms));
    r.stages.push_back({*epoch, static_cast<std::int64_t>(*batch)});
  }
  if (r.stages.empty())
    return fail("batch_ramp is empty", "batch_ramp", fmt::format("write {}", kRampForms));
  if (r.stages.front().epoch != 0)
    return fail(fmt::format("batch_ramp's first stage starts at epoch {:g}, not 0", r.stages.front().epoch),
                "batch_ramp", "start the ramp with a stage at epoch 0, e.g. \"0:256,...\"");
  return r;
}

Result<std::vector<LrStage>> parse_lr_schedule(std::string_view text) {
  std::vector<LrStage> out;
  text = trim(text);
  if (text == "none") return out;
  const std::string fix = fmt::format("write {}", kLrForms);
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const auto colon = item.find(':');
    if (colon == std::string_view::npos)
      return fail(fmt::format("lr_schedule stage '{}' has no ':'", item), "lr_schedule", fix);
    auto epoch = parse_number(trim(item.substr(0, colon)), "lr_schedule", kLrForms);
    if (!epoch) return std::unexpected(epoch.error());
    auto lr = parse_number(trim(item.substr(colon + 1)), "lr_schedule", kLrForms);
    if (!lr) return std::unexpected(lr.error());
    if (!(*lr > 0) || *lr > 1e6)
      return fail(fmt::format("lr_schedule stage '{}': the LR must be in (0, 1e6]", item), "lr_schedule", fix);
    const double prev = out.empty() ? -1 : out.back().epoch;
    if (*epoch < 0 || *epoch <= prev)
      return fail(fmt::format("lr_schedule stage '{}': epochs must be non-negative and increasing", item),
                  "lr_schedule", fix);
    out.push_back({*epoch, *lr});
  }
  if (out.empty()) return fail("lr_schedule is empty", "lr_schedule", fix);
  if (out.front().epoch != 0)
    return fail(fmt::format("lr_schedule's first stage starts at epoch {:g}, not 0", out.front().epoch), "lr_schedule",
                "start the schedule with a stage at epoch 0, e.g. \"0:0.1,...\" (it replaces base_lr)");
  return out;
}

}  // namespace dlsweep::trainer::schedule
