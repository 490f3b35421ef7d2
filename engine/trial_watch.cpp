#include "engine/trial_watch.hpp"

#include <sys/inotify.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "common/protocol.hpp"

namespace dlsweep::orch {

bool inotify_wanted() {
  const char* v = std::getenv("DLSWEEP_NO_INOTIFY");
  return v == nullptr || *v == '\0' || std::strcmp(v, "0") == 0;
}

TrialWatch::TrialWatch(boost::asio::io_context& io, Handler handler, bool enabled)
    : sd_(io), handler_(std::move(handler)) {
  if (!enabled) return;
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return;  // no inotify (limits, old kernel): the tick reads alone
  boost::system::error_code ec;
  sd_.assign(fd, ec);
  if (ec) ::close(fd);
}

TrialWatch::~TrialWatch() { close(); }

void TrialWatch::close() {
  boost::system::error_code ec;
  if (sd_.is_open()) sd_.close(ec);
  by_wd_.clear();
  by_trial_.clear();
}

void TrialWatch::add(std::int64_t trial_id, const std::filesystem::path& dir) {
  if (!sd_.is_open()) return;
  remove(trial_id);
  // The directory, not the file: metrics.jsonl may not exist yet, or be replaced.
  int wd = ::inotify_add_watch(sd_.native_handle(), dir.c_str(), IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE);
  if (wd < 0) return;  // out of watches: this trial is read on ticks
  by_wd_[wd] = trial_id;
  by_trial_[trial_id] = wd;
  if (!reading_) read();
}

void TrialWatch::remove(std::int64_t trial_id) {
  auto it = by_trial_.find(trial_id);
  if (it == by_trial_.end()) return;
  if (sd_.is_open()) ::inotify_rm_watch(sd_.native_handle(), it->second);
  by_wd_.erase(it->second);
  by_trial_.erase(it);
}

void TrialWatch::read() {
  if (!sd_.is_open()) return;
  reading_ = true;
  sd_.async_read_some(boost::asio::buffer(buf_), [this](const boost::system::error_code& ec, std::size_t n) {
    reading_ = false;
    if (ec) return;  // closed (the sweep is over) or failed: ticks go on reading
    std::set<std::int64_t> changed;
    for (std::size_t off = 0; off + sizeof(inotify_event) <= n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf_ + off);
      off += sizeof(inotify_event) + ev->len;
      if (ev->len == 0 || (std::strcmp(ev->name, protocol::kMetricsFile) != 0 &&
                           std::strcmp(ev->name, protocol::kSuggestFile) != 0))
        continue;
      if (auto it = by_wd_.find(ev->wd); it != by_wd_.end()) changed.insert(it->second);
    }
    if (!by_wd_.empty()) read();
    if (!changed.empty()) handler_(changed);
  });
}

}  // namespace dlsweep::orch
