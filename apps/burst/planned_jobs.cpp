#include "planned_jobs.h"

#include <algorithm>
#include <functional>
#include <iostream>

#include <fmt/format.h>

#include "burst/cost/power.h"
#include "burst/graph/zoo.h"
#include "burst/sim/simulator.h"
#include "burst/timing/evaluate.h"
#include "burst/util/error.h"
#include "burst/util/json_io.h"
#include "command_inputs.h"

namespace burst::cli {
namespace {

// An iteration that does not fit in memory at the whole batch is run as this many
// accumulation steps of smaller batches, doubling up to this many.
constexpr int kMaxAccumulation = 64;

}  // namespace

const std::vector<ApplicationModel>& application_models() {
  static const std::vector<ApplicationModel> models = {
      {"cifar10", "resnet:depth=18,image_size=32,classes=10", "ResNet-18 on 32x32 images, as the application"},
      {"imagenet", "resnet50", "ResNet-50 on 224x224 images, as the application"},
      {"bert", "gpt2:seq=384,vocab=30522,positions=512", "a BERT-base-sized transformer at SQuAD's 384 tokens"},
      {"deepspeech2", "gpt2:layers=6,width=768,heads=12,seq=400,vocab=32,positions=400",
       "stand-in: a transformer of DeepSpeech2's size over 400 audio frames (the zoo has no recurrent layers)"},
      {"yolov3", "resnet:depth=101,image_size=416,classes=80",
       "stand-in: a ResNet-101 backbone at YOLOv3's 416x416 (Darknet-53's size class)"},
      {"ncf", "fmnist_cnn", "stand-in: a small network (NCF is an embedding MLP; the zoo has none)"},
  };
  return models;
}

std::string burst_model_of(const std::string& application) {
  std::string known;
  for (const ApplicationModel& entry : application_models()) {
    if (application == entry.application) return entry.model;
    known += fmt::format("{}{}", known.empty() ? "" : ", ", entry.application);
  }
  throw UserError(fmt::format("application '{}' has no model in burst's job model (it maps {}; "
                              "--applications DIR times it from measured tables)",
                              text_excerpt(application), known));
}

double PlannedTimer::idle_power_w(int kind) const {
  const auto power = cost::catalog_power(kinds_.at(static_cast<size_t>(kind)));
  return power ? power->idle_w : -1;
}

cluster_sim::IterationTime PlannedTimer::time(const cluster_sim::ApplicationTable& application, int64_t batch,
                                      const cluster_sim::Placement& placement) {
  std::map<int, int> per_kind;  // kind index -> GPUs
  for (size_t i = 0; i < placement.gpus.size(); ++i) per_kind[placement.kinds[i]] += placement.gpus[i];
  const int total = placement.total();
  if (per_kind.size() == 1) return on_kind(application.name, per_kind.begin()->first, total, batch);
  // Across kinds every rank keeps the slowest kind's pace (as data parallelism does): the
  // iteration takes the slowest kind's time at the whole count; faster kinds' GPUs wait, idle.
  cluster_sim::IterationTime mixed;
  mixed.samples = batch;
  std::vector<std::pair<int, cluster_sim::IterationTime>> each;  // (kind, its time at the whole count)
  for (const auto& [kind, count] : per_kind) {
    each.emplace_back(kind, on_kind(application.name, kind, total, batch));
    mixed.seconds = std::max(mixed.seconds, each.back().second.seconds);
  }
  double busy = 0, joules = 0;
  for (const auto& [kind, time] : each) {
    const int count = per_kind[kind];
    busy += count * (1 - time.idle_fraction) * time.seconds;
    const double idle_w = idle_power_w(kind);
    joules = time.joules < 0 || idle_w < 0 || joules < 0
                 ? -1
                 : joules + time.joules * count / total + count * idle_w * (mixed.seconds - time.seconds);
  }
  mixed.idle_fraction = std::clamp(1 - busy / (total * mixed.seconds), 0.0, 1.0);
  mixed.joules = joules;
  return mixed;
}

cluster_sim::IterationTime PlannedTimer::on_kind(const std::string& application, int kind, int devices, int64_t batch) {
  const std::string& name = kinds_.at(static_cast<size_t>(kind));
  const auto key = std::make_tuple(application, name, devices, batch);
  const auto found = cache_.find(key);
  if (found != cache_.end()) return found->second;
  const cluster_sim::IterationTime time = plan_and_time(application, name, devices, batch);
  cache_.emplace(key, time);
  if (cache_.size() % 25 == 0) std::cerr << fmt::format("cluster-sim: planned {} job shapes\n", cache_.size());
  return time;
}

void PlannedTimer::with_plan(const std::string& application, const std::string& kind, int count, int64_t batch,
                             const PlannedStep& use) const {
  const std::string model = burst_model_of(application);
  for (int steps = 1; steps <= kMaxAccumulation; steps *= 2) {
    const int64_t step_batch = (batch + steps - 1) / steps;
    if (step_batch < count && steps > 1) break;
    InputOptions options;
    options.command = "burst cluster-sim";
    options.model = model;
    options.devices = std::to_string(count);
    options.global_batch = std::to_string(std::max<int64_t>(step_batch, count));
    options.device = kind;
    try {
      const Inputs inputs = read_inputs(options);
      const CostModels models = make_cost_models(inputs, inputs.program.precision);
      const cost::NetworkModel network(inputs.cluster);
      const plan::PlanContext context = models.context(inputs.graph, network);
      planner::BurstOptions burst = burst_options(limit_of(planner::BurstOptions{}.amplification), false);
      burst.program = inputs.program;
      const planner::ChosenPlan chosen = planner::choose_plan(context, inputs.global_batch, planner::Strategy::Burst, plan_options(inputs, burst));
      use(chosen, context, steps);
      return;
    } catch (const UserError& error) {
      if (std::string(error.what()).find("no plan fits") == std::string::npos) throw;
    }
  }
  throw UserError(fmt::format("burst's job model: {} at batch {} fits {} {} devices in no plan, even in {} "
                              "accumulation steps",
                              model, batch, count, kind, kMaxAccumulation));
}

cluster_sim::IterationTime PlannedTimer::plan_and_time(const std::string& application, const std::string& kind, int count,
                                               int64_t batch) const {
  cluster_sim::IterationTime time;
  with_plan(application, kind, count, batch, [&](const planner::ChosenPlan& chosen, const plan::PlanContext& context, int steps) {
    timing::EvaluateOptions evaluate;
    evaluate.program = chosen.program;
    const timing::PlanEvaluation evaluation = timing::evaluate_plan(chosen.plan, context, evaluate);
    time.seconds = evaluation.iteration_time.s() * steps;
    time.samples = batch;
    const double device_time = evaluation.iteration_time.s() * count;
    time.idle_fraction = device_time > 0 ? evaluation.idle_device_seconds.s() / device_time : 0;
    time.joules = evaluation.energy.known ? evaluation.energy.total_j * steps : -1;
  });
  return time;
}

std::optional<cluster_sim::SharedDevice> PlannedTimer::share(const cluster_sim::ApplicationTable& host, int64_t host_batch,
                                                     const cluster_sim::Placement& placement, const cluster_sim::ApplicationTable& guest,
                                                     int64_t guest_batch) {
  const int kind = placement.kinds.empty() ? 0 : placement.kinds.front();
  for (const int other : placement.kinds) {
    if (other != kind) return std::nullopt;  // across kinds: the stated constants
  }
  const auto key = std::make_tuple(host.name, kind, placement.total(), host_batch, guest.name, guest_batch);
  const auto found = shares_.find(key);
  if (found != shares_.end()) return found->second;
  const cluster_sim::IterationTime alone = on_kind(guest.name, kind, 1, guest_batch);
  const cluster_sim::SharedDevice shared =
      simulate_share(host.name, kinds_.at(static_cast<size_t>(kind)), placement.total(), host_batch, guest.name,
                     guest_batch, static_cast<double>(guest_batch) / alone.seconds);
  shares_.emplace(key, shared);
  return shared;
}

namespace {

// Of two ways to share, the one within the slowdown we aim at (5%) with the guest faster;
// else the one that slows the host less.
bool better_share(const cluster_sim::SharedDevice& a, const cluster_sim::SharedDevice& b) {
  constexpr double kAim = 1.05;
  const bool a_within = a.host_slowdown <= kAim, b_within = b.host_slowdown <= kAim;
  if (a_within != b_within) return a_within;
  return a_within ? a.guest_share > b.guest_share : a.host_slowdown < b.host_slowdown;
}

}  // namespace

// The host's plan in the single-job simulator (docs/simulator.md) with the guest's model in
// the background on every device, only kernels that fit the host's idle gaps, at the guest's
// batch or 1/8, 1/64, 1/512 of it per kernel (it accumulates gradients): the best of those
// (better_share). The guest's share is its samples per second per device there over its
// speed alone on one GPU at its whole batch.
cluster_sim::SharedDevice PlannedTimer::simulate_share(const std::string& host, const std::string& kind, int count,
                                               int64_t host_batch, const std::string& guest, int64_t guest_batch,
                                               double guest_alone_samples_per_s) const {
  const graph::Graph guest_graph = graph::build_zoo_model(burst_model_of(guest));
  std::optional<cluster_sim::SharedDevice> best;
  with_plan(host, kind, count, host_batch, [&](const planner::ChosenPlan& chosen, const plan::PlanContext& context, int) {
    sim::SimOptions alone;
    alone.program = chosen.program;
    for (int64_t micro = guest_batch; micro >= 1 && micro * 512 >= guest_batch; micro /= 8) {
      const sim::BackgroundJob job{&guest_graph, micro, sim::BackgroundPolicy::FitIdleGaps};
      const sim::MultiplexResult result = sim::simulate_multiplexed(chosen.plan, context, alone, job);
      const cluster_sim::SharedDevice shared{result.foreground_slowdown,
                                     result.with_background.background_samples_per_s / count / guest_alone_samples_per_s};
      if (!best || better_share(shared, *best)) best = shared;
    }
  });
  return best.value_or(cluster_sim::SharedDevice{});
}

}  // namespace burst::cli
