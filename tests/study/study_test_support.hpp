// study_test_support.hpp — what the study validator's tests ask of a StudyResult: every
// error message in one string (for INFO and Contains), and the error at one key path.
#pragma once

#include <string>

#include "study/spec.hpp"

namespace study_test {

inline std::string messages(const dlsweep::orch::StudyResult& r) {
  std::string s;
  if (!r)
    for (const auto& e : r.error()) s += e.message() + "\n";
  return s;
}

inline const dlsweep::orch::ValidationError* error_at(const dlsweep::orch::StudyResult& r, const std::string& key_path) {
  if (r) return nullptr;
  for (const auto& e : r.error())
    if (e.key_path == key_path) return &e;
  return nullptr;
}

}  // namespace study_test
