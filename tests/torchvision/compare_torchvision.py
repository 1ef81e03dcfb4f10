#!/usr/bin/env python3
"""Compares burst's zoo with torchvision: parameter counts and per-layer output shapes.

Usage: compare_torchvision.py BURST_BINARY [MODEL ...]

For each model (default: all of MODELS below) it builds the torchvision model with random
weights, counts its parameters and compares them with `burst model show NAME --json`
totals.params. For the models in SHAPE_MODELS it also runs one forward pass (train mode,
batch 2, no grad) with a forward hook on every module, and compares each module's output
shape (without the batch dimension) with the output_shape of the burst layer of the same
qualified name. Container modules (a ResNet bottleneck, an Inception block, a ViT encoder
block) are compared with the burst layer that produces their output (CONTAINER_OUTPUT).

For the models in STATE_MODELS, where `burst train` exists, it trains one step and checks
that --save-params holds every torchvision parameter and BatchNorm statistic under its
state_dict name and in its shape, as docs/model-format.md promises (so
model.load_state_dict(torch.load(file), strict=False) takes them back).

It fails (exit 1) when a parameter count differs, when a saved name or shape differs, when a module that owns parameters
(conv, batchnorm, linear, layernorm, embedding, attention) has no burst layer of its name,
or when a compared shape differs. Modules called more than once per forward pass (ResNet's
shared ReLU) are skipped. Needs torch and torchvision (tested with 1.13 / 0.14).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torchvision

MODELS = ["vgg16", "resnet50", "wide_resnet50_2", "wide_resnet101_2", "inception_v3", "vit_b_16"]
SHAPE_MODELS = {"vgg16", "resnet50", "inception_v3", "vit_b_16"}
STATE_MODELS = {"resnet50", "inception_v3", "vit_b_16"}

# Modules that own parameters and must each have a burst layer of the same name.
PARAMETER_MODULES = (nn.Conv2d, nn.BatchNorm2d, nn.Linear, nn.LayerNorm, nn.Embedding,
                     nn.MultiheadAttention)

# Container class -> suffix of the burst layer that computes the container's output.
CONTAINER_OUTPUT = {
    "Bottleneck": "relu3",     # ResNet: relu(bn3(conv3(...)) + identity)
    "BasicConv2d": "relu",     # Inception: relu(bn(conv(x)))
    "InceptionA": "concat",
    "InceptionB": "concat",
    "InceptionC": "concat",
    "InceptionD": "concat",
    "InceptionE": "concat",
    "InceptionAux": "fc",
    "EncoderBlock": "add_2",   # ViT: x + mlp(ln_2(x)) after the attention residual
    "Encoder": "ln",           # ViT: ln(layers(dropout(x + pos_embedding)))
}


def build_torch_model(name):
    if name == "inception_v3":
        return torchvision.models.inception_v3(aux_logits=True, init_weights=False)
    return getattr(torchvision.models, name)()


def image_size(name):
    return 299 if name == "inception_v3" else 224


def burst_report(burst, name):
    result = subprocess.run([burst, "model", "show", name, "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"burst model show {name} --json exited with {result.returncode}: "
                           f"{result.stderr.strip()}")
    return json.loads(result.stdout)


def first_tensor(output):
    """A module's output tensor: MultiheadAttention returns (output, weights)."""
    if isinstance(output, torch.Tensor):
        return output
    if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        return output[0]
    return None


def record_shapes(model, size):
    """Runs one forward pass; returns ({name: shape}, {name: call count}, {name: module})."""
    shapes, calls, modules, handles = {}, {}, {}, []
    for qualified, module in model.named_modules():
        if qualified == "":
            continue  # the whole model: its output is the logits (or Inception's pair)
        modules[qualified] = module

        def hook(_module, _inputs, output, qualified=qualified):
            calls[qualified] = calls.get(qualified, 0) + 1
            tensor = first_tensor(output)
            if calls[qualified] == 1 and tensor is not None:
                shapes[qualified] = list(tensor.shape[1:])

        handles.append(module.register_forward_hook(hook))
    model.train()
    with torch.no_grad():
        model(torch.randn(2, 3, size, size))
    for handle in handles:
        handle.remove()
    return shapes, calls, modules


