#pragma once
// Where a rank computes, and how a step's GPU work is ordered and timed (docs/runtime.md,
// "GPUs"). Includes libtorch. Without a CUDA build (cmake/BurstTorch.cmake) everything here
// still compiles: "cpu" works, "cuda" is refused.
#include <chrono>
#include <memory>
#include <string>

#include <torch/types.h>

namespace burst::layers {

// Whether this build can run on a GPU: CUDA and c10d's NCCL compiled in.
bool cuda_built();
bool nccl_built();

// Checks that `device` ("cpu" or "cuda") can host `local_ranks` ranks on this machine:
// UserError naming what is missing (a build without CUDA, no GPU, fewer GPUs than ranks).
void check_device(const std::string& device, int local_ranks);

// The device of the rank with this index among the ranks on its machine: the CPU, or
// cuda:LOCAL_RANK. Checks as check_device does (for local_rank + 1 ranks).
torch::Device rank_device(const std::string& device, int local_rank);

// The name CUDA reports for a GPU ("NVIDIA H200"); "cpu" for the CPU.
std::string gpu_name(torch::Device device);

// The GPU stream a step's kernels go to, current while this object lives (a no-op on the
// CPU). High priority for a training run's steps, low for a background job's: the GPU's
// scheduler then starts the foreground's waiting kernels before the background's
// (DeepPool's multiplexing; docs/runtime.md says what else keeps the background out of the
// foreground's way).
class StepStream {
 public:
  StepStream(torch::Device device, bool high_priority);
  ~StepStream();
  StepStream(const StepStream&) = delete;
  StepStream& operator=(const StepStream&) = delete;

 private:
  struct Guard;
  std::unique_ptr<Guard> guard_;
};

// Times a span of a device's work: on a GPU with CUDA events recorded on the current stream
// (what the kernels took, not when the host queued them); on the CPU with steady_clock.
class DeviceTimer {
 public:
  explicit DeviceTimer(torch::Device device);  // the span starts now (on the current stream)
  ~DeviceTimer();
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;
  // Ends the span, waits until the device has run everything queued before it, and returns
  // its length in milliseconds. Call once.
  double stop_ms();
  // The host's time when the span started.
  std::chrono::steady_clock::time_point started() const { return host_start_; }

 private:
  struct Events;
  std::unique_ptr<Events> events_;
  std::chrono::steady_clock::time_point host_start_;
};

}  // namespace burst::layers
