"""Exports torchvision classification models (and the models in users' style of
user_models.py, named "user:NAME") to ONNX the way docs/model-import.md tells users to, and
writes what PyTorch says about each (parameter count, output shape) beside it.

usage: .venv/bin/python tests/onnx/export_torchvision.py OUT_DIR [--image-size N] [--no-dropout] MODEL...

For every MODEL it writes OUT_DIR/MODEL.onnx and OUT_DIR/MODEL.facts.json:
  {"parameters": trainable parameter count, "output": per-sample output shape,
   "input": per-sample input shape, "state_dict": {name: shape} of the trainable parameters}
Models are built with weights=None after torch.manual_seed(0), in training mode.
"""
import argparse
import json
import os
import sys

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import user_models  # noqa: E402

# Constructor options that make a model exportable in training mode (see docs/model-import.md).
OPTIONS = {
    "googlenet": {"aux_logits": False, "init_weights": True},
    "inception_v3": {"aux_logits": False, "init_weights": True},
    "efficientnet_b0": {"stochastic_depth_prob": 0.0},
    "convnext_tiny": {"stochastic_depth_prob": 0.0},
}


def build(name, dropout=None):
    """torchvision's model NAME, weights=None, seed 0; every Dropout's p set to `dropout` if given."""
    torch.manual_seed(0)
    if name.startswith("user:"):  # a model in users' style (user_models.py)
        model = user_models.build(name[len("user:"):])
    elif name.startswith("hf:"):  # Hugging Face transformers from a config (hf_models.py)
        import hf_models
        model = hf_models.build(name[len("hf:"):])
    else:
        model = getattr(torchvision.models, name)(weights=None, **OPTIONS.get(name, {}))
    # ViT zero-initialises its head: the first step's gradient would then stop there, and a
    # parity check of one step would test the head alone. Such layers get nn.Linear's
    # default initialisation instead (seeded above).
    for module in model.modules():
        if isinstance(module, torch.nn.Linear) and not module.weight.detach().any():
            module.reset_parameters()
    if dropout is not None:
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = dropout
    return model.train()


def input_spec(model, image_size):
    """(kind, per-sample shape, vocab) of `model`'s input: a user model's INPUT, else images."""
    return getattr(model, "INPUT", ("float", [3, image_size, image_size], 0)) + ((0,) if len(getattr(model, "INPUT", ())) == 2 else ())


def sample_input(model, image_size, batch=2):
    """A batch of `model`'s inputs: random images (or volumes), or token ids."""
    kind, shape, vocab = input_spec(model, image_size)
    if kind == "tokens":
        return torch.randint(0, vocab, (batch, *shape))
    return torch.randn(batch, *shape)


def export_model(model, name, out_dir, image_size):
    """Exports `model` to OUT_DIR/NAME.onnx with the command users are told to run."""
    path = os.path.join(out_dir, name + ".onnx")
    sample = sample_input(model, image_size)
    # Tracing runs the model: keep its BatchNorm statistics as they were (the file gets the
    # model's weights before any step).
    state = {k: v.clone() for k, v in model.state_dict().items()}
    # dynamo=False: torch 2.x's TorchScript exporter. It exports the training graph
    # (BatchNorm with batch statistics, Dropout) with initializers under their state_dict
    # names, which is what burst trains from; the torch.export-based exporter (the default
    # from 2.9) exports the inference graph and needs onnxscript.
    torch.onnx.export(model, sample, path, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=14, dynamo=False,
                      input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    model.load_state_dict(state)
    return path


def output_shape(model, image_size):
    """The per-sample output shape of `model`, leaving its BatchNorm statistics unchanged."""
    state = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        shape = list(model(sample_input(model, image_size)).shape[1:])
    model.load_state_dict(state)
    return shape


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir")
    parser.add_argument("models", nargs="+")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--no-dropout", action="store_true", help="export every Dropout with p = 0")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for name in args.models:
        model = build(name, 0.0 if args.no_dropout else None)
        export_model(model, name, args.out_dir, args.image_size)
        facts = {
            "parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
            "input": list(input_spec(model, args.image_size)[1]),
            "output": output_shape(model, args.image_size),
            "state_dict": {k: list(p.shape) for k, p in model.named_parameters()},
            # Whether any Dropout draws (p > 0): a file without is also check_parity.py's.
            "dropout": any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in model.modules()),
        }
        with open(os.path.join(args.out_dir, name + ".facts.json"), "w") as f:
            json.dump(facts, f)
        print(f"exported {name}", file=sys.stderr)


if __name__ == "__main__":
    main()
