#include "burst/graph/data_fit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "burst/util/error.h"

namespace burst::graph {

ModelSamples model_samples(const Graph& graph) {
  ModelSamples samples;
  bool have_input = false;
  for (LayerId id = 0; id < static_cast<LayerId>(graph.size()); ++id) {
    const LayerSpec& layer = graph.layer(id);
    if (layer.op() == OpKind::Input && !have_input) {
      have_input = true;
      samples.sample_shape = graph.info(id).output_shape;
      const auto& input = std::get<InputAttrs>(layer.attrs);
      if (input.dtype == DType::Int64) samples.vocab = input.vocab;
    }
    if (layer.op() == OpKind::SoftmaxCrossEntropy && samples.classes == 0) {
      const Shape& logits = graph.info(graph.inputs(id)[0]).output_shape;
      samples.classes = logits.back();
      samples.labels_per_token = samples.vocab > 0 && logits.size() == 2;
    }
  }
  return samples;
}

void check_fits_samples(const Graph& graph, const SampleSpec& spec) {
  for (LayerId id = 0; id < static_cast<LayerId>(graph.size()); ++id) {
    const LayerSpec& layer = graph.layer(id);
    if (layer.op() == OpKind::Input && graph.info(id).output_shape != spec.sample_shape) {
      throw UserError(fmt::format("model '{}' input '{}' takes samples [{}], but dataset '{}' has [{}]", graph.name(),
                                  layer.name, fmt::join(graph.info(id).output_shape, ", "), spec.data_name,
                                  fmt::join(spec.sample_shape, ", ")));
    }
    if (layer.op() == OpKind::Input && (std::get<InputAttrs>(layer.attrs).dtype == DType::Int64) != spec.tokens) {
      throw UserError(fmt::format("model '{}' input '{}' takes {}, but dataset '{}' has {}", graph.name(), layer.name,
                                  spec.tokens ? "floats" : "token ids", spec.data_name,
                                  spec.tokens ? "token ids" : "float samples"));
    }
    if (layer.op() == OpKind::SoftmaxCrossEntropy) {
      const Shape& logits = graph.info(graph.inputs(id)[0]).output_shape;
      const bool per_token = spec.tokens && spec.labels_per_token;
      const Shape expected = per_token ? Shape{spec.sample_shape.at(0), spec.classes} : Shape{spec.classes};
      if (logits != expected) {
        throw UserError(fmt::format("model '{}' loss '{}' takes logits [{}], but dataset '{}' has {} classes{}",
                                    graph.name(), layer.name, fmt::join(logits, ", "), spec.data_name, spec.classes,
                                    per_token     ? fmt::format(" for each of {} tokens", spec.sample_shape.at(0))
                                    : spec.tokens ? " for each sequence"
                                                  : ""));
      }
    }
  }
}

}  // namespace burst::graph
