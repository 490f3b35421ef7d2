// trial_watch.hpp — new records are read the moment they are written: an inotify watch on
// each live trial's directory wakes the engine when metrics.jsonl changes, so the pruner
// decides on a report as it arrives instead of at the next tick (the tick stays, as the
// fallback where inotify sees nothing: NFS/Lustre writes from another node, or no inotify).
//
// One inotify descriptor, read through Boost.Asio on the engine's event loop. A burst of
// writes to one file becomes one wake-up per read of the descriptor.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "common/asio.hpp"

namespace dlsweep::orch {

class TrialWatch {
 public:
  /// Called with the trial ids whose metrics.jsonl or suggest.jsonl changed since the last call.
  using Handler = std::function<void(const std::set<std::int64_t>& trial_ids)>;

  /// `enabled` false (or inotify unavailable): add() does nothing and only ticks read.
  TrialWatch(boost::asio::io_context& io, Handler handler, bool enabled = true);
  ~TrialWatch();
  TrialWatch(const TrialWatch&) = delete;
  TrialWatch& operator=(const TrialWatch&) = delete;

  /// Watches `dir` (the trial directory) for writes to its metrics file.
  void add(std::int64_t trial_id, const std::filesystem::path& dir);
  void remove(std::int64_t trial_id);
  /// Stops reading (the event loop can end).
  void close();
  bool active() const { return sd_.is_open(); }

 private:
  void read();

  boost::asio::posix::stream_descriptor sd_;
  Handler handler_;
  std::map<int, std::int64_t> by_wd_;
  std::map<std::int64_t, int> by_trial_;
  alignas(8) char buf_[8192];
  bool reading_ = false;
};

/// False when DLSWEEP_NO_INOTIFY is set (benchmarks compare against the tick alone).
bool inotify_wanted();

}  // namespace dlsweep::orch
