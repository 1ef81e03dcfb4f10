#include "burst/layers/device.h"

#include <fmt/format.h>

#include "burst/util/error.h"

#if BURST_CUDA_BUILT
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#endif

namespace burst::layers {

bool cuda_built() { return BURST_CUDA_BUILT != 0; }
bool nccl_built() { return BURST_NCCL_BUILT != 0; }

void check_device(const std::string& device, int local_ranks) {
  if (device == "cpu") return;
  if (device != "cuda") throw UserError(fmt::format("--device must be cpu or cuda, not '{}'", device));
  if (!cuda_built() || !nccl_built()) {
    throw UserError(fmt::format("--device cuda: this burst is built without {} (burst --version says so; build "
                                "against a CUDA libtorch with the CUDA toolkit present, or -DBURST_CUDA=ON to insist)",
                                cuda_built() ? "NCCL" : "CUDA"));
  }
#if BURST_CUDA_BUILT
  const auto gpus = static_cast<int>(torch::cuda::device_count());
  if (gpus == 0) throw UserError("--device cuda: no CUDA GPU on this machine (torch sees 0 devices)");
  if (local_ranks > gpus) {
    throw UserError(fmt::format("--device cuda: {} ranks on this machine but {} GPU{}: one rank a GPU", local_ranks,
                                gpus, gpus == 1 ? "" : "s"));
  }
#else
  (void)local_ranks;  // refused above: no GPU to count without CUDA
#endif
}

torch::Device rank_device(const std::string& device, int local_rank) {
  check_device(device, local_rank + 1);
  if (device == "cpu") return torch::kCPU;
  return {torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank)};
}

std::string gpu_name(torch::Device device) {
  if (!device.is_cuda()) return "cpu";
#if BURST_CUDA_BUILT
  return at::cuda::getDeviceProperties(device.index())->name;
#else
  BURST_ASSERT(false, "a CUDA device in a build without CUDA");
  return {};
#endif
}

#if BURST_CUDA_BUILT
struct StepStream::Guard {
  explicit Guard(const c10::cuda::CUDAStream& stream) : current(stream) {}
  c10::cuda::CUDAStreamGuard current;
};

StepStream::StepStream(torch::Device device, bool high_priority) {
  if (!device.is_cuda()) return;
  guard_ = std::make_unique<Guard>(c10::cuda::getStreamFromPool(high_priority, device.index()));
}

struct DeviceTimer::Events {
  c10::cuda::CUDAEvent start{cudaEventDefault};  // timing on (the default disables it)
  c10::cuda::CUDAEvent end{cudaEventDefault};
};

DeviceTimer::DeviceTimer(torch::Device device) : host_start_(std::chrono::steady_clock::now()) {
  if (!device.is_cuda()) return;
  events_ = std::make_unique<Events>();
  events_->start.record(c10::cuda::getCurrentCUDAStream(device.index()));
}
#else
struct StepStream::Guard {};
StepStream::StepStream(torch::Device /*device*/, bool /*high_priority*/) {}

struct DeviceTimer::Events {};
DeviceTimer::DeviceTimer(torch::Device /*device*/) : host_start_(std::chrono::steady_clock::now()) {}
#endif

double DeviceTimer::stop_ms() {
#if BURST_CUDA_BUILT
  if (events_) {
    events_->end.record(c10::cuda::getCurrentCUDAStream(events_->start.device_index()));
    events_->end.synchronize();
    return static_cast<double>(events_->start.elapsed_time(events_->end));
  }
#endif
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host_start_).count();
}

StepStream::~StepStream() = default;
DeviceTimer::~DeviceTimer() = default;

}  // namespace burst::layers
