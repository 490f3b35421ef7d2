// cuda_optimizer.hpp — optim::Optimizer on device arenas: SGD (both momentum forms,
// Nesterov), Adam, AdamW and LARS as ONE fused multi-tensor launch per step
// (optim_kernels.cu), with the CPU optimizers' math term by term (SGD/Adam/AdamW are
// bit-identical to optim/; LARS's norms are summed in double in another order).
// Per-tensor scalar state (update counts, previous LR) is kept on the host exactly as
// optim::TensorOptimizer keeps it, so checkpoints are interchangeable with the CPU's.
// LARC and LAMB have no CUDA kernels yet: make_cuda_optimizer refuses them with the fix.
#pragma once

#include <memory>

#include <cuda_runtime_api.h>

#include "common/result.hpp"
#include "trainer/optim/optimizer.hpp"

namespace dlsweep::trainer::kernels::cuda {

Result<std::unique_ptr<optim::Optimizer>> make_cuda_optimizer(const optim::OptimizerSpec& spec,
                                                              models::ParameterSet& params, cudaStream_t stream);

}  // namespace dlsweep::trainer::kernels::cuda
