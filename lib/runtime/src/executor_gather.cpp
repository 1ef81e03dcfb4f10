// PlanExecutor's collectives outside the step: step times, traces, parameters, training
// state (checkpoints), gathered on rank 0.
#include <algorithm>
#include <cstring>
#include <deque>
#include <map>

#include <fmt/format.h>

#include "burst/runtime/plan_executor.h"
#include "executor_state.h"
#include "state_sources.h"
#include "training_state.h"

namespace burst::runtime {

using detail::Clock;
using detail::divided;
using detail::gather_tag;
using detail::state_slicing;
using detail::state_sources;
using detail::kTraceBytesTag;
using detail::kTraceSizeTag;

std::vector<StepTimes> PlanExecutor::gather_step_times(const StepTimes& mine) {
  detail::ExecutorState& s = *state_;
  const int world = s.comm.size();
  torch::Tensor table = torch::zeros({world, 7}, torch::kFloat64);
  auto row = table.accessor<double, 2>();
  row[s.rank][0] = mine.compute_ms;
  row[s.rank][1] = mine.communication_ms;
  row[s.rank][2] = mine.idle_ms;
  row[s.rank][3] = mine.total_ms;
  row[s.rank][4] = mine.background_samples;
  row[s.rank][5] = mine.background_cpu_ms;
  row[s.rank][6] = mine.data_ms;
  std::vector<torch::Tensor> buffers{table};
  detail::wait_or_fail(*s.comm.allreduce_sum_world(buffers), "the step times all-reduce");
  std::vector<StepTimes> all(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    all[static_cast<size_t>(r)] = StepTimes{row[r][0], row[r][1], row[r][2], row[r][3], row[r][4], row[r][5], row[r][6]};
  }
  return all;
}

void PlanExecutor::trace_background(const std::vector<std::pair<Clock::time_point, Clock::time_point>>& steps) {
  for (const auto& [begin, end] : steps) state_->trace.add_in_window(trace::Lane::background, begin, end, "background step");
}

void PlanExecutor::start_trace(int64_t steps) {
  detail::ExecutorState& s = *state_;
  s.comm.barrier();
  s.trace.start(Clock::now(), steps);
}

std::string PlanExecutor::gather_trace(std::vector<int64_t>* events_per_rank) {
  detail::ExecutorState& s = *state_;
  const int world = s.comm.size();
  std::string mine = s.trace.events_json(s.rank);
  const auto my_count = static_cast<int64_t>(s.trace.size());
  if (s.rank != 0) {
    torch::Tensor header = torch::tensor({static_cast<int64_t>(mine.size()), my_count}, torch::kInt64);
    torch::Tensor bytes = torch::empty({static_cast<int64_t>(mine.size())}, torch::kUInt8);
    std::memcpy(bytes.data_ptr<uint8_t>(), mine.data(), mine.size());
    auto header_work = s.comm.send(header, 0, kTraceSizeTag);
    auto bytes_work = s.comm.send(bytes, 0, kTraceBytesTag);
    detail::wait_or_fail(*header_work, "sending the trace to rank 0");
    detail::wait_or_fail(*bytes_work, "sending the trace to rank 0");
    return {};
  }
  std::vector<std::string> fragments{std::move(mine)};
  if (events_per_rank) *events_per_rank = {my_count};
  for (int source = 1; source < world; ++source) {
    torch::Tensor header = torch::empty({2}, torch::kInt64);
    detail::wait_or_fail(*s.comm.receive(header, source, kTraceSizeTag), fmt::format("the trace of rank {}", source));
    const int64_t size = header[0].item<int64_t>();
    torch::Tensor bytes = torch::empty({size}, torch::kUInt8);
    detail::wait_or_fail(*s.comm.receive(bytes, source, kTraceBytesTag), fmt::format("the trace of rank {}", source));
    fragments.emplace_back(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()), static_cast<size_t>(size));
    if (events_per_rank) events_per_rank->push_back(header[1].item<int64_t>());
  }
  const std::string other = fmt::format(
      "\"model\": \"{}\", \"ranks\": {}, \"steps_traced\": {}, \"global_batch\": {}, "
      "\"clock\": \"steady_clock, microseconds since a barrier before the first traced step\"",
      trace::json_escape(s.graph.name()), world, s.trace.steps_recorded(), s.plan.global_batch);
  return trace::chrome_trace(fragments, other);
}

std::vector<std::pair<std::string, torch::Tensor>> PlanExecutor::local_parameters() const {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (size_t id = 0; id < state_->modules.size(); ++id) {
    if (!state_->modules[id]) continue;
    for (const auto& item : state_->modules[id]->module().named_parameters()) {
      named.emplace_back(layers::state_name(state_->graph, static_cast<graph::LayerId>(id), item.key()),
                         item.value());
    }
  }
  return named;
}

