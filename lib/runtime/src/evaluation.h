#pragma once
// Validation (--eval-every and the end of a run), internal to lib/runtime: the whole
// validation set through the gathered model, in eval mode, shared among the ranks.
#include <cstdint>

#include <torch/torch.h>

#include "burst/data/dataset.h"
#include "burst/graph/graph.h"
#include "burst/runtime/communicator.h"
#include "worker_io.h"

namespace burst::runtime::detail {

struct Evaluation {
  double loss = 0;      // mean over the samples of the first loss (a token model's: over its tokens)
  double accuracy = 0;  // of the first loss's argmax, over every label
  int64_t samples = 0;
};

// Collective: every rank calls it alike. Rank 0's `state` (gather_parameters') is sent to
// every rank; the set is cut into chunks of kEvaluationChunk samples, chunk c evaluated on
// rank c % ranks, and the chunks' sums added in chunk order on every rank: the result is
// one process's, bit for bit, on any number of ranks. `dtype`: the run's.
Evaluation evaluate(const graph::Graph& graph, const NamedTensors& state, const data::Dataset& dataset,
                    Communicator& communicator, torch::Dtype dtype);

inline constexpr int64_t kEvaluationChunk = 256;

}  // namespace burst::runtime::detail
