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
  launched_.reserve(plan_.buckets.size());
  kernels::Memory& mem = params.memory();
  if (mem.host_visible()) {
    path_ = Path::host;
  } else if (comm.reduces_device_buffers() && mem.native_stream()) {
    path_ = Path::device;
    stream_ = mem.native_stream();
  } else {
    path_ = Path::staged;
    staging_ = mem.allocate_staging(params.arena_size());
  }
}

const char* GradSync::path_name(Path p) {
  switch (p) {
    case Path::host: return "host";
    case Path::device: return "device";
    case Path::staged: return "staged (pinned host)";
  }
  return "?";
}

void GradSync::begin(bool measure) {
  measure_ = measure;
  local_norm_sq_ = 0;
  error_.reset();
  tracker_.reset();
  launched_.clear();
}

Status GradSync::start(const comm::BucketSpan& b) {
  kernels::Memory& mem = params_.memory();
  float* data = params_.grads() + b.offset;
  if (measure_) local_norm_sq_ += mem.sum_squares(data, b.size);
  const std::span<float> span(data, static_cast<std::size_t>(b.size));
  switch (path_) {
    case Path::host: return comm_.start_allreduce_sum(span);
    case Path::device: return comm_.start_device_allreduce_sum(span, stream_);
    case Path::staged: {
      float* host = staging_.get() + b.offset;
      mem.download(host, data, b.size);
      staged_bytes_ += static_cast<std::uint64_t>(b.size) * sizeof(float);
      return comm_.start_allreduce_sum(std::span<float>(host, span.size()));
    }
  }
  return {};
}

void GradSync::start_launched() {
  for (std::size_t b : launch_)
    if (!error_) {
      launched_.push_back(b);
      if (auto s = start(plan_.buckets[b]); !s) error_ = s.error();
    }
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
  // Device path: the backend's stream waits for the sums (its next work, the optimizer, runs
  // after them); the host goes on at once.
  auto waited = path_ == Path::device ? comm_.device_wait_all(stream_) : comm_.wait_all();
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (error_) return std::unexpected(*error_);
  if (!waited) return std::unexpected(waited.error());
  if (path_ == Path::staged) {
    params_.memory().upload(params_.grads(), staging_.get(), params_.arena_size());
    staged_bytes_ += static_cast<std::uint64_t>(params_.arena_size()) * sizeof(float);
  }
  return dt;
}

}  // namespace dlsweep::trainer
