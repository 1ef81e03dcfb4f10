#include "cluster_commands.h"

#include <algorithm>
#include <charconv>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/cluster/cluster.h"
#include "burst/cost/network.h"
#include "burst/util/error.h"
#include "burst/util/json_io.h"
#include "burst/util/table.h"

namespace burst::cli {
namespace {

using Align = TextTable::Align;

// Message sizes of the all-reduce table: a small layer's gradients up to a big model's.
struct MessageSize {
  double bytes;
  const char* label;
};
constexpr MessageSize kMessageSizes[] = {
    {1 << 20, "1 MiB"}, {16 << 20, "16 MiB"}, {256 << 20, "256 MiB"}, {1 << 30, "1 GiB"}};

// Group sizes of the table: 2, one node's worth (8) and the whole cluster, where they fit.
std::vector<int> group_sizes(int devices) {
  std::vector<int> sizes;
  for (const int size : {2, 8, devices}) {
    if (size >= 2 && size <= devices && std::find(sizes.begin(), sizes.end(), size) == sizes.end()) {
      sizes.push_back(size);
    }
  }
  std::sort(sizes.begin(), sizes.end());
  return sizes;
}

std::string time_text(Seconds time) {
  if (time.s() < 1e-3) return fmt::format("{:.1f} us", time.us());
  if (time.s() < 1) return fmt::format("{:.2f} ms", time.ms());
  return fmt::format("{:.2f} s", time.s());
}

std::string link_text(const cluster::Link& link) {
  const double bytes_per_second = link.bandwidth.bytes_per_second();
  return fmt::format("{:g} GB/s ({:g} Gb/s) per direction, latency {:g} us", bytes_per_second / 1e9,
                     bytes_per_second * 8 / 1e9, link.latency.us());
}

struct Row {
  int group_size;
  int nodes;  // nodes the group touches
  MessageSize message;
  cost::AllreduceEstimate estimate;
};

std::vector<Row> allreduce_rows(const cost::NetworkModel& model) {
  const cluster::Cluster& cluster = model.cluster();
  std::vector<Row> rows;
  for (const int size : group_sizes(cluster.size())) {
    // The first `size` ranks: they fill nodes in order, the way a planner packs a group.
    std::vector<int> ranks(static_cast<size_t>(size));
    for (int rank = 0; rank < size; ++rank) ranks[static_cast<size_t>(rank)] = rank;
    const int nodes = cluster.node_of(size - 1) + 1;
    for (const MessageSize& message : kMessageSizes) {
      rows.push_back(Row{size, nodes, message, model.allreduce_estimate(ranks, Bytes(message.bytes))});
    }
  }
  return rows;
}

// A mixed cluster's groups, one line each, and the link between them.
void print_groups(const cluster::Cluster& cluster, std::ostream& out) {
  out << fmt::format("cluster {}: {} devices in {} groups\n", cluster.name(), cluster.size(), cluster.groups().size());
  for (size_t g = 0; g < cluster.groups().size(); ++g) {
    const cluster::DeviceGroup& group = cluster.groups()[g];
    const int last = *group.devices - (group.nodes - 1) * group.devices_per_node;
    out << fmt::format("  group {}: {} {} on {} node{} of {}{} (ranks {}-{}){}\n", g, *group.devices, group.device,
                       group.nodes, group.nodes == 1 ? "" : "s", group.devices_per_node,
                       last == group.devices_per_node ? "" : fmt::format(", the last holding {}", last),
                       cluster.first_rank_of_group(static_cast<int>(g)), cluster.first_rank_of_group(static_cast<int>(g) + 1) - 1,
                       group.memory ? fmt::format(", {:g} GiB each", group.memory->value() / (1024.0 * 1024 * 1024)) : "");
    out << "    intra-node link: " << link_text(group.intra_node) << '\n';
    out << "    inter-node link: " << link_text(group.inter_node) << '\n';
  }
  out << "  between groups:    " << link_text(*cluster.between_groups()) << '\n';
}

void print_one_kind(const cluster::Cluster& cluster, std::ostream& out) {
  const int last_node = cluster.devices_on_node(cluster.nodes() - 1);
  out << fmt::format("cluster {}: {} {} device{}", cluster.name(), cluster.size(), cluster.device(),
                     cluster.size() == 1 ? "" : "s");
  if (cluster.nodes() == 1) {
    out << " on 1 node\n";
  } else if (last_node == cluster.devices_per_node()) {
    out << fmt::format(" on {} nodes of {}\n", cluster.nodes(), cluster.devices_per_node());
  } else {
    out << fmt::format(" on {} nodes of {} (the last node holds {})\n", cluster.nodes(),
                       cluster.devices_per_node(), last_node);
  }
  out << "  intra-node link: " << link_text(cluster.intra_node()) << '\n';
  out << "  inter-node link: " << link_text(cluster.inter_node())
      << (cluster.nodes() == 1 ? " (unused: one node)" : "") << '\n';
}

void print_allreduce_table(const cost::NetworkModel& model, std::ostream& out) {
  const std::vector<Row> rows = allreduce_rows(model);
  if (rows.empty()) {
    out << "One device: there is nothing to all-reduce.\n";
    return;
  }
  out << "Predicted all-reduce times (each rank holds the whole message; groups are the first "
         "ranks):\n";
  TextTable table({{"devices", Align::Right},
                   {"nodes", Align::Right},
                   {"message", Align::Right},
                   {"ring", Align::Right},
                   {"hierarchical", Align::Right},
                   {"chosen", Align::Right},
                   {"algorithm", Align::Left}});
  int previous_group = 0;
  for (const Row& row : rows) {
    if (previous_group != 0 && row.group_size != previous_group) table.add_rule();
    previous_group = row.group_size;
    table.add_row({std::to_string(row.group_size), std::to_string(row.nodes), row.message.label,
                   time_text(row.estimate.ring),
                   row.estimate.hierarchical ? time_text(*row.estimate.hierarchical) : "-",
                   time_text(row.estimate.best()), row.estimate.best_algorithm()});
  }
  table.print(out);
}

void print_cluster(const cost::NetworkModel& model, bool builtin, std::ostream& out) {
  const cluster::Cluster& cluster = model.cluster();
  if (cluster.mixed()) {
    print_groups(cluster, out);
  } else {
    print_one_kind(cluster, out);
  }
  if (builtin) {
    out << "  (built-in defaults, not a measurement: write a cluster file for your machine, see "
           "docs/cluster-format.md)\n";
  }
  out << '\n';
  print_allreduce_table(model, out);
}

nlohmann::json cluster_report_json(const cost::NetworkModel& model, bool builtin) {
  nlohmann::json allreduce = nlohmann::json::array();
  for (const Row& row : allreduce_rows(model)) {
    allreduce.push_back({{"devices", row.group_size},
                         {"first_rank", 0},
                         {"nodes", row.nodes},
                         {"bytes", static_cast<int64_t>(row.message.bytes)},
                         {"ring_s", row.estimate.ring.s()},
                         {"hierarchical_s", row.estimate.hierarchical
                                                ? nlohmann::json(row.estimate.hierarchical->s())
                                                : nlohmann::json(nullptr)},
                         {"chosen", row.estimate.best_algorithm()},
                         {"chosen_s", row.estimate.best().s()}});
  }
  return {{"cluster", cluster::cluster_to_json(model.cluster())},
          {"builtin", builtin},
          {"devices", model.cluster().size()},
          {"allreduce", std::move(allreduce)}};
}

// --devices N: a whole number; anything else, or a number outside [1, kMaxDevices], is
// refused quoting what was typed.
int64_t parse_devices(const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error == std::errc::invalid_argument || stop != end) {
    throw UserError(fmt::format("--devices must be a whole number, got '{}'", text_excerpt(text)));
  }
  if (error == std::errc::result_out_of_range || value < 1 || value > cluster::kMaxDevices) {
    throw UserError(fmt::format("--devices must be between 1 and {}, got {}", cluster::kMaxDevices,
                                text_excerpt(text)));
  }
  return value;
}

}  // namespace

