#include "trainer/grad_sync.hpp"

#include <chrono>

#include "trainer/optim/tensor_math.hpp"

namespace dlsweep::trainer {

GradSync::GradSync(comm::Communicator& comm, const models::ParameterSet& params, double bucket_mb)
    : comm_(comm), params_(params), bucket_of_(params.tensors().size(), 0) {
  const auto cap = static_cast<std::int64_t>(bucket_mb * 1024 * 1024 / sizeof(float));
  const auto tensors = params.tensors();
  // From the last tensor backward; a bucket closes once it reaches the cap.
  std::int64_t end = params.arena_size();
  Bucket cur;
  for (std::size_t i = tensors.size(); i-- > 0;) {
    cur.offset = tensors[i].offset;
    cur.size = end - cur.offset;
    ++cur.tensors;
    bucket_of_[i] = buckets_.size();
    if (cur.size >= cap || i == 0) {
      buckets_.push_back(cur);
      end = cur.offset;
      cur = Bucket{};
    }
  }
}

void GradSync::begin(bool measure) {
  measure_ = measure;
  local_norm_sq_ = 0;
  error_.reset();
  for (auto& b : buckets_) {
    b.seen = 0;
    b.started = false;
  }
}

Status GradSync::start(Bucket& b) {
  b.started = true;
  float* data = params_.grads() + b.offset;
  if (measure_) local_norm_sq_ += optim::sum_squares(data, b.size);
  return comm_.start_allreduce_sum(std::span<float>(data, static_cast<std::size_t>(b.size)));
}

void GradSync::ready(std::span<const std::size_t> tensors) {
  for (std::size_t i : tensors) {
    Bucket& b = buckets_[bucket_of_[i]];
    if (++b.seen == b.tensors && !b.started && !error_)
      if (auto s = start(b); !s) error_ = s.error();
  }
  comm_.progress();
}

Result<double> GradSync::finish() {
  // Buckets in the order backward would have completed them (last tensors first).
  for (auto& b : buckets_)
    if (!b.started && !error_)
      if (auto s = start(b); !s) error_ = s.error();
  const auto t0 = std::chrono::steady_clock::now();
  auto waited = comm_.wait_all();
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (error_) return std::unexpected(*error_);
  if (!waited) return std::unexpected(waited.error());
  return dt;
}

}  // namespace dlsweep::trainer
