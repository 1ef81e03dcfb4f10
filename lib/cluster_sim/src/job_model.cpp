#include "burst/cluster_sim/job_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "burst/util/json_io.h"

namespace burst::cluster_sim {

int Placement::total() const {
  int sum = 0;
  for (const int count : gpus) sum += count;
  return sum;
}

IterationTime MeasuredTimer::time(const ApplicationTable& application, int64_t batch, const Placement& placement) {
  const LocalBatch split = application.local_batch(batch, placement.total());
  const StepTime step = application.step_time(placement.gpus, static_cast<double>(split.micro_batch));
  IterationTime time;
  time.seconds = step.step_s + split.accumulation * std::max(0.0, step.step_s - step.sync_s);
  time.samples = split.global_batch;
  time.idle_fraction = time.seconds > 0 ? std::clamp(step.sync_s / time.seconds, 0.0, 1.0) : 0;
  return time;
}

void JobModel::check(const JobTrace& trace, const TraceJob& job) const {
  if (applications_.count(job.application) > 0) return;
  std::string known;
  for (const auto& [name, table] : applications_) known += (known.empty() ? "" : ", ") + name;
  throw UserError(fmt::format("{}: unknown application '{}' (known: {})", trace.where(job),
                              text_excerpt(job.application), known));
}

const ApplicationTable& JobModel::application(const TraceJob& job) const { return applications_.at(job.application); }

int64_t JobModel::batch_of(const TraceJob& job) const {
  if (job.batch > 0) return job.batch;
  const ApplicationTable& app = application(job);
  return std::clamp(app.init_batch * job.gpus, app.init_batch, app.max_batch);
}

double JobModel::work(const TraceJob& job) const {
  const ApplicationTable& app = application(job);
  if (job.duration_s < 0) return app.epoch_end.back();
  const IterationTime requested = timer_.time(app, batch_of(job), packed_placement(job.gpus, gpus_per_node_));
  return job.duration_s / requested.seconds;  // iterations
}

JobSpeed JobModel::speed(const TraceJob& job, const Placement& placement, double progress) const {
  const ApplicationTable& app = application(job);
  const IterationTime time = timer_.time(app, batch_of(job), placement);
  BURST_ASSERT(time.seconds > 0, "an iteration takes no time");
  JobSpeed speed;
  speed.samples_per_s = static_cast<double>(time.samples) / time.seconds;
  speed.idle_fraction = time.idle_fraction;
  speed.watts = time.joules >= 0 ? time.joules / time.seconds : -1;
  if (job.duration_s >= 0) {  // Philly: progress counts iterations
    speed.progress_per_s = 1 / time.seconds;
    speed.until_progress = std::numeric_limits<double>::infinity();
    return speed;
  }
  const auto epoch = static_cast<int>(std::upper_bound(app.epoch_end.begin() + 1, app.epoch_end.end(), progress) -
                                      (app.epoch_end.begin() + 1));
  const int in_epoch = std::min(epoch, app.max_epochs - 1);
  speed.progress_per_s = app.gain(static_cast<double>(time.samples), in_epoch) / time.seconds;
  speed.until_progress = app.epoch_end[static_cast<size_t>(std::min(in_epoch + 1, app.max_epochs))];
  return speed;
}

std::optional<SharedDevice> JobModel::share(const TraceJob& host, const Placement& placement,
                                            const TraceJob& guest) const {
  return timer_.share(application(host), batch_of(host), placement, application(guest), batch_of(guest));
}

Placement packed_placement(int gpus, int per_node, int kind) {
  Placement placement;
  for (int left = gpus; left > 0; left -= per_node) {
    placement.gpus.push_back(std::min(left, per_node));
    placement.kinds.push_back(kind);
  }
  return placement;
}

}  // namespace burst::cluster_sim
