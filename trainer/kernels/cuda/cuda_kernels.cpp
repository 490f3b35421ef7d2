#include "trainer/kernels/cuda/cuda_kernels.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <cublasLt.h>
#include <cudnn.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "trainer/kernels/cuda/device_select.hpp"
#include "trainer/kernels/cuda/cublaslt_dense.hpp"
#include "trainer/kernels/cuda/cuda_data.hpp"
#include "trainer/kernels/cuda/cuda_memory.hpp"
#include "trainer/kernels/cuda/cuda_net.hpp"
#include "trainer/kernels/cuda/cuda_nhwc_net.hpp"
#include "trainer/kernels/cuda/nhwc_layout.hpp"
#include "trainer/kernels/cuda/cuda_optimizer.hpp"
#include "trainer/kernels/cuda/device_kernels.hpp"
#include "trainer/kernels/net_graph.hpp"

namespace dlsweep::trainer::kernels::cuda {

namespace {

// A dense layer bound to device buffers (kernels.hpp's DenseKernel contract).
class CudaDense final : public DenseKernel {
 public:
  CudaDense(std::unique_ptr<CublasLtDense> g, const DenseBinding& b, cudaStream_t s)
      : g_(std::move(g)), b_(b), s_(s) {}
  void forward() override {
    if (auto st = g_->forward(b_.x.data, b_.w.data, b_.b, b_.y.data, s_); !st)
      throw std::runtime_error(st.error().what);
  }
  void backward() override {
    if (auto st = g_->backward(b_.x.data, b_.w.data, b_.y.data, b_.dy.data, b_.dw.data, b_.db,
                               b_.dx.empty() ? nullptr : b_.dx.data, s_);
        !st)
      throw std::runtime_error(st.error().what);
  }
  std::string describe() const override { return "cublasLt"; }

