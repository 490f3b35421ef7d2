#include "trainer/grad_sync.hpp"

#include <chrono>


namespace dlsweep::trainer {

namespace {
std::vector<std::int64_t> offsets_of(const models::ParameterSet& params) {
  std::vector<std::int64_t> o;
  for (const auto& t : params.tensors()) o.push_back(t.offset);
  return o;
}
}  // namespace

GradSync::GradSync(comm::Communicator& comm, const models::ParameterSet& params, double bucket_mb)
    : comm_(comm),
      params_(params),
      plan_(comm::plan_buckets(offsets_of(params), params.arena_size(), comm::bucket_cap_floats(bucket_mb))),
      tracker_(plan_) {
  launch_.reserve(plan_.buckets.size());
  // Device arenas (a GPU with comm: mpi) are reduced through a host copy of the gradient.
  if (!params.memory().host_visible()) staging_.resize(static_cast<std::size_t>(params.arena_size()));
}

void GradSync::begin(bool measure) {
  measure_ = measure;
  local_norm_sq_ = 0;
  error_.reset();
  tracker_.reset();
}

Status GradSync::start(const comm::BucketSpan& b) {
  kernels::Memory& mem = params_.memory();
  float* data = params_.grads() + b.offset;
  if (measure_) local_norm_sq_ += mem.sum_squares(data, b.size);
  if (!staging_.empty()) {
    float* host = staging_.data() + b.offset;
    mem.download(host, data, b.size);
    data = host;
  }
  return comm_.start_allreduce_sum(std::span<float>(data, static_cast<std::size_t>(b.size)));
}

void GradSync::start_launched() {
  for (std::size_t b : launch_)
    if (!error_)
      if (auto s = start(plan_.buckets[b]); !s) error_ = s.error();
  launch_.clear();
}

void GradSync::ready(std::span<const std::size_t> tensors) {
  tracker_.ready(tensors, launch_);
  start_launched();
  comm_.progress();
}

Result<double> GradSync::finish() {
  // Buckets in the order backward would have completed them (last tensors first).
  tracker_.flush(launch_);
  start_launched();
  const auto t0 = std::chrono::steady_clock::now();
  auto waited = comm_.wait_all();
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (error_) return std::unexpected(*error_);
  if (!waited) return std::unexpected(waited.error());
  if (!staging_.empty()) params_.memory().upload(params_.grads(), staging_.data(), params_.arena_size());
  return dt;
}

}  // namespace dlsweep::trainer
