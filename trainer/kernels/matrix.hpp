// matrix.hpp — the memory contract every kernel backend works on: row-major float matrices
// with a row stride (`ld`) that may exceed the column count, and the aligned buffers behind them.
//
// Invariants:
//  - a MatrixView never owns memory; rows*ld floats starting at `data` are addressable.
//  - padding columns [cols, ld) of every buffer the trainer allocates are zero and stay zero:
//    kernels may read them (treating the row as `ld` wide, e.g. elementwise passes) but only
//    ever write zeros into them. This lets optimizers and reductions run over whole padded
//    buffers with plain contiguous loops.
//  - leading dimensions come from padded_ld(): a row of a multiple-of-128 floats is padded by
//    one cache line, because power-of-two strides map every row onto the same cache sets and
//    halve GEMM throughput on the CPUs we measured (see bench/trainer_throughput.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sys/mman.h>
#include <utility>

namespace dlsweep::trainer::kernels {

/// A row-major view [rows, cols] with row stride ld >= cols. Does not own memory.
struct MatrixView {
  float* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t ld = 0;

  float& at(std::int64_t r, std::int64_t c) const { return data[r * ld + c]; }
  float* row(std::int64_t r) const { return data + r * ld; }
  bool empty() const { return data == nullptr; }
  /// Number of floats the view spans including row padding.
  std::int64_t span() const { return rows * ld; }
};

/// The row stride the trainer uses for rows of `cols` floats.
constexpr std::int64_t padded_ld(std::int64_t cols) {
  return (cols >= 128 && cols % 128 == 0) ? cols + 16 : cols;
}

/// Alignment of every buffer (one cache line, and a full AVX-512 vector).
inline constexpr std::size_t kBufferAlignment = 64;
/// Buffers of at least kHugePageMin bytes are aligned to (and advised onto) huge pages.
inline constexpr std::size_t kHugePage = std::size_t{2} << 20;
inline constexpr std::size_t kHugePageMin = std::size_t{1} << 20;

/// A zero-initialised, 64-byte aligned float array. Move-only.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::int64_t count) : size_(count) {
    if (count <= 0) return;
    std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
    // Large buffers (parameter arenas, big activations) go on 2 MiB pages where the kernel
    // allows it: the optimizer streams through them every step, and TLB misses on 4 KiB
    // pages are a measurable part of that memory-bound pass.
    const std::size_t align = bytes >= kHugePageMin ? kHugePage : kBufferAlignment;
    bytes = (bytes + align - 1) / align * align;
    data_ = static_cast<float*>(std::aligned_alloc(align, bytes));
    if (!data_) throw std::bad_alloc();
    if (align == kHugePage) ::madvise(data_, bytes, MADV_HUGEPAGE);  // a hint: failure is fine
    std::memset(data_, 0, bytes);
  }
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
      std::free(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { std::free(data_); }

  float* data() const { return data_; }
  std::int64_t size() const { return size_; }
  /// A [rows, cols] view with stride ld starting at `offset` floats.
  MatrixView view(std::int64_t rows, std::int64_t cols, std::int64_t ld, std::int64_t offset = 0) const {
    return MatrixView{data_ + offset, rows, cols, ld};
  }

 private:
  float* data_ = nullptr;
  std::int64_t size_ = 0;
};

/// A buffer holding one [rows, cols] matrix with the trainer's padded stride.
inline AlignedBuffer make_matrix_buffer(std::int64_t rows, std::int64_t cols) {
  return AlignedBuffer(rows * padded_ld(cols));
}

}  // namespace dlsweep::trainer::kernels
