#include "progress.h"

#include <fmt/format.h>

namespace burst::profiler {

namespace {
constexpr size_t kBarWidth = 24;
}

ProgressLine::ProgressLine(std::ostream* out, bool redraw, std::string label, size_t total)
    : out_(out), redraw_(redraw), label_(std::move(label)), total_(total) {}

std::string ProgressLine::text(size_t done, Seconds elapsed) const {
  const size_t filled = total_ == 0 ? kBarWidth : done * kBarWidth / total_;
  return fmt::format("profiling {} [{}{}] {}/{} signatures, {:.1f} s", label_,
                     std::string(filled, '#'), std::string(kBarWidth - filled, '.'), done, total_,
                     elapsed.s());
}

void ProgressLine::update(size_t done, Seconds elapsed) {
  if (out_ == nullptr) return;
  const std::string line = text(done, elapsed);
  if (redraw_) {
    // Pad over the previous line's tail in case this one is shorter.
    const size_t pad = last_width_ > line.size() ? last_width_ - line.size() : 0;
    *out_ << '\r' << line << std::string(pad, ' ') << std::flush;
    last_width_ = line.size();
    return;
  }
  const size_t decile = total_ == 0 ? 10 : done * 10 / total_;
  if (decile > last_decile_) {  // the last update (done == total) is decile 10
    last_decile_ = decile;
    *out_ << line << '\n' << std::flush;
  }
}

void ProgressLine::finish() {
  if (out_ != nullptr && redraw_ && last_width_ > 0) *out_ << '\n' << std::flush;
}

}  // namespace burst::profiler
