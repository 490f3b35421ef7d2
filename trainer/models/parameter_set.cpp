#include "trainer/models/parameter_set.hpp"

#include <stdexcept>
#include <vector>

namespace dlsweep::trainer::models {

namespace {
constexpr std::int64_t kAlignFloats = static_cast<std::int64_t>(kernels::kBufferAlignment / sizeof(float));
}

std::size_t ParameterSet::add(std::string name, std::int64_t rows, std::int64_t cols, bool is_bias) {
  if (finalized_) throw std::logic_error("ParameterSet::add after finalize");
  ParamTensor t;
  t.name = std::move(name);
  t.rows = rows;
  t.cols = cols;
  t.ld = kernels::padded_ld(cols);
  t.is_bias = is_bias;
  t.offset = arena_size_;
  arena_size_ += (t.span() + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
  tensors_.push_back(std::move(t));
  return tensors_.size() - 1;
}

std::size_t ParameterSet::add_state(std::string name, std::int64_t count, float initial) {
  if (finalized_) throw std::logic_error("ParameterSet::add_state after finalize");
  states_.push_back({std::move(name), state_size_, count, initial});
  state_size_ += (count + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
  return states_.size() - 1;
}

void ParameterSet::finalize(kernels::Memory& memory) {
  if (finalized_) return;
  memory_ = &memory;
  values_ = memory.allocate(arena_size_);
  grads_ = memory.allocate(arena_size_);
  state_ = memory.allocate(state_size_);
  std::vector<float> init(static_cast<std::size_t>(state_size_), 0.0f);
  for (const auto& st : states_)
    for (std::int64_t i = 0; i < st.count; ++i) init[static_cast<std::size_t>(st.offset + i)] = st.initial;
  if (state_size_ > 0) memory.upload(state_.data(), init.data(), state_size_);
  finalized_ = true;
}

kernels::MatrixView ParameterSet::value(std::size_t i) const {
  const auto& t = tensors_.at(i);
  return kernels::MatrixView{values_.data() + t.offset, t.rows, t.cols, t.ld};
}

kernels::MatrixView ParameterSet::grad(std::size_t i) const {
  const auto& t = tensors_.at(i);
  return kernels::MatrixView{grads_.data() + t.offset, t.rows, t.cols, t.ld};
}

std::int64_t ParameterSet::count() const {
  std::int64_t n = 0;
  for (const auto& t : tensors_) n += t.count();
  return n;
}

}  // namespace dlsweep::trainer::models
