// trainer_throughput_cuda.hpp — bench_trainer_throughput --device cuda (trainer_throughput_cuda.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

/// Training steps of each model and batch on the GPU backend (fp32 and tf32), next to
/// PyTorch's on the same GPU in the same run; prints the table and the bars. Returns the exit
/// status (77 without a usable GPU).
int run_cuda_throughput(const std::vector<std::string>& models, const std::vector<std::int64_t>& batches,
                        double seconds, const std::string& pytorch_script);
