// backend_capacity.cpp — SlurmBackend and the site's submission limits (slurm/site_limit.hpp):
// a refusal for a limit puts the array back and teaches the limit; flush() sends only what
// the site takes (the planning is in backend.cpp); the note the engine shows once.
#include "schedulers/slurm/backend.hpp"
#include "schedulers/slurm/backend_internal.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

namespace dlsweep::sched {

using namespace slurm;

double SlurmBackend::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

std::size_t SlurmBackend::in_slurm() const {
  std::size_t n = tracker_.live();
  for (const auto& b : batches_) n += b->ids.size();
  return n;
}

std::string SlurmBackend::capacity_note() const {
  if (!capacity_.limit() || !capacity_.exact()) return {};  // said once it is learned
  return capacity_line(*capacity_.limit(), capacity_.allowed());
}

void SlurmBackend::arm_capacity_retry() {
  // Room comes back when a job of the study ends (the poll flushes then); with none in
  // Slurm, only time can make room (the user's other jobs ending): try again then.
  // A hold (a MaxJobCount refusal while the controller still holds finished jobs) ends
  // sooner than the probe armed while the study filled the limit: re-arm for the earlier.
  auto at = capacity_.probe_at(now_s());
  if (!at || (capacity_timer_ && capacity_retry_at_ <= *at + 0.01)) return;
  cancel_capacity_retry();
  capacity_retry_at_ = *at;
  auto timer = std::make_shared<boost::asio::steady_timer>(io_);
  capacity_timer_ = timer;
  timer->expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(std::max(0.05, *at - now_s()))));
  timer->async_wait([this, timer, alive = std::weak_ptr<int>(alive_)](const boost::system::error_code& ec) {
    if (ec || alive.expired() || capacity_timer_ != timer) return;
    capacity_timer_.reset();
    flush();
  });
}

void SlurmBackend::cancel_capacity_retry() {
  if (!capacity_timer_) return;
  capacity_timer_->cancel();
  capacity_timer_.reset();
}

void SlurmBackend::on_capacity_refusal(Batch& batch, const SiteLimit& limit) {
  stats_.capacity_refusals++;
  const std::size_t tried = batch.ids.size();
  const std::size_t before = in_slurm() - tried;  // the batch itself is still in batches_
  const bool first = !capacity_.limit().has_value();
  if (limit.kind == LimitKind::array_size) {
    max_array_ = std::max<std::size_t>(1, tried / 2);
    if (tried <= 1) capacity_.refused(limit, before, tried, now_s());
  } else {
    capacity_.refused(limit, before, tried, now_s());
  }
  // Said once, at the first refusal; what is learned after it, the engine shows
  // (capacity_note) once it is exact.
  if (first)
    log(fmt::format("sbatch refused {} job(s) for a site limit ({}); they wait for room: {}", tried, limit.reason,
                    capacity_line(limit, std::nullopt)));
  // Back to the front of the queue, in order; a job cancelled meanwhile ends here.
  std::vector<std::string> back;
  for (const auto& id : batch.ids) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    if (it->second->cancel_requested) {
      emit(*it->second, JobEventKind::cancelled, "cancelled before it was submitted");
      jobs_.erase(it);
      continue;
    }
    it->second->in_batch = false;
    back.push_back(id);
  }
  waiting_.insert(waiting_.begin(), back.begin(), back.end());
  batches_.pop_front();
  // The batches planned after it were sized with room that is not there: replan them too.
  while (!batches_.empty()) {
    auto& b = batches_.back();
    for (const auto& id : b->ids)
      if (auto it = jobs_.find(id); it != jobs_.end()) it->second->in_batch = false;
    waiting_.insert(waiting_.begin() + static_cast<std::ptrdiff_t>(back.size()), b->ids.begin(), b->ids.end());
    batches_.pop_back();
  }
  schedule_flush();
}

}  // namespace dlsweep::sched
