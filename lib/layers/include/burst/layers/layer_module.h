#pragma once
// Graph layers as torch code: where a graph op (burst/graph/op.h) becomes a torch::nn module.
// The profiler measures these modules; the runtime trains with them. This header includes
// libtorch: include it only from code that links burst_layers.
//
// Tensors are batch-first. A layer input whose per-sample shape is [C, H, W] arrives as
// [B, C, H, W]; token ids [T] as int64 [B, T]; a per-sample scalar [] as [B]. Every module's
// output is [B] + graph.info(id).output_shape.
//
// Losses: a softmax_cross_entropy module returns one loss per sample, [B] (the per-sample
// scalar [] of the graph), already scaled by the layer's weight, and never averages over the
// batch: a device holds only a slice of the global batch. Callers sum the per-sample losses
// of every loss layer and divide by the *global* batch; that equals PyTorch's mean-reduced
// cross-entropy over the whole batch on one device. For [B, T, C] logits a sample's loss is
// the mean over its T tokens.
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "burst/graph/graph.h"
#include "burst/graph/onnx_import.h"
#include "burst/layers/sample_random.h"

namespace burst::layers {

// One graph layer. Holds its state in a torch::nn::Module (see module()).
class LayerModule {
 public:
  virtual ~LayerModule() = default;
  LayerModule(const LayerModule&) = delete;
  LayerModule& operator=(const LayerModule&) = delete;

  // Runs the layer on a batch. `inputs` are the outputs of the layer's graph inputs, in
  // LayerSpec::inputs order, batch-first, with these extras:
  //  - input: the batch itself ([B] + shape, float32 or int64 ids), returned unchanged.
  //  - softmax_cross_entropy: the labels as a last input, int64 [B] for logits [B, C] or
  //    [B, T] for logits [B, T, C].
  // Random ops (dropout, attention dropout) draw by `key` and the layer id, per global
  // sample (sample_random.h); the default key suits profiling and one-off runs.
  // Checks the input count (an internal invariant: BURST_ASSERT); torch checks the shapes.
  torch::Tensor forward(const std::vector<torch::Tensor>& inputs, const RandomKey& key = {});

  // How many tensors forward() takes (graph inputs, plus one for an input layer's batch or
  // a loss's labels).
  size_t arity() const { return arity_; }

  // The torch module holding this layer's state: for train()/eval() (dropout, BatchNorm),
  // to(device), named_parameters(), buffers() (BatchNorm's running statistics) and
  // serialisation. Parameter names follow torch.nn: "weight", "bias", MultiheadAttention's
  // "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias".
  torch::nn::Module& module() { return *module_; }
  const torch::nn::Module& module() const { return *module_; }

  // Trainable parameters this layer owns; their element count is graph.info(id).params. A
  // tied linear's weight is not among them: it belongs to the embedding it is tied to.
  std::vector<torch::Tensor> parameters() const { return module_->parameters(); }

  // Every tensor the layer's backward computes a weight gradient for: parameters() plus a
  // tied linear's weight (borrowed from the embedding, or its stand-in; see
  // LayerModuleOptions). The profiler times "backward w.r.t. weights" against these.
  std::vector<torch::Tensor> weight_tensors() const;

 protected:
  // `module` owns the layer's parameters and buffers (an empty module for stateless ops);
  // `extra_weights` are weight tensors it uses without owning (a tied linear's weight).
  LayerModule(std::shared_ptr<torch::nn::Module> module, size_t arity,
              std::vector<torch::Tensor> extra_weights = {});

 private:
  // forward() after the input count check.
  virtual torch::Tensor run(const std::vector<torch::Tensor>& inputs, const RandomKey& key) = 0;

  std::shared_ptr<torch::nn::Module> module_;
  size_t arity_;
  std::vector<torch::Tensor> extra_weights_;
};

struct LayerModuleOptions {
  // For a linear layer with `tied_to`: the embedding's weight, [num_embeddings, dim]
  // (that embedding module's parameters()[0]). Shared, not copied, so both layers' gradients
  // accumulate into it. Undefined: the layer gets its own stand-in weight of that shape (an
  // untied twin that computes the same, which is all profiling needs). Either way the weight
  // stays out of parameters(), so the count matches the graph. Ignored for other layers.
  // Tie after moving the embedding to its device: module().to() moves only owned tensors.
  torch::Tensor tied_weight;
};

// Builds the module for layer `id` of `graph`, initialised as torch.nn initialises it (from
// torch's global generator: seed it with torch::manual_seed for reproducible weights), in
// training mode, on the CPU in float32. Throws UserError for a tied weight of the wrong shape.
std::unique_ptr<LayerModule> make_layer_module(const graph::Graph& graph, graph::LayerId id,
                                               const LayerModuleOptions& options = {});

// Moves every parameter and buffer of `layer` (its submodules included) to `device` and
// casts the floating point ones to `dtype`, in place, keeping integer buffers (BatchNorm's
// num_batches_tracked) as they are: torch::nn::Module::to(dtype) would cast those too.
void place_layer(LayerModule& layer, torch::Device device, torch::Dtype dtype);

// Copies a layer's initial tensors (an imported model's, burst/graph/onnx_import.h) into
// its module: the parameters in order (weight, bias), then the floating-point buffers in
// order (BatchNorm's running_mean, running_var). Throws UserError naming the layer and the
// tensor when a count or a shape differs from the module's.
void load_initial_weights(LayerModule& layer, const graph::LayerWeights& weights,
                          const std::string& layer_name);

// The name under which tensor `key` of layer `id`'s module is saved (--save-params):
// "<layer>.<key>", as a torch state_dict names a submodule's tensors, except for the class
// token and the position embedding, whose single parameter torchvision's ViT names after
// the module itself ("class_token", "encoder.pos_embedding").
std::string state_name(const graph::Graph& graph, graph::LayerId id, const std::string& key);

// Random inputs for forward() of layer `id` at batch `batch` (>= 1), from torch's global
// generator: float32 inputs N(0, 1); int64 token ids uniform in [0, vocab) (bounded also by
// a consuming embedding's num_embeddings); a loss's labels uniform in [0, classes).
std::vector<torch::Tensor> random_inputs(const graph::Graph& graph, graph::LayerId id,
                                         int64_t batch);

}  // namespace burst::layers
