#pragma once
// Job traces for the multi-tenant cluster (docs/cluster-sim.md): the Pollux workload format
// (name,time,application,num_replicas,batch_size) and the Philly format
// (timestamp,duration,num_gpus,gpu_time,cluster), read into one list of jobs.
#include <cstdint>
#include <string>
#include <vector>

namespace burst::cluster_sim {

struct TraceJob {
  std::string name;
  double submit_s = 0;      // seconds from the trace's (or the window's) start
  std::string application;  // Pollux: as given; Philly: by its GPU time (philly_application)
  int gpus = 1;             // GPUs asked for
  int64_t batch = 0;        // global batch; 0: the application's smallest validated batch per GPU x gpus
  double duration_s = -1;   // Philly: its run time on `gpus` GPUs; Pollux: none (< 0, the work is epochs)
  int line = 0;             // in the trace file, for messages
};

struct JobTrace {
  std::string path;
  std::string format;          // "pollux" or "philly"
  std::vector<TraceJob> jobs;  // by submission time (ties in file order)
  std::string where(const TraceJob& job) const;  // "PATH:LINE"
};

// Philly only: the jobs submitted in [from_day, from_day + days) days after the trace's
// first submission (days 0: to the end); submission times count from the window's start.
struct TraceWindow {
  double from_day = 0;
  double days = 0;
};

// The application a Philly job stands for, by its GPU time, as the Pollux workload generator
// assigns them: under 1 GPU-hour cifar10 or ncf (alternating by row), under 10 deepspeech2
// or bert (alternating), under 100 yolov3, else imagenet.
std::string philly_application(double gpu_hours, int64_t row);

// Reads a trace, the format known by its header. UserError "PATH:LINE: ..." for a malformed
// line (field count, a number out of range, a timestamp not "YYYY-MM-DD HH:MM:SS"), and
// "PATH:1: ..." for an unknown header.
JobTrace read_job_trace(const std::string& path, const TraceWindow& window = {});

}  // namespace burst::cluster_sim