 private:
  std::unique_ptr<CublasLtDense> g_;
  DenseBinding b_;
  cudaStream_t s_;
};

class CudaKernels final : public Kernels {
 public:
  CudaKernels(int device, std::string description) : device_(device), description_(std::move(description)) {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    if (cublasLtCreate(&lt_) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasLtCreate failed");
    if (const cudnnStatus_t st = cudnnCreate(&dnn_); st != CUDNN_STATUS_SUCCESS)
      throw std::runtime_error(std::string("cudnnCreate: ") + cudnnGetErrorString(st));
    cudnnSetStream(dnn_, stream_);
    memory_ = std::make_unique<CudaMemory>(device, stream_);
    check(cudaMalloc(reinterpret_cast<void**>(&totals_), sizeof(double)), "cudaMalloc");
    check(cudaMalloc(reinterpret_cast<void**>(&counts_), sizeof(long long)), "cudaMalloc");
    check(cudaMallocHost(reinterpret_cast<void**>(&result_host_), 2 * sizeof(double)), "cudaMallocHost");
  }
  ~CudaKernels() override {
    cudaStreamSynchronize(stream_);
    data_.reset();
    cudaFree(totals_);
    cudaFree(counts_);
    cudaFree(labels_);
    cudaFree(row_loss_);
    cudaFree(row_correct_);
    cudaFree(dense_workspace_);
    cudaFreeHost(result_host_);
    memory_.reset();
    cublasLtDestroy(lt_);
    cudnnDestroy(dnn_);
    cudaStreamDestroy(stream_);
  }

  std::string_view name() const override { return "cuda"; }
  Memory& memory() override { return *memory_; }
  std::string device_description() const override { return description_; }

  std::unique_ptr<DenseKernel> make_dense(Activation act, const DenseBinding& b) override {
    if (!dense_workspace_) check(cudaMalloc(&dense_workspace_, kWorkspace), "cudaMalloc (workspace)");
    DenseShape s{b.x.rows, b.x.cols, b.y.cols, b.x.ld, b.w.ld, b.y.ld, b.dx.empty() ? 0 : b.dx.ld};
    auto g = CublasLtDense::create(lt_, s, act == Activation::relu, false, dense_workspace_, kWorkspace);
    if (!g) throw std::runtime_error(g.error().what);
    return std::make_unique<CudaDense>(std::move(*g), b, stream_);
  }

  std::unique_ptr<Net> make_net(const NetGraph& graph, const NetOptions& options) override {
    // Which net (nhwc_layout.hpp's choose_cuda_net): fp32 NCHW, bf16/fp16 NHWC, tf32 where
    // faster; DLSWEEP_CUDA_NET=nchw|nhwc forces tf32's (benchmarks compare both in one run).
    const auto nodes = graph.nodes();
    const bool has_conv = std::any_of(nodes.begin(), nodes.end(), [](const NetNode& nd) {
      return nd.op == NetNode::Op::conv;
    });
    const bool low = options.precision == Precision::bf16 || options.precision == Precision::fp16;
    if (choose_cuda_net(low, options.precision == Precision::tf32, has_conv, options.batch,
                        std::getenv("DLSWEEP_CUDA_NET")) == CudaNetKind::nchw)
      return std::make_unique<CudaNet>(CudaHandles{stream_, lt_, dnn_}, graph, options, &inputs_);
    return std::make_unique<CudaNhwcNet>(CudaHandles{stream_, lt_, dnn_}, graph, options, &inputs_);
  }

  LossStats softmax_cross_entropy(MatrixView logits, const std::int32_t* labels, float grad_scale,
                                  MatrixView dlogits) override {
    const std::int64_t rows = logits.rows;
    if (rows > capacity_) {
      cudaStreamSynchronize(stream_);
      cudaFree(labels_);
      cudaFree(row_loss_);
      cudaFree(row_correct_);
      check(cudaMalloc(reinterpret_cast<void**>(&labels_), rows * sizeof(std::int32_t)), "cudaMalloc (labels)");
      check(cudaMalloc(reinterpret_cast<void**>(&row_loss_), rows * sizeof(double)), "cudaMalloc (loss)");
      check(cudaMalloc(reinterpret_cast<void**>(&row_correct_), rows * sizeof(std::int32_t)), "cudaMalloc (loss)");
      capacity_ = rows;
    }
    const std::int32_t* labels_dev = labels_;
    if (data_ && data_->owns(labels)) labels_dev = labels;  // gathered on the device
    else
      check(cudaMemcpyAsync(labels_, labels, rows * sizeof(std::int32_t), cudaMemcpyHostToDevice, stream_), "labels");
    check(softmax_xent(logits.data, rows, logits.cols, logits.ld, labels_dev, grad_scale,
                       dlogits.empty() ? nullptr : dlogits.data, dlogits.empty() ? 0 : dlogits.ld, row_loss_,
                       row_correct_, totals_, counts_, stream_),
          "softmax_xent");
    check(cudaMemcpyAsync(result_host_, totals_, sizeof(double), cudaMemcpyDeviceToHost, stream_), "loss");
    check(cudaMemcpyAsync(result_host_ + 1, counts_, sizeof(long long), cudaMemcpyDeviceToHost, stream_), "loss");
    // The loss is the one value the loop needs on the host every step (divergence, records).
    check(cudaStreamSynchronize(stream_), "loss");
    long long correct = 0;
    std::memcpy(&correct, result_host_ + 1, sizeof(correct));
    return {result_host_[0], static_cast<std::int64_t>(correct)};
  }

  DeviceData* attach_data(std::span<const data::Dataset* const> datasets) override {
    data_ = make_cuda_data(stream_, inputs_, datasets);
    return data_.get();
  }

  Result<std::unique_ptr<optim::Optimizer>> make_optimizer(const optim::OptimizerSpec& spec,
                                                           models::ParameterSet& params) override {
    return make_cuda_optimizer(spec, params, stream_);
  }

 private:
  static constexpr std::size_t kWorkspace = std::size_t{32} << 20;
  int device_;
  std::string description_;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  cudnnHandle_t dnn_ = nullptr;
  std::unique_ptr<CudaMemory> memory_;
  NetInputs inputs_;
  std::unique_ptr<CudaData> data_;
  void* dense_workspace_ = nullptr;
  double* totals_ = nullptr;
  long long* counts_ = nullptr;
  double* result_host_ = nullptr;
  std::int32_t* labels_ = nullptr;
  double* row_loss_ = nullptr;
  std::int32_t* row_correct_ = nullptr;
  std::int64_t capacity_ = 0;
};

}  // namespace

Result<std::unique_ptr<Kernels>> make_cuda_kernels() {
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    const std::string why = e != cudaSuccess ? fmt::format("{} ({})", cudaGetErrorName(e), cudaGetErrorString(e))
                                             : std::string("no CUDA device");
    (void)cudaGetLastError();
    return fail_as(ErrorKind::resources, "no GPU answers for device cuda: " + why, "device",
                   "run on a node with an NVIDIA GPU and its driver (Slurm: gpus_per_task), or use device: auto "
                   "(the CPU where there is no GPU) or device: cpu");
  }
  auto lr = local_rank([](const char* k) { return std::getenv(k); });
  if (!lr) return std::unexpected(lr.error());
  auto dev = select_device(lr->rank, count);
  // More ranks than GPUs on the node (comm: mpi tests of 1 vs 2 ranks on one GPU): ranks share.
  const int device = dev ? *dev : lr->rank % count;
  cudaDeviceProp p{};
  if (const cudaError_t e = cudaGetDeviceProperties(&p, device); e != cudaSuccess)
    return fail_as(ErrorKind::resources, fmt::format("cannot query GPU {}: {}", device, cudaGetErrorString(e)),
                   "device", "check the GPU with nvidia-smi");
  int driver = 0;
  cudaDriverGetVersion(&driver);
  std::string desc = fmt::format("cuda:{} {} (sm_{}{}, {:.1f} GiB, driver CUDA {}.{}{})", device, p.name, p.major,
                                 p.minor, static_cast<double>(p.totalGlobalMem) / (1 << 30), driver / 1000,
                                 driver % 1000 / 10, dev ? "" : fmt::format(", shared by local rank {}", lr->rank));
  try {
    return std::unique_ptr<Kernels>(std::make_unique<CudaKernels>(device, std::move(desc)));
  } catch (const std::exception& e) {
    return fail_as(ErrorKind::resources, std::string("cannot start the CUDA backend: ") + e.what(), "device",
                   "check the GPU with nvidia-smi");
  }
}

}  // namespace dlsweep::trainer::kernels::cuda