void add_cluster_commands(CLI::App& app) {
  struct Options {
    std::string device;
    std::string devices;  // parsed here, so an out-of-range number is quoted as typed
    std::string file;
    bool json = false;
  };
  auto options = std::make_shared<Options>();

  CLI::App* command = app.add_subcommand(
      "cluster", "Show a cluster (built-in defaults or a cluster file) and predicted all-reduce times");
  std::string kinds;
  for (const std::string& kind : cluster::builtin_device_kinds()) kinds += (kinds.empty() ? "" : ", ") + kind;
  CLI::Option* device = command->add_option("--device", options->device,
                                            "Built-in device kind: " + kinds);
  CLI::Option* devices = command->add_option("--devices", options->devices,
                                             "Number of devices of the built-in cluster, or a mixed one as "
                                             "KIND:N,KIND:N,... (a100:8,v100:8)");
  CLI::Option* file = command->add_option("--cluster", options->file,
                                          "Cluster file (docs/cluster-format.md)");
  device->needs(devices);
  file->excludes(device);
  file->excludes(devices);
  command->add_flag("--json", options->json, "Print JSON instead of tables");
  command->callback([options, device, devices, file] {
    const bool builtin = file->count() == 0;
    // --devices a100:8,v100:8 names its kinds; a count needs --device.
    const bool listed = devices->count() > 0 && options->devices.find(':') != std::string::npos;
    if (builtin && device->count() == 0 && !listed) {
      throw UserError("burst cluster needs --device KIND --devices N, --devices KIND:N,KIND:N,... or --cluster FILE");
    }
    if (listed && device->count() > 0) {
      throw UserError(fmt::format("--devices '{}' names its device kinds: it takes no --device", options->devices));
    }
    const cost::NetworkModel model(
        !builtin ? cluster::load_cluster_file(options->file)
                 : listed ? cluster::builtin_mixed_cluster(options->devices, "")
                          : cluster::builtin_cluster(options->device, parse_devices(options->devices)));
    if (options->json) {
      std::cout << cluster_report_json(model, builtin).dump(2) << '\n';
    } else {
      print_cluster(model, builtin, std::cout);
    }
  });
}

}  // namespace burst::cli
