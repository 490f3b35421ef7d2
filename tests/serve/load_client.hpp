// load_client.hpp — test/bench helper: many concurrent HTTP clients against `dlsweep serve`.
//  - burst(): N connections opened at once, N requests in flight together, N answers read;
//  - Viewers: N threads, each a browser tab that polls its URL once per period on a
//    keep-alive connection (what the live page does), until stopped.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace dlsweep::serve::testing {

struct LoadCounts {
  std::uint64_t requests = 0, ok = 0, errors = 0;  ///< errors: anything but a 200
  std::string first_error;                         ///< the first non-200 answer (or "no answer")
};

/// `n` requests at once, target i = targets[i % targets.size()]; `headers` (e.g. the token's
/// "Cookie: ...\r\n") go with each request.
LoadCounts burst(unsigned short port, const std::vector<std::string>& targets, int n, const std::string& headers = "");

class Viewers {
 public:
  Viewers(unsigned short port, std::vector<std::string> targets, int n, double period_s,
          const std::string& headers = "");
  ~Viewers();  ///< stops and joins
  LoadCounts stop();

 private:
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable wake_;  ///< sleeping viewers wake at their next poll or on stop()
  std::vector<std::thread> threads_;
  std::vector<LoadCounts> counts_;
};

}  // namespace dlsweep::serve::testing
