#include "planned_jobs.h"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "burst/cost/power.h"
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

sim::IterationTime PlannedTimer::time(const sim::ApplicationTable& application, int64_t batch,
                                      const sim::Placement& placement) {
  std::map<int, int> per_kind;  // kind index -> GPUs
  for (size_t i = 0; i < placement.gpus.size(); ++i) per_kind[placement.kinds[i]] += placement.gpus[i];
  const int total = placement.total();
  if (per_kind.size() == 1) return on_kind(application.name, per_kind.begin()->first, total, batch);
  // Across kinds every rank keeps the slowest kind's pace (as data parallelism does): the
  // iteration takes the slowest kind's time at the whole count; faster kinds' GPUs wait, idle.
  sim::IterationTime mixed;
  mixed.samples = batch;
  std::vector<std::pair<int, sim::IterationTime>> each;  // (kind, its time at the whole count)
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

sim::IterationTime PlannedTimer::on_kind(const std::string& application, int kind, int devices, int64_t batch) {
  const std::string& name = kinds_.at(static_cast<size_t>(kind));
  const auto key = std::make_tuple(application, name, devices, batch);
  const auto found = cache_.find(key);
  if (found != cache_.end()) return found->second;
  const sim::IterationTime time = plan_and_time(application, name, devices, batch);
  cache_.emplace(key, time);
  if (cache_.size() % 25 == 0) std::cerr << fmt::format("cluster-sim: planned {} job shapes\n", cache_.size());
  return time;
}

sim::IterationTime PlannedTimer::plan_and_time(const std::string& application, const std::string& kind, int count,
                                               int64_t batch) const {
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
      const ChosenPlan chosen = choose_plan(inputs, "burst", context, burst);
      timing::EvaluateOptions evaluate;
      evaluate.program = chosen.program;
      const timing::PlanEvaluation evaluation = timing::evaluate_plan(chosen.plan, context, evaluate);
      sim::IterationTime time;
      time.seconds = evaluation.iteration_time.s() * steps;
      time.samples = batch;
      const double device_time = evaluation.iteration_time.s() * count;
      time.idle_fraction = device_time > 0 ? evaluation.idle_device_seconds.s() / device_time : 0;
      time.joules = evaluation.energy.known ? evaluation.energy.total_j * steps : -1;
      return time;
    } catch (const UserError& error) {
      if (std::string(error.what()).find("no plan fits") == std::string::npos) throw;
    }
  }
  throw UserError(fmt::format("burst's job model: {} at batch {} fits {} {} devices in no plan, even in {} "
                              "accumulation steps",
                              model, batch, count, kind, kMaxAccumulation));
}

}  // namespace burst::cli
