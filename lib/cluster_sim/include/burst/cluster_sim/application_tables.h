#pragma once
// Measured applications for the multi-tenant cluster (docs/cluster-sim.md, "Job models"):
// a folder per application laid out as the Pollux simulator's traces: placements.csv
// (placement, local_bsz, step_time, sync_time), scalability.csv (num_nodes, num_replicas,
// local_bsz, step_time, sync_time) and validation-<global batch>.csv (progress, iteration,
// metric, grad_sqr, grad_var per epoch).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace burst::cluster_sim {

// One step of one replica (seconds): its whole time and the part spent synchronising gradients.
struct StepTime {
  double step_s = 0;
  double sync_s = 0;
};

// Step times along the local batch, linear between measured batches, constant beyond them.
struct StepCurve {
  std::vector<double> local_batch;  // ascending
  std::vector<StepTime> times;
  StepTime at(double local_batch) const;
};

// How a global batch is split on `replicas` GPUs (the published simulator's rule): each
// replica's local batch, in `accumulation + 1` micro-steps of `micro_batch` samples.
struct LocalBatch {
  int64_t micro_batch = 0;
  int accumulation = 0;    // extra micro-steps before each synchronisation
  int64_t global_batch = 0;  // what a step really takes: replicas x micro_batch x (accumulation + 1)
};

struct ValidationEpoch {
  double progress = 0;   // cumulative statistical progress (steps at the smallest batch) after the epoch
  double iteration = 0;  // cumulative steps at this batch
  double grad_sqr = 0;
  double grad_var = 0;
};

struct ApplicationTable {
  std::string name;
  std::map<int64_t, std::vector<ValidationEpoch>> validation;  // by global batch
  int64_t init_batch = 0;  // smallest validated batch
  int64_t max_batch = 0;   // largest validated batch
  double min_local_batch = 0;
  double max_local_batch = 0;
  int max_epochs = 0;
  // [e]: the progress at which epoch e ends, e = 0..max_epochs ([0] = 0): the least
  // progress any validated batch needed for it (the published simulator's rule).
  std::vector<double> epoch_end;

  LocalBatch local_batch(int64_t global_batch, int replicas) const;
  // One step on `placement` (GPUs on each node used, in the order the nodes were taken) at
  // `micro_batch` samples per replica: the measured placement (its rotations are the same
  // placement) interpolated in the batch, or, unmeasured, interpolated in nodes, GPUs per
  // node and batch over the per-(nodes, replicas) means and scalability.csv.
  StepTime step_time(const std::vector<int>& placement, double micro_batch) const;
  // Gradient statistics (grad_sqr, grad_var) in `epoch` at `batch`, linear between the
  // validated batches around it.
  std::pair<double, double> grad_stats(double batch, int epoch) const;
  // The statistical gain of a step at `batch` over one at init_batch (1 at init_batch).
  double gain(double batch, int epoch) const;

  std::map<std::vector<int>, StepCurve> measured;  // by placement, normalised (smallest rotation)
  std::map<int, std::map<int, StepCurve>> spread;  // nodes -> replicas -> curve
};

using ApplicationTables = std::map<std::string, ApplicationTable>;

// The folder's applications (every subfolder with a placements.csv). UserError "FILE:LINE: ..."
// for a malformed line, and for a folder with no application.
ApplicationTables read_application_tables(const std::string& directory);
// The measured tables shipped with burst (data/pollux-traces/applications, built in).
const ApplicationTables& builtin_application_tables();
// From texts by relative path ("cifar10/placements.csv"); what both of the above use.
ApplicationTables parse_application_tables(const std::map<std::string, std::string>& files, const std::string& base);

}  // namespace burst::cluster_sim
