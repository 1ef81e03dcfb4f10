#pragma once
// Measures a model's layers on the local CPU with libtorch and fills a profile table
// (burst/cost/profile.h). See docs/profiler.md for what is measured and how.
//
// This header is libtorch-free (the library links libtorch privately), so the burst command
// includes it without torch's compile cost.
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "burst/cost/profile.h"
#include "burst/graph/graph.h"
#include "burst/util/units.h"

namespace burst::profiler {

// Where a run stands; passed to ProfileOptions::on_signature after each signature.
struct ProfileStatus {
  size_t signatures_done = 0;   // distinct layer signatures finished (measured or reused)
  size_t signatures_total = 0;  // distinct layer signatures of the model
  int64_t entries_measured = 0;  // (signature, batch) entries measured so far in this run
  int64_t entries_reused = 0;    // entries kept from the existing output file
  Seconds elapsed;
};

struct ProfileOptions {
  // Intra-op threads (torch::set_num_threads, which is process-wide and left set). One
  // thread by default: see docs/profiler.md.
  int threads = 1;

  // Where the layers run: "cpu", or "cuda" (GPU 0, every layer timed between CUDA events;
  // the profile's device is the GPU's catalog kind, e.g. "h200"). UserError for "cuda" in a
  // build without CUDA or on a machine without a GPU.
  std::string device = "cpu";

  // Devices of one node that run the same layer at the same moment (>= 1). With N > 1, each
  // measurement runs while N - 1 other threads run the same work (the same layer, part and
  // batch, on their own copies) over and over: what one device of a node sees when the
  // layer is split over N of the node's devices, which compute it in lockstep and share the
  // node's memory bandwidth and caches (CPU devices; docs/profiler.md). The description
  // records it ("2 co-located").
  int co_located = 1;

  // Each measurement (forward, full backward, input-gradient and weight-gradient backward,
  // of one signature at one batch): `warmup` untimed runs, then timed runs until at least
  // `min_repetitions` are taken and the median of the last half of the samples is within
  // `stable_within` (relative) of the median of all of them, or the measurement has used
  // `time_budget` (still at least `min_repetitions`), or `max_repetitions` are taken.
  int warmup = 2;
  int min_repetitions = 5;
  int max_repetitions = 100;
  double stable_within = 0.02;
  Seconds time_budget{1.0};

  // Part counts k (each in [2, 1024]) whose tensor-split parts are measured too: for every
  // linear and self_attention layer, part 0 of each column, row and heads split into k
  // parts that divides it (docs/profiler.md, "Tensor splits"), as the runtime runs it but
  // without its all-reduces; entries with ProfileEntry::split set. Empty: whole layers only.
  std::vector<int32_t> tensor_parts;
  // Seeds torch's generator before each module and each batch's inputs, so a signature's
  // weights and inputs do not depend on what was measured before it.
  uint64_t seed = 1;

  // Profile file to resume from and to rewrite atomically after each signature; empty for
  // none. If it exists it must hold the same device and description (CPU model, threads,
  // libtorch version): its entries are kept and (signature, batch) pairs already present are
  // not measured again. Otherwise UserError asks for another path.
  std::string output_path;

  // Progress on `progress` (nullptr: none): with `redraw` one line rewritten with '\r' (a
  // terminal), otherwise a line about every 10% of the signatures.
  std::ostream* progress = nullptr;
  bool redraw = false;

  // Called after each signature (measured or skipped), e.g. to count work in tests.
  std::function<void(const ProfileStatus&)> on_signature;
};

// Measures every distinct layer signature (graph::layer_signature) of `graph` at each batch
// size (positive; duplicates are ignored). Returns the profile: device "cpu",
// description from cpu_description(), the entries kept from `output_path` followed by the
// new ones. Throws UserError for bad options, a mismatched output file, or a layer libtorch
// cannot run at a batch (message naming the layer and batch).
cost::Profile profile_model(const graph::Graph& graph, const std::vector<int64_t>& batch_sizes,
                            const ProfileOptions& options);

// "AMD EPYC 7B13, 1 thread, libtorch 1.13.0": the CPU model from /proc/cpuinfo (or "unknown
// CPU"), the thread count and the libtorch version the profiler was compiled against.
// With co_located > 1 it says so: "AMD EPYC 7B13, 1 thread, 2 co-located, libtorch 1.13.0".
std::string cpu_description(int threads, int co_located = 1);

}  // namespace burst::profiler