namespace {

// A module's parameters, then its buffers (BatchNorm's running statistics), by name.
std::vector<std::pair<std::string, torch::Tensor>> named_state(const torch::nn::Module& module) {
  std::vector<std::pair<std::string, torch::Tensor>> state;
  for (const auto& item : module.named_parameters()) state.emplace_back(item.key(), item.value());
  for (const auto& item : module.named_buffers()) state.emplace_back(item.key(), item.value());
  return state;
}

}  // namespace

std::vector<std::pair<std::string, torch::Tensor>> PlanExecutor::gather_parameters() {
  detail::ExecutorState& s = *state_;
  std::vector<std::pair<std::string, torch::Tensor>> gathered;
  std::vector<std::pair<torch::Tensor, std::unique_ptr<PendingWork>>> sends;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(s.graph.size()); ++id) {
    const std::vector<int> sources = state_sources(s.plan, id);
    const auto mine = std::find(sources.begin(), sources.end(), s.rank);
    if (mine != sources.end() && s.rank != 0) {
      size_t index = 0;
      for (const auto& [name, tensor] : named_state(s.modules[static_cast<size_t>(id)]->module())) {
        const uint32_t tag = gather_tag(id, index++);
        if (mine != sources.begin() && !state_slicing(s.plan, id, name).sliced) continue;  // part 0 sends copies
        torch::Tensor copy = tensor.detach().contiguous();
        auto work = s.comm.send(copy, 0, tag);
        sends.emplace_back(std::move(copy), std::move(work));
      }
    }
    if (s.rank != 0) continue;
    if (sources == std::vector<int>{0}) {
      for (const auto& [name, tensor] : named_state(s.modules[static_cast<size_t>(id)]->module())) {
        gathered.emplace_back(layers::state_name(s.graph, id, name), tensor.detach().clone());
      }
      continue;
    }
    // Names and whole shapes from a stand-in module; the values from the sources.
    const auto stand_in = layers::make_layer_module(s.graph, id);
    layers::place_layer(*stand_in, s.device, s.dtype);
    const auto own = s.modules[static_cast<size_t>(id)] ? named_state(s.modules[static_cast<size_t>(id)]->module())
                                                        : std::vector<std::pair<std::string, torch::Tensor>>{};
    size_t index = 0;
    for (const auto& [name, whole] : named_state(stand_in->module())) {
      const layers::ParameterSlicing slicing = state_slicing(s.plan, id, name);
      const size_t count = slicing.sliced ? sources.size() : 1;
      std::vector<torch::Tensor> slices;
      for (size_t p = 0; p < count; ++p) {
        if (sources[p] == 0) {
          slices.push_back(own.at(index).second.detach().clone());
          continue;
        }
        const auto parts = static_cast<int32_t>(sources.size());
        torch::Tensor value =
            torch::empty_like(layers::slice_for_part(whole, slicing, static_cast<int32_t>(p), parts)).contiguous();
        detail::wait_or_fail(*s.comm.receive(value, sources[p], gather_tag(id, index)),
                             fmt::format("the parameters of layer '{}' from rank {}", s.name(id), sources[p]));
        slices.push_back(value);
      }
      gathered.emplace_back(layers::state_name(s.graph, id, name), layers::join_parts(slices, slicing));
      ++index;
    }
  }
  for (auto& [tensor, work] : sends) detail::wait_or_fail(*work, "sending to rank 0");
  return gathered;
}

namespace {

// The whole layer's training state from its sources' (state_sources, in part order): each
// tensor joined from its slices, or the first source's where it is not sliced.
std::vector<checkpoint::TensorBytes> join_training_state(const plan::Plan& plan, graph::LayerId id,
                                                         const std::string& prefix,
                                                         std::vector<std::vector<checkpoint::TensorBytes>> blocks) {
  if (blocks.size() == 1) return std::move(blocks.front());
  std::vector<checkpoint::TensorBytes> joined;
  for (size_t t = 0; t < blocks.front().size(); ++t) {
    const std::string& name = blocks.front()[t].name;
    const layers::ParameterSlicing slicing = state_slicing(plan, id, name.substr(prefix.size()));
    if (!slicing.sliced) {
      joined.push_back(std::move(blocks.front()[t]));
      continue;
    }
    std::vector<torch::Tensor> slices;
    for (const auto& block : blocks) {
      BURST_ASSERT(block.size() == blocks.front().size() && block[t].name == name, "parts list the same state");
      slices.push_back(detail::tensor_from_bytes(block[t]));
    }
    joined.push_back(detail::tensor_to_bytes(name, layers::join_parts(slices, slicing)));
  }
  return joined;
}

}  // namespace

