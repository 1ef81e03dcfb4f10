#include "burst/runtime/c10d_communicator.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if BURST_NCCL_BUILT
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "burst/launch/network_address.h"
#include "burst/util/error.h"

namespace burst::runtime {
namespace {

class GlooWork : public PendingWork {
 public:
  explicit GlooWork(c10::intrusive_ptr<c10d::Work> work) : work_(std::move(work)) {}
  void wait() override { work_->wait(); }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
};

std::string group_key(const std::vector<int>& group) {
  std::string key = "group";
  for (const int rank : group) key += fmt::format(":{}", rank);
  return key;
}

// The rendezvous store (c10d_communicator.h says which).
c10::intrusive_ptr<c10d::Store> make_store(const C10dOptions& options) {
  if (options.world_size == 1) return c10::make_intrusive<c10d::HashStore>();
  try {
    if (!options.rendezvous_file.empty()) {
      auto store = c10::make_intrusive<c10d::FileStore>(options.rendezvous_file, options.world_size);
      store->setTimeout(options.timeout);
      return store;
    }
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<std::uint16_t>(options.master_port);
    store_options.isServer = options.rank == 0 && options.host_store;
    store_options.numWorkers = static_cast<size_t>(options.world_size);
    store_options.waitWorkers = true;
    store_options.timeout = options.timeout;
    return c10::make_intrusive<c10d::TCPStore>(options.master_address, store_options);
  } catch (const std::exception& error) {
    const std::string where = options.rendezvous_file.empty()
                                  ? fmt::format("{}:{}", options.master_address, options.master_port)
                                  : options.rendezvous_file;
    throw RunFailure(fmt::format("rendezvous at {} failed: {}", where, error.what()));
  }
}

using Group = c10::intrusive_ptr<c10d::Backend>;

// A process group for GPU tensors: NCCL's, over `store`.
Group make_nccl_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                      std::chrono::milliseconds timeout) {
#if BURST_NCCL_BUILT
  auto options = c10d::ProcessGroupNCCL::Options::create(/*is_high_priority_stream=*/true);
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
#else
  (void)store, (void)rank, (void)size, (void)timeout;
  throw UserError("GPU tensors need NCCL, and this burst is built without it (burst --version)");
#endif
}

bool on_gpu(const std::vector<at::Tensor>& tensors) { return !tensors.empty() && tensors.front().is_cuda(); }

class C10dCommunicator : public Communicator {
 public:
  explicit C10dCommunicator(const C10dOptions& options)
      : options_(options), store_(make_store(options)), devices_(make_devices(options)) {
    world_ = make_group(c10::make_intrusive<c10d::PrefixStore>("world", store_), options.rank,
                        options.world_size);
    if (options.nccl) {
      world_gpu_ = make_nccl_group(c10::make_intrusive<c10d::PrefixStore>("world-nccl", store_), options.rank,
                                   options.world_size, options.timeout);
    }
  }

  int rank() const override { return options_.rank; }
  int size() const override { return options_.world_size; }

  void prepare_groups(const std::vector<std::vector<int>>& groups) override {
    for (const auto& group : groups) {
      BURST_ASSERT(group.size() >= 2, "a group needs two ranks");
      const auto member = std::find(group.begin(), group.end(), options_.rank);
      if (member == group.end() || groups_.count(group) > 0) continue;
      const auto rank = static_cast<int>(member - group.begin());
      const auto size = static_cast<int>(group.size());
      groups_.emplace(group, make_group(c10::make_intrusive<c10d::PrefixStore>(group_key(group), store_), rank, size));
      if (options_.nccl) {
        groups_gpu_.emplace(group, make_nccl_group(c10::make_intrusive<c10d::PrefixStore>(group_key(group) + "-nccl",
                                                                                         store_),
                                                   rank, size, options_.timeout));
      }
    }
  }

  std::unique_ptr<PendingWork> send(torch::Tensor& tensor, int destination, uint32_t tag) override {
    std::vector<at::Tensor> tensors{tensor};
    return std::make_unique<GlooWork>(world(tensors)->send(tensors, destination, static_cast<int>(tag)));
  }

