#pragma once
// A training worker's background job (docs/runtime.md, "Background jobs"). Internal to
// lib/runtime.
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "burst/launch/child_process.h"
#include "burst/runtime/background.h"
#include "burst/runtime/train.h"
#include "burst/util/error.h"
#include "trace.h"

namespace burst::runtime::detail {

// This worker's background job: `burst background ... --idle --progress FILE` in a child
// process that dies with the worker (PR_SET_PDEATHSIG) and is stopped at the end.
class BackgroundChild {
 public:
  BackgroundChild(const TrainConfig& config, int rank, int local_rank) : directory_(make_directory()) {
    BURST_ASSERT(config.background_command != nullptr, "a background job needs its command (TrainConfig)");
    BackgroundJobConfig background;
    background.model = config.background_model;
    background.batch = config.background_batch;
    background.steps = 0;  // until killed
    background.idle = true;
    background.progress_file = directory_ + "/progress";
    background.seed = config.seed + 1000 + static_cast<uint64_t>(rank);
    background.device = config.device == job::ComputeDevice::Cuda ? fmt::format("cuda:{}", local_rank) : "cpu";
    create_background_progress_file(background.progress_file);
    child_.emplace(config.background_command(background));
    if (auto view = BackgroundProgressView::open(background.progress_file)) view_.emplace(std::move(*view));
    wait_for_first_step();
  }
  ~BackgroundChild() {
    child_.reset();  // killed and reaped before its directory goes
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }
  BackgroundChild(const BackgroundChild&) = delete;
  BackgroundChild& operator=(const BackgroundChild&) = delete;

  // The job loads libtorch and builds its model first (about a second): the foreground
  // starts once it runs, so that what is measured is the two side by side.
  void wait_for_first_step() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (steps() == 0 && std::chrono::steady_clock::now() < deadline) {
      if (child_->ended()) {
        throw UserError("the background job stopped before its first step (its own message is above)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  uint64_t samples() const { return view_ ? view_->progress().samples.load(std::memory_order_acquire) : 0; }
  uint64_t steps() const { return view_ ? view_->progress().steps.load(std::memory_order_acquire) : 0; }
  // The job's most recent steps (up to BackgroundProgress::kRing), as intervals of the
  // clock every process of the machine shares: for the trace.
  std::vector<std::pair<trace::Clock::time_point, trace::Clock::time_point>> recent_steps() const {
    std::vector<std::pair<trace::Clock::time_point, trace::Clock::time_point>> intervals;
    if (!view_) return intervals;
    const BackgroundProgress& progress = view_->progress();
    const uint64_t done = progress.steps.load(std::memory_order_acquire);
    for (uint64_t i = done > BackgroundProgress::kRing ? done - BackgroundProgress::kRing : 0; i < done; ++i) {
      const uint64_t slot = i % BackgroundProgress::kRing;
      intervals.emplace_back(trace::Clock::time_point(std::chrono::nanoseconds(progress.begin_ns[slot])),
                             trace::Clock::time_point(std::chrono::nanoseconds(progress.end_ns[slot])));
    }
    return intervals;
  }
  // Nanoseconds the child has run on a CPU (the kernel's schedstat).
  uint64_t cpu_ns() const {
    std::ifstream file(fmt::format("/proc/{}/schedstat", child_->pid()));
    uint64_t ns = 0;
    file >> ns;
    return ns;
  }

 private:
  std::string directory_;
  static std::string make_directory() {
    char pattern[] = "/tmp/burst-background-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) throw UserError("cannot create a directory for the background job");
    return pattern;
  }
  std::optional<launch::ChildProcess> child_;
  std::optional<BackgroundProgressView> view_;
};

}  // namespace burst::runtime::detail
