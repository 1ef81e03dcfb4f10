#include "burst/cluster_sim/job_trace.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include <fmt/format.h>

#include "burst/util/csv.h"
#include "burst/util/error.h"
#include "burst/util/json_io.h"

namespace burst::cluster_sim {
namespace {

constexpr int64_t kMaxGpus = 1 << 20;
constexpr int64_t kMaxBatch = int64_t{1} << 40;
constexpr double kMaxSeconds = 1e9;  // about 32 years: submission times and durations

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t days_from_civil(int64_t year, int64_t month, int64_t day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t year_of_era = year - era * 400;
  const int64_t day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

// "YYYY-MM-DD HH:MM:SS" -> seconds since 1970 (UTC); nullopt-like -1 when malformed.
double parse_timestamp(const std::string& text) {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  char end = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d %2d:%2d:%2d%c", &year, &month, &day, &hour, &minute, &second, &end) !=
          6 ||
      month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60 || hour < 0 ||
      minute < 0 || second < 0) {
    return -1;
  }
  return static_cast<double>(days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second);
}

std::vector<TraceJob> pollux_jobs(const CsvTable& table) {
  const size_t name = table.column("name"), time = table.column("time"), application = table.column("application");
  const size_t replicas = table.column("num_replicas"), batch = table.column("batch_size");
  std::vector<TraceJob> jobs;
  for (const CsvRow& row : table.rows) {
    TraceJob job;
    job.name = row.fields[name];
    job.submit_s = table.number(row, time, 0, kMaxSeconds);
    job.application = row.fields[application];
    job.gpus = static_cast<int>(table.whole(row, replicas, 1, kMaxGpus));
    job.batch = table.whole(row, batch, 1, kMaxBatch);
    job.line = row.line;
    if (job.application.empty()) throw UserError(fmt::format("{}: the application is empty", table.where(row)));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

std::vector<TraceJob> philly_jobs(const CsvTable& table, const TraceWindow& window) {
  const size_t timestamp = table.column("timestamp"), duration = table.column("duration");
  const size_t gpus = table.column("num_gpus"), gpu_time = table.column("gpu_time");
  std::vector<std::pair<double, TraceJob>> stamped;
  for (const CsvRow& row : table.rows) {
    const double at = parse_timestamp(row.fields[timestamp]);
    if (at < 0) {
      throw UserError(fmt::format("{}: timestamp must be YYYY-MM-DD HH:MM:SS, got '{}'", table.where(row),
                                  text_excerpt(row.fields[timestamp])));
    }
    TraceJob job;
    job.duration_s = table.number(row, duration, 1e-9, kMaxSeconds);
    job.gpus = static_cast<int>(table.whole(row, gpus, 1, kMaxGpus));
    const double hours = table.number(row, gpu_time, 0) / 3600;
    job.application = philly_application(hours, static_cast<int64_t>(stamped.size()));
    job.name = fmt::format("philly-{}", row.line);
    job.line = row.line;
    stamped.emplace_back(at, std::move(job));
  }
  double first = std::numeric_limits<double>::infinity();
  for (const auto& entry : stamped) first = std::min(first, entry.first);
  const double start = first + window.from_day * 86400;
  const double end = window.days > 0 ? start + window.days * 86400 : std::numeric_limits<double>::infinity();
  std::vector<TraceJob> jobs;
  for (auto& [at, job] : stamped) {
    if (at < start || at >= end) continue;
    job.submit_s = at - start;
    jobs.push_back(std::move(job));
  }
  return jobs;
}

}  // namespace

std::string JobTrace::where(const TraceJob& job) const { return fmt::format("{}:{}", path, job.line); }

std::string philly_application(double gpu_hours, int64_t row) {
  if (gpu_hours < 1) return row % 2 == 0 ? "cifar10" : "ncf";
  if (gpu_hours < 10) return row % 2 == 0 ? "deepspeech2" : "bert";
  if (gpu_hours < 100) return "yolov3";
  return "imagenet";
}

JobTrace read_job_trace(const std::string& path, const TraceWindow& window) {
  const CsvTable table = read_csv(path);
  JobTrace trace;
  trace.path = path;
  const auto has = [&](const char* name) {
    return std::find(table.header.begin(), table.header.end(), name) != table.header.end();
  };
  if (has("num_replicas")) {
    trace.format = "pollux";
    trace.jobs = pollux_jobs(table);
  } else if (has("num_gpus") && has("timestamp")) {
    trace.format = "philly";
    trace.jobs = philly_jobs(table, window);
  } else {
    throw UserError(fmt::format("{}:1: not a job trace: expected the Pollux workload header "
                                "(name,time,application,num_replicas,batch_size) or the Philly one "
                                "(timestamp,duration,num_gpus,gpu_time,cluster)",
                                path));
  }
  std::stable_sort(trace.jobs.begin(), trace.jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit_s < b.submit_s; });
  return trace;
}

}  // namespace burst::cluster_sim