  std::unique_ptr<PendingWork> receive(torch::Tensor& tensor, int source, uint32_t tag) override {
    std::vector<at::Tensor> tensors{tensor};
    return std::make_unique<GlooWork>(world(tensors)->recv(tensors, source, static_cast<int>(tag)));
  }

  std::unique_ptr<PendingWork> allreduce_sum(std::vector<torch::Tensor>& tensors,
                                             const std::vector<int>& group) override {
    return std::make_unique<GlooWork>(prepared(group, on_gpu(tensors))->allreduce(tensors));
  }

  std::unique_ptr<PendingWork> reduce_scatter_sum(torch::Tensor& shard, torch::Tensor& whole,
                                                  const std::vector<int>& group) override {
    c10d::ReduceScatterOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    return std::make_unique<GlooWork>(prepared(group, shard.is_cuda())->_reduce_scatter_base(shard, whole, options));
  }

  std::unique_ptr<PendingWork> all_gather(torch::Tensor& whole, torch::Tensor& shard,
                                          const std::vector<int>& group) override {
    return std::make_unique<GlooWork>(prepared(group, shard.is_cuda())->_allgather_base(whole, shard));
  }

  std::unique_ptr<PendingWork> allreduce_sum_world(std::vector<torch::Tensor>& tensors) override {
    return std::make_unique<GlooWork>(world(tensors)->allreduce(tensors));
  }

  void barrier() override { world_->barrier()->wait(); }

 private:
  // A group's pairs connect when it is made: a refused or timed-out connection is a run
  // failure naming this rank and the address its sockets bind.
  Group make_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size) const {
    auto options = c10d::ProcessGroupGloo::Options::create(options_.timeout);
    options->devices = devices_.devices;
    options->threads = 1;
    try {
      return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
    } catch (const std::exception& error) {
      throw RunFailure(fmt::format("rank {}: connecting to the other ranks from {} failed: {}", options_.rank,
                                   devices_.where, error.what()));
    }
  }

  // The devices Gloo's sockets bind (c10d_communicator.h), and where, for messages.
  struct Devices {
    std::vector<std::shared_ptr<::gloo::transport::Device>> devices;
    std::string where;
  };
  static Devices make_devices(const C10dOptions& options) {
    Devices made;
    if (!options.socket_interfaces.empty()) {
      for (const std::string& name : options.socket_interfaces) {
        made.devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
      }
      made.where = fmt::format("interface {}", fmt::join(options.socket_interfaces, ","));
      return made;
    }
    const std::string address = options.world_size == 1 || launch::is_loopback_address(options.master_address)
                                    ? std::string("127.0.0.1")
                                    : launch::local_address_towards(options.master_address);
    made.devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(address));
    made.where = address;
    return made;
  }

  C10dOptions options_;
  c10::intrusive_ptr<c10d::Store> store_;
  Devices devices_;
  // `group`'s process group for CPU tensors (Gloo's) or GPU ones (NCCL's); prepared before.
  const Group& prepared(const std::vector<int>& group, bool gpu) const {
    const auto& groups = gpu ? groups_gpu_ : groups_;
    const auto found = groups.find(group);
    BURST_ASSERT(found != groups.end(), fmt::format("a collective in an unprepared {}", group_key(group)));
    return found->second;
  }

  // The group of all ranks for these tensors: NCCL's for GPU tensors, else Gloo's.
  const Group& world(const std::vector<at::Tensor>& tensors) const {
    BURST_ASSERT(!on_gpu(tensors) || world_gpu_, "GPU tensors in a run without NCCL groups");
    return on_gpu(tensors) ? world_gpu_ : world_;
  }

  Group world_;
  Group world_gpu_;  // null without options_.nccl
  std::map<std::vector<int>, Group> groups_;
  std::map<std::vector<int>, Group> groups_gpu_;
};

}  // namespace

std::unique_ptr<Communicator> make_c10d_communicator(const C10dOptions& options) {
  return std::make_unique<C10dCommunicator>(options);
}

}  // namespace burst::runtime
