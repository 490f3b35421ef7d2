// onednn_exec.hpp — one oneDNN primitive with its bound arguments, built once and executed
// every step (the dense kernels, fp32 and bf16, share it), the attribute that gives each
// primitive a scratchpad of its own, and the descriptors of strided matrices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "trainer/kernels/matrix.hpp"

namespace dlsweep::trainer::kernels {

struct OnednnExec {
  dnnl::primitive prim;
  std::vector<dnnl::memory> keep;  ///< owners of the handles in args
  std::vector<dnnl_exec_arg_t> args;
  AlignedBuffer scratch;
  std::string impl;

  void bind(int arg, const dnnl::memory::desc& md, const dnnl::engine& eng, const void* ptr) {
    keep.emplace_back(md, eng, const_cast<void*>(ptr));
    args.push_back({arg, keep.back().get()});
  }
  /// Creates the primitive and its user scratchpad from a primitive descriptor.
  template <class Prim, class PD>
  void create(const PD& pd, const dnnl::engine& eng) {
    prim = Prim(pd);
    impl = pd.impl_info_str();
    dnnl::memory::desc sp = pd.scratchpad_desc();
    if (sp.get_size() > 0) {
      scratch = AlignedBuffer(static_cast<std::int64_t>(sp.get_size() / sizeof(float) + 1));
      bind(DNNL_ARG_SCRATCHPAD, sp, eng, scratch.data());
    }
  }
};

/// [rows, cols] row-major with stride ld.
inline dnnl::memory::desc row_major(std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                    dnnl::memory::data_type type = dnnl::memory::data_type::f32) {
  return dnnl::memory::desc({rows, cols}, type, dnnl::memory::dims{ld, 1});
}
/// The transpose of a stored row-major [cols, rows] matrix with stride ld, seen as [rows, cols].
inline dnnl::memory::desc transposed(std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                     dnnl::memory::data_type type = dnnl::memory::data_type::f32) {
  return dnnl::memory::desc({rows, cols}, type, dnnl::memory::dims{1, ld});
}

/// A primitive attribute with a user scratchpad (OnednnExec owns it).
inline dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

}  // namespace dlsweep::trainer::kernels
