#include "trace.h"

#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::runtime::trace {

const char* lane_name(Lane lane) {
  switch (lane) {
    case Lane::step: return "step";
    case Lane::compute: return "compute";
    case Lane::recv: return "recv";
    case Lane::send: return "send";
    case Lane::allreduce: return "allreduce";
    case Lane::idle: return "idle";
    case Lane::background: return "background";
  }
  return "?";
}

void Recorder::start(Clock::time_point origin, int64_t steps) {
  started_ = true;
  origin_ = origin;
  limit_ = steps;
  step_ = 0;
  steps_recorded_ = 0;
  events_.clear();
}

void Recorder::begin_step() {
  if (!started_) return;
  ++step_;
  recording_ = steps_recorded_ < limit_;
}

void Recorder::end_step() {
  if (recording_) {
    ++steps_recorded_;
    window_end_ = Clock::now();
  }
  recording_ = false;
}

void Recorder::add_in_window(Lane lane, Clock::time_point begin, Clock::time_point end, const std::string& name) {
  if (!started_ || steps_recorded_ == 0 || begin < origin_ || end > window_end_) return;
  using Micro = std::chrono::duration<double, std::micro>;
  events_.push_back(Event{lane, 0, Micro(begin - origin_).count(), end > begin ? Micro(end - begin).count() : 0.0,
                          name, {}});
}

void Recorder::add(Lane lane, Clock::time_point begin, Clock::time_point end, const std::string& name,
                   const std::string& args) {
  if (!recording_) return;
  using Micro = std::chrono::duration<double, std::micro>;
  const double begin_us = Micro(begin - origin_).count();
  const double duration_us = end > begin ? Micro(end - begin).count() : 0.0;
  events_.push_back(Event{lane, step_, begin_us, duration_us, name, args});
}

std::string Recorder::events_json(int rank) const {
  std::string out;
  out.reserve(events_.size() * 160 + 1024);
  out += fmt::format(R"({{"ph": "M", "name": "process_name", "pid": {0}, "tid": 0, "args": {{"name": "rank {0}"}}}})",
                     rank);
  out += fmt::format(",\n"
                     R"({{"ph": "M", "name": "process_sort_index", "pid": {0}, "tid": 0, "args": {{"sort_index": {0}}}}})",
                     rank);
  for (int lane = 0; lane < kLaneCount; ++lane) {
    out += fmt::format(",\n"
                       R"({{"ph": "M", "name": "thread_name", "pid": {}, "tid": {}, "args": {{"name": "{}"}}}})",
                       rank, lane, lane_name(static_cast<Lane>(lane)));
    out += fmt::format(",\n"
                       R"({{"ph": "M", "name": "thread_sort_index", "pid": {}, "tid": {}, "args": {{"sort_index": {}}}}})",
                       rank, lane, lane);
  }
  for (const Event& event : events_) {
    out += fmt::format(",\n"
                       R"({{"ph": "X", "name": "{}", "cat": "{}", "pid": {}, "tid": {}, "ts": {:.3f}, "dur": {:.3f}, )"
                       R"("args": {{"step": {}{}{}}}}})",
                       json_escape(event.name), lane_name(event.lane), rank, static_cast<int>(event.lane),
                       event.begin_us, event.duration_us, event.step, event.args.empty() ? "" : ", ", event.args);
  }
  return out;
}

std::string json_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string chrome_trace(const std::vector<std::string>& fragments, const std::string& other_data) {
  std::string out = "{\"traceEvents\": [\n";
  bool first = true;
  for (const std::string& fragment : fragments) {
    if (fragment.empty()) continue;
    if (!first) out += ",\n";
    out += fragment;
    first = false;
  }
  out += "\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {";
  out += other_data;
  out += "}}\n";
  return out;
}

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (!out) throw UserError(fmt::format("cannot write '{}'", temporary));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw UserError(fmt::format("cannot rename '{}' to '{}'", temporary, path));
  }
}

}  // namespace burst::runtime::trace
