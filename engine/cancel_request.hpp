// cancel_request.hpp — the file through which `dlsweep cancel` asks a running orchestrator
// to cancel trials: <runs_dir>/<study>/cancel-request, written atomically by the command,
// read and removed by the engine on its next tick. Words, one a line: "all" or trial
// numbers; anything else is ignored (the file is ours, but a torn or foreign one must not
// stop the sweep).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlsweep::orch {

inline constexpr const char* kCancelRequestFile = "cancel-request";

struct CancelRequest {
  bool all = false;                   ///< cancel the whole study
  std::vector<std::int64_t> numbers;  ///< else these trial numbers
};

/// The file's text for a request (what `dlsweep cancel` writes).
std::string format_cancel_request(const CancelRequest& r);

/// Pure: the request a file's text makes.
CancelRequest parse_cancel_request(std::string_view text);

/// Reads and removes <study_dir>/cancel-request; nullopt when there is none.
std::optional<CancelRequest> take_cancel_request(const std::filesystem::path& study_dir);

}  // namespace dlsweep::orch