std::vector<checkpoint::TensorBytes> PlanExecutor::gather_training_state() {
  detail::ExecutorState& s = *state_;
  // Each source's state of a layer travels as one encoded block (checkpoint_file.h's format
  // without a model): its size, then its bytes, under the layer's last two gathering tags.
  constexpr size_t kSizeSlot = 62, kBytesSlot = 63;
  std::vector<checkpoint::TensorBytes> gathered;
  std::vector<std::pair<torch::Tensor, std::unique_ptr<PendingWork>>> sends;
  // ZeRO: the parameters' optimizer state, whole, from the shards (every rank of a bucket).
  if (s.optimizer && s.buckets->sharded()) s.buckets->gather_parameter_state(*s.optimizer);
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(s.graph.size()); ++id) {
    const std::vector<int> sources = state_sources(s.plan, id);
    const std::string prefix = s.graph.layer(id).name + ".";
    const bool source = std::find(sources.begin(), sources.end(), s.rank) != sources.end();
    if (source && s.rank != 0) {
      checkpoint::Checkpoint block;
      block.tensors =
          detail::layer_training_state(s.modules[static_cast<size_t>(id)]->module(), s.optimizer.get(), prefix);
      const std::string bytes = checkpoint::encode_checkpoint(block);
      torch::Tensor size = torch::tensor({static_cast<int64_t>(bytes.size())}, torch::kInt64);
      torch::Tensor payload = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
      std::memcpy(payload.data_ptr(), bytes.data(), bytes.size());
      sends.emplace_back(size, s.comm.send(size, 0, gather_tag(id, kSizeSlot)));
      sends.emplace_back(payload, s.comm.send(payload, 0, gather_tag(id, kBytesSlot)));
    }
    if (s.rank != 0) continue;
    std::vector<std::vector<checkpoint::TensorBytes>> blocks;
    for (const int from : sources) {
      if (from == 0) {
        blocks.push_back(
            detail::layer_training_state(s.modules[static_cast<size_t>(id)]->module(), s.optimizer.get(), prefix));
        continue;
      }
      const std::string what = fmt::format("the training state of layer '{}' from rank {}", s.name(id), from);
      torch::Tensor size = torch::empty({1}, torch::kInt64);
      detail::wait_or_fail(*s.comm.receive(size, from, gather_tag(id, kSizeSlot)), what);
      torch::Tensor payload = torch::empty({size.item<int64_t>()}, torch::kUInt8);
      detail::wait_or_fail(*s.comm.receive(payload, from, gather_tag(id, kBytesSlot)), what);
      blocks.push_back(checkpoint::decode_checkpoint(std::string(static_cast<const char*>(payload.data_ptr()),
                                                                 static_cast<size_t>(payload.numel())))
                           .tensors);
    }
    for (auto& tensor : join_training_state(s.plan, id, prefix, std::move(blocks))) gathered.push_back(std::move(tensor));
  }
  for (auto& [tensor, work] : sends) detail::wait_or_fail(*work, "sending to rank 0");
  if (s.optimizer && s.buckets->sharded()) s.buckets->drop_parameter_state(*s.optimizer);
  return gathered;
}

void PlanExecutor::load_training_state(const std::vector<checkpoint::TensorBytes>& state) {
  detail::ExecutorState& s = *state_;
  std::map<std::string, const checkpoint::TensorBytes*> by_name;
  for (const checkpoint::TensorBytes& tensor : state) by_name[tensor.name] = &tensor;
  // A divided tensor split's part loads its slices: each sliced tensor of its layer (its
  // parameters and their optimizer state, by name) is replaced in `by_name` by this rank's
  // slice of it. One of a shape that does not divide is left whole: loading names it.
  std::deque<checkpoint::TensorBytes> slices;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(s.graph.size()); ++id) {
    if (!s.modules[static_cast<size_t>(id)] || !divided(s.plan, id)) continue;
    const std::string prefix = s.graph.layer(id).name + ".";
    for (const auto& item : s.modules[static_cast<size_t>(id)]->module().named_parameters()) {
      // "<layer>.<parameter>" and its optimizer slots "<layer>.<parameter>:<slot>".
      const std::string base = prefix + item.key();
      for (auto entry = by_name.lower_bound(base);
           entry != by_name.end() && entry->first.compare(0, base.size(), base) == 0; ++entry) {
        if (entry->first.size() > base.size() && entry->first[base.size()] != ':') continue;
        const layers::ParameterSlicing slicing = state_slicing(s.plan, id, entry->first.substr(prefix.size()));
        if (!slicing.sliced) continue;
        const torch::Tensor whole = detail::tensor_from_bytes(*entry->second);
        if (whole.dim() <= slicing.dim || whole.size(slicing.dim) % (slicing.chunks * s.split(id).parts) != 0) continue;
        slices.push_back(detail::tensor_to_bytes(
            entry->first, layers::slice_for_part(whole, slicing, s.part(id), s.split(id).parts)));
        entry->second = &slices.back();
      }
    }
  }
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(s.graph.size()); ++id) {
    if (!s.modules[static_cast<size_t>(id)]) continue;  // its layers, and tied weights' copies
    detail::load_layer_training_state(s.modules[static_cast<size_t>(id)]->module(), s.optimizer.get(),
                                      s.graph.layer(id).name + ".", by_name);
  }
  if (s.buckets->sharded()) s.buckets->shard_loaded_state(s.optimizer.get());
}

}  // namespace burst::runtime
