#include "burst/job/training_data.h"

#include <fmt/format.h>

#include "burst/data/idx.h"
#include "burst/data/user_data.h"
#include "burst/graph/data_fit.h"
#include "burst/util/error.h"

namespace burst::job {
namespace {

data::ModelSamples data_model_samples(const graph::Graph& graph) {
  const graph::ModelSamples model = graph::model_samples(graph);
  if (model.classes < 1) throw UserError(fmt::format("model '{}' has no classifier loss to train", graph.name()));
  return {model.sample_shape, model.classes, model.vocab, model.labels_per_token};
}

data::Dataset load_named_dataset(const TrainConfig& config, const graph::Graph& graph, const std::string& name,
                                 data::Split split) {
  const data::DatasetSpec spec = data::parse_dataset_spec(name);
  if (spec.kind == "fashion-mnist") return data::load_fashion_mnist(config.dataset_dir, split);
  const data::ModelSamples model = data_model_samples(graph);
  if (data::is_user_dataset(spec)) {
    data::UserDataOptions options;
    options.images = {config.image_mean, config.image_std};
    options.token_width = config.token_width == "uint32" ? data::TokenWidth::uint32 : data::TokenWidth::uint16;
    return data::load_user_dataset(spec, model, options);
  }
  // Synthetic samples shaped like the model's input, classes like its first loss's logits;
  // token models (int64 inputs, GPT-2) get token walks over their input's vocabulary.
  data::SyntheticSpec synthetic;
  synthetic.num_samples = split == data::Split::train ? config.synthetic_samples : config.synthetic_samples / 4 + 1;
  synthetic.seed = config.seed + (split == data::Split::train ? 0 : 1);
  synthetic.sample_shape = model.sample_shape;
  synthetic.vocab = model.vocab;
  synthetic.num_classes = model.classes;
  // A sequence classifier (token ids in, logits [classes] out: BERT's) gets one label a sample.
  if (model.vocab > 0 && !model.labels_per_token) synthetic.sequence_classes = model.classes;
  return data::synthetic_dataset(synthetic);
}

}  // namespace

data::Dataset load_training_data(const TrainConfig& config, const graph::Graph& graph) {
  data::Dataset dataset = load_named_dataset(config, graph, config.dataset, data::Split::train);
  graph::check_fits_samples(graph, {dataset.name(), dataset.sample_shape(), dataset.num_classes(), dataset.tokens(),
                                    dataset.labels_per_sample() > 1});
  return dataset;
}

std::optional<data::Dataset> load_validation_data(const TrainConfig& config, const graph::Graph& graph) {
  std::string name = config.val_dataset;
  if (name.empty() && !data::is_user_dataset(data::parse_dataset_spec(config.dataset))) name = config.dataset;
  if (name.empty()) return std::nullopt;
  data::Dataset dataset = load_named_dataset(config, graph, name, data::Split::test);
  graph::check_fits_samples(graph, {dataset.name(), dataset.sample_shape(), dataset.num_classes(), dataset.tokens(),
                                    dataset.labels_per_sample() > 1});
  return dataset;
}

}  // namespace burst::job
