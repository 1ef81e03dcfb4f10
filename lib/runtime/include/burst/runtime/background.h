#pragma once
// Background training jobs (docs/runtime.md, "Background jobs"): an independent model
// trained on synthetic data at its own per-device batch, in its own process, at the lowest
// CPU scheduling class (SCHED_IDLE), so it runs only when the foreground leaves a core
// idle and never touches the foreground's memory, random numbers or results (docs/architecture.md,
// invariant 4). `burst background` runs one alone; `burst train --background` gives every
// worker one. Includes no libtorch (the plugin boundary passes these plain structs).
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "burst/job/train_config.h"

namespace burst::runtime {

using job::BackgroundJobConfig;  // lib/job: the job file carries it


// What a background job shares with its worker through the mapped progress file. Each
// step's interval goes into a ring of the last kRing steps (steady clock nanoseconds, the
// clock every process of the machine shares).
struct BackgroundProgress {
  static constexpr uint64_t kRing = 4096;
  std::atomic<uint64_t> steps{0};
  std::atomic<uint64_t> samples{0};
  uint64_t begin_ns[kRing];
  uint64_t end_ns[kRing];
};

// Trains; prints the throughput when it stops after `steps`. Throws UserError for bad input.
void run_background_job(const BackgroundJobConfig& config);

// The worker side: a progress file mapped for reading (nullopt if it cannot be mapped).
class BackgroundProgressView {
 public:
  static std::optional<BackgroundProgressView> open(const std::string& path);
  BackgroundProgressView(BackgroundProgressView&& other) noexcept;
  BackgroundProgressView(const BackgroundProgressView&) = delete;
  BackgroundProgressView& operator=(BackgroundProgressView&&) = delete;
  ~BackgroundProgressView();
  const BackgroundProgress& progress() const { return *progress_; }

 private:
  explicit BackgroundProgressView(BackgroundProgress* progress) : progress_(progress) {}
  BackgroundProgress* progress_ = nullptr;
};

// Creates (or resets) a progress file of the right size; UserError when it cannot.
void create_background_progress_file(const std::string& path);

}  // namespace burst::runtime
