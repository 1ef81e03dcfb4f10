#pragma once
// Progress of a profiling run on a stream (stderr in the burst command).
#include <cstddef>
#include <ostream>
#include <string>

#include "burst/util/units.h"

namespace burst::profiler {

class ProgressLine {
 public:
  // `out` may be nullptr (silent). With `redraw` (a terminal) one line is rewritten with '\r'
  // at every update; otherwise a line is written when another ~10% of `total` is done.
  ProgressLine(std::ostream* out, bool redraw, std::string label, size_t total);

  // `done` of `total` signatures finished after `elapsed`.
  void update(size_t done, Seconds elapsed);
  // Ends a redrawn line with a newline.
  void finish();

 private:
  std::string text(size_t done, Seconds elapsed) const;

  std::ostream* out_;
  bool redraw_;
  std::string label_;
  size_t total_;
  size_t last_decile_ = 0;
  size_t last_width_ = 0;
};

}  // namespace burst::profiler
