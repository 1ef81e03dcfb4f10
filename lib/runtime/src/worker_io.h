#pragma once
// What a training worker reads and writes besides the step: the model and its initial
// weights, the dataset and its batches as tensors, the test accuracy, the saved parameters.
// Internal to lib/runtime.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "burst/data/dataset.h"
#include "burst/data/idx.h"
#include "burst/graph/graph.h"
#include "burst/graph/onnx_import.h"
#include "burst/runtime/train.h"
#include "burst/job/training_data.h"

namespace burst::runtime::detail {

// The model, with the ONNX file's initial weights unless --init seed (or the model is not
// an ONNX file).
graph::ImportedModel load_training_model(const TrainConfig& config);



// Samples [begin, end) of `indices` (one step's batch): features [n] + sample shape (int64
// token ids for token data), labels [n] (or [n, T] next tokens).
torch::Tensor features_of(const data::Dataset& dataset, const std::vector<int64_t>& indices, int64_t begin,
                          int64_t end);
torch::Tensor labels_of(const data::Dataset& dataset, const std::vector<int64_t>& indices, int64_t begin,
                        int64_t end);

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// Every parameter, torch.load-able, written atomically.
void save_parameters(const NamedTensors& state, const std::string& path);

}  // namespace burst::runtime::detail
