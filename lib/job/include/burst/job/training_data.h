#pragma once
// The data a training run reads, as TrainConfig names it (--dataset, --val-dataset), each
// checked against the model: libtorch-free, so the launcher refuses bad data before any
// worker starts, and the workers open the same datasets the same way.
#include <optional>

#include "burst/data/dataset.h"
#include "burst/graph/graph.h"
#include "burst/job/train_config.h"

namespace burst::job {

// The training data --dataset names; synthetic data is shaped like the model's input,
// classes like its first loss's logits (token walks for token models). UserError for data
// that does not fit the model (graph::check_fits_samples) or does not read.
data::Dataset load_training_data(const TrainConfig& config, const graph::Graph& graph);
// What --val-dataset names; without it, Fashion-MNIST's test split or synthetic data's own,
// and none for users' data.
std::optional<data::Dataset> load_validation_data(const TrainConfig& config, const graph::Graph& graph);

}  // namespace burst::job