def compare_shapes(name, model, report):
    """Returns (compared count, list of problems)."""
    burst_shapes = {layer["name"]: layer["output_shape"] for layer in report["layers"]}
    shapes, calls, modules = record_shapes(model, image_size(name))
    problems = []
    compared = skipped_repeated = 0
    for qualified, module in modules.items():
        count = calls.get(qualified, 0)
        if count == 0:
            continue  # never called (e.g. MultiheadAttention.out_proj, used by weight only)
        if count > 1:
            skipped_repeated += 1
            continue
        if qualified not in shapes:
            continue  # no tensor output
        owns_parameters = isinstance(module, PARAMETER_MODULES)
        target = qualified
        if qualified not in burst_shapes:
            suffix = CONTAINER_OUTPUT.get(type(module).__name__)
            if suffix is not None:
                target = f"{qualified}.{suffix}"
        if target not in burst_shapes:
            if owns_parameters or target != qualified:
                problems.append(f"{type(module).__name__} '{qualified}' output {shapes[qualified]}: "
                                f"no burst layer '{target}'")
            continue
        compared += 1
        if burst_shapes[target] != shapes[qualified]:
            problems.append(f"{type(module).__name__} '{qualified}': torch {shapes[qualified]}, "
                            f"burst '{target}' {burst_shapes[target]}")
    return compared, skipped_repeated, problems


def has_train(burst):
    return subprocess.run([burst, "train", "--help"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def compare_state(burst, name, model):
    """Names and shapes of one step's --save-params against the model's state_dict."""
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "params.pt")
        result = subprocess.run([burst, "train", "--model", name, "--global-batch", "2",
                                 "--synthetic-samples", "2", "--steps", "1", "--save-params", path],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if result.returncode != 0:
            return 0, [f"burst train exited {result.returncode}: {result.stderr.strip()}"]
        saved = torch.load(path)
    problems = []
    wanted = {k: v for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}
    for key, value in wanted.items():
        if key not in saved:
            problems.append(f"state_dict '{key}' {list(value.shape)} is not saved by burst")
        elif list(saved[key].shape) != list(value.shape):
            problems.append(f"'{key}': torch {list(value.shape)}, burst {list(saved[key].shape)}")
    return len(wanted), problems


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 64
    burst = sys.argv[1]
    names = sys.argv[2:] or MODELS
    torch.set_num_threads(2)
    torch.manual_seed(0)
    failed = []
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}")
    for name in names:
        started = time.time()
        report = burst_report(burst, name)
        model = build_torch_model(name)
        torch_params = sum(p.numel() for p in model.parameters())
        burst_params = report["totals"]["params"]
        problems = []
        if torch_params != burst_params:
            problems.append(f"parameters: torch {torch_params}, burst {burst_params} "
                            f"(difference {burst_params - torch_params:+d})")
        line = f"{name}: params torch {torch_params:,} burst {burst_params:,}"
        if name in SHAPE_MODELS:
            compared, skipped, shape_problems = compare_shapes(name, model, report)
            problems += shape_problems
            line += (f"; {compared} layer shapes compared ({skipped} modules called more than "
                     f"once skipped)")
        if name in STATE_MODELS and has_train(burst):
            compared, state_problems = compare_state(burst, name, model)
            problems += state_problems[:10]
            line += f"; {compared} state_dict entries compared"
        del model
        line += f"; {len(problems)} mismatches ({time.time() - started:.1f} s)"
        print(line, flush=True)
        for problem in problems:
            print(f"  MISMATCH {name}: {problem}")
        if problems:
            failed.append(name)
    if failed:
        print(f"FAILED: {', '.join(failed)} differ from torchvision")
        return 1
    print(f"all {len(names)} models match torchvision")
    return 0


if __name__ == "__main__":
    sys.exit(main())
