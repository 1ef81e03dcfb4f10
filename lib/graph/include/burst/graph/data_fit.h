#pragma once
// Whether a model can train on a dataset: its input layers take the dataset's samples and
// its classifier losses the dataset's classes. The one check the launcher, the workers and
// anything else that feeds data to a graph call (libtorch-free).
#include <cstdint>
#include <string>

#include "burst/graph/graph.h"

namespace burst::graph {

// What a dataset offers per sample.
struct SampleSpec {
  std::string data_name;  // for messages: "fashion-mnist", "synthetic", ...
  Shape sample_shape;     // of one sample, e.g. {1, 28, 28}
  int64_t classes = 0;    // labels in [0, classes)
  bool tokens = false;    // samples are T token ids (sample_shape [T])
  bool labels_per_token = true;  // token samples: T next-token labels, else one label a sample
};

// What the model takes: its (first) input's per-sample shape, the classes of its first
// classifier loss (0: none), and the vocabulary of a token input (0: floats).
struct ModelSamples {
  Shape sample_shape;
  int64_t classes = 0;
  int64_t vocab = 0;
  bool labels_per_token = false;  // token input whose loss takes logits [T, classes]
};
ModelSamples model_samples(const Graph& graph);

// Throws UserError naming the model, the layer and both shapes when an input layer's
// per-sample shape is not spec.sample_shape, or its kind (token ids or floats) is not the
// dataset's, or a loss's logits are not [spec.classes] (token data: [T, spec.classes]).
void check_fits_samples(const Graph& graph, const SampleSpec& spec);

}  // namespace burst::graph
