#include "analysis/study_data.hpp"

namespace dlsweep::analysis {

nlohmann::json config_key(const nlohmann::json& params) {
  nlohmann::json key = params.is_object() ? params : nlohmann::json::object();
  key.erase("seed");
  return key;
}

std::string describe_params(const nlohmann::json& params, const std::vector<TrialData>& trials) {
  // Names whose value differs between trials (seed included: it tells replicates apart).
  std::vector<std::string> varying;
  if (params.is_object())
    for (auto& [k, v] : params.items())
      for (const auto& t : trials)
        if (!t.params.contains(k) || t.params[k] != v) {
          varying.push_back(k);
          break;
        }
  std::string out;
  const bool all = varying.empty();
  if (params.is_object())
    for (auto& [k, v] : params.items()) {  // nlohmann::json objects iterate in key order
      if (!all && std::find(varying.begin(), varying.end(), k) == varying.end()) continue;
      out += (out.empty() ? "" : ", ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
    }
  return out;
}

}  // namespace dlsweep::analysis
