#!/usr/bin/env python3
"""PyTorch DDP peer for any burst model: reads a burst model file, builds an nn.Module that runs
its layer DAG in graph order with one torch.nn module per layer, and trains it with
DistributedDataParallel over gloo on N local processes (bench/runtime_vs_ddp.sh's DDP rows).

    burst model export fmnist_cnn -o m.json; burst model show m.json --json >show.json
    .venv/bin/python bench/ddp_peer.py --model-file m.json --model-json show.json --check-model
    .venv/bin/python bench/ddp_peer.py --model-file m.json --nproc 2 --global-batch 16 --steps 60 --warmup 20

Model. --model-file is a burst model file (docs/model-format.md; zoo models: `burst model
export NAME -o FILE`). --model-json is `burst model show MODEL --json`, whose layers carry
shapes and parameter counts but no op attributes, so it serves to check the model; it can
stand in for --model-file only if its layers carry the attributes. The module of layer L is
registered under L's name, dots making a module path as in torchvision (layer `block1.conv1`
is child `conv1` of `block1`), so state_dict() keys are burst's parameter names
(`block1.conv1.weight`, `bn1.running_mean`, ...), those of `burst train --save-params`.
Ops: input, conv2d, batchnorm2d, relu, gelu, maxpool2d, avgpool2d, adaptive_avgpool2d,
linear, flatten, dropout, add, concat, layernorm, embedding, position_embedding, class_token,
image_to_tokens, take_token, self_attention (nn.MultiheadAttention) and the loss
softmax_cross_entropy; a linear with tied_to shares the embedding's weight.

Loss, as burst's: each loss layer gives per-sample CrossEntropyLoss(reduction='none') (the
mean over tokens for [T, classes] logits) times its weight; they add up per sample, and the
loss is that sum over the batch divided by the batch. burst divides by the global batch and
sums gradients over ranks; here each rank divides by its local batch and DDP averages the
gradients over the N ranks: the same gradient. The logged loss is rank 0's.

BatchNorm: --batchnorm local is the only mode. DDP's BatchNorm2d normalises each rank by its
own samples (SyncBatchNorm is CUDA-only in torch 1.13), like `burst train --batchnorm local`;
burst's default (sync) normalises over all the layer's ranks. DDP runs with its defaults
(broadcast_buffers=True: rank 0's running statistics are broadcast at every forward; 25 MiB
buckets); find_unused_parameters only when some parameter cannot reach a loss.

--check-model compares the module with --model-json: the layers and their order, every
layer's per-sample output shape, dtype and parameter count, and the total; it prints one
summary line, or on a mismatch one line per problem and exits 1. --init FILE loads every parameter and buffer from a
`burst train --save-params` file (strict: the same names and shapes), so both sides start
from the same weights; without it the weights are torch's defaults after
torch.manual_seed(--seed), the same on every rank.

Rank 0 times every step (zero_grad, the batch, forward, loss, backward with DDP's bucketed
all-reduce, optimizer step, loss.item(): the span burst's ms/iter covers) and prints
    ddp: steady ms/iter M over N steps (skipped W warm-up steps)
Synthetic data: features N(0, 1) of the input layer's shape (int64 inputs: ids uniform in
[0, vocab)), labels uniform in [0, classes) (classes: the first loss's logits' last dim);
8 batches per rank made before training and cycled, so no data generation is timed.
--nproc 1 runs the same loop in this process, without DDP or a process group.
bench/ddp_peer_parity.py checks this model's step-1 loss and gradients against burst train's.
"""
import argparse
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


class ModelError(Exception):
    """A model this script cannot build, or one that differs from burst's."""


REQUIRED = object()
# Every op's attributes and their defaults (docs/model-format.md); REQUIRED: no default.
ATTRIBUTES = {
    "input": {"shape": REQUIRED, "dtype": "float32", "vocab": None},
    "conv2d": {"out_channels": REQUIRED, "kernel": REQUIRED, "stride": 1, "padding": 0, "dilation": 1,
               "groups": 1, "bias": True},
    "batchnorm2d": {"eps": 1e-5, "momentum": 0.1},
    "relu": {},
    "gelu": {"approximate": "none"},
    "maxpool2d": {"kernel": REQUIRED, "stride": None, "padding": 0, "ceil_mode": False},
    "avgpool2d": {"kernel": REQUIRED, "stride": None, "padding": 0, "ceil_mode": False,
                  "count_include_pad": True},
    "adaptive_avgpool2d": {"output": 1},
    "linear": {"out_features": REQUIRED, "bias": True, "tied_to": None},
    "flatten": {},
    "dropout": {"p": 0.5},
    "add": {},
    "concat": {"axis": 0},
    "layernorm": {"eps": 1e-5},
    "embedding": {"num_embeddings": REQUIRED, "dim": REQUIRED},
    "position_embedding": {"max_positions": REQUIRED},
    "class_token": {},
    "image_to_tokens": {},
    "take_token": {"index": 0},
    "self_attention": {"heads": REQUIRED, "causal": False, "dropout": 0.0},
    "softmax_cross_entropy": {"weight": 1.0},
}
LOSS = "softmax_cross_entropy"
# Fields of `burst model show --json` layers that are not op attributes.
SHOW_FIELDS = {"id", "forward_flops", "output_bytes", "output_dtype", "output_shape", "params"}


class Layer:
    """One layer of the model file: name, op, input names, attributes (defaults filled in)."""

    def __init__(self, name, op, inputs, attrs):
        self.name, self.op, self.inputs, self.attrs = name, op, inputs, attrs


def read_model(path):
    """(model name, layers in graph order) from a burst model file, or from `burst model
    show --json` output if its layers carry the op attributes."""
    with open(path) as f:
        doc = json.load(f)
    layers = doc.get("layers") if isinstance(doc, dict) else None
    if not isinstance(layers, list) or not layers:
        raise ModelError(f"{path}: no 'layers' list")
    if doc.get("format") == "burst.model":
        if doc.get("version") != 1:
            raise ModelError(f"{path}: burst.model version {doc.get('version')}, this script reads version 1")
    elif not any(layer.get("op") == "input" and "shape" in layer for layer in layers):
        raise ModelError(f"{path} has no op attributes (`burst model show --json` output?): pass the model "
                         f"file as --model-file (zoo models: burst model export NAME -o FILE)")
    result = []
    for index, layer in enumerate(layers):
        name, op = layer.get("name"), layer.get("op")
        where = f"layer #{index} '{name}' ({op})"
        if not isinstance(name, str) or not name:
            raise ModelError(f"layer #{index}: no name")
        if op not in ATTRIBUTES:
            raise ModelError(f"{where}: op '{op}' has no PyTorch mapping in this script")
        known = ATTRIBUTES[op]
        unknown = sorted(set(layer) - {"name", "op", "inputs"} - SHOW_FIELDS - set(known))
        if unknown:
            raise ModelError(f"{where}: unknown field(s) {', '.join(unknown)}")
        attrs = {}
        for key, default in known.items():
            if key not in layer and default is REQUIRED:
                raise ModelError(f"{where}: field '{key}' is missing")
            attrs[key] = layer.get(key, default)
        result.append(Layer(name, op, list(layer.get("inputs", [])), attrs))
    return doc.get("name", "model"), graph_order(result)


def graph_order(layers):
    """Topological order that keeps the file's order where it is topological: each time the
    first layer in file order whose inputs are all placed."""
    names = [layer.name for layer in layers]
    if len(set(names)) != len(names):
        raise ModelError(f"duplicate layer names: {sorted({n for n in names if names.count(n) > 1})}")
    known = set(names)
    for layer in layers:
        missing = [i for i in layer.inputs if i not in known]
        if missing:
            raise ModelError(f"layer '{layer.name}' ({layer.op}): unknown input(s) {missing}")
    placed, order, pending = set(), [], list(layers)
    while pending:
        ready = next((l for l in pending if all(i in placed for i in l.inputs)), None)
        if ready is None:
            raise ModelError(f"the layers {[l.name for l in pending]} form a cycle")
        pending.remove(ready)
        placed.add(ready.name)
        order.append(ready)
    return order


def pair(value):
    if isinstance(value, int):
        return (value, value)
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return tuple(value)
    raise ModelError(f"window attribute {value!r}: need an integer or [h, w]")


class Add(nn.Module):
    def forward(self, *xs):
        out = xs[0] + xs[1]
        for x in xs[2:]:
            out = out + x
        return out


class Concat(nn.Module):
    def __init__(self, axis):
        super().__init__()
        self.dim = axis + 1  # the axis is per sample; the batch dim shifts it by one

    def forward(self, *xs):
        return torch.cat(xs, self.dim)


class PositionEmbedding(nn.Module):
    """[B, T, D] + weight[:T]; weight [max_positions, D] ~ N(0, 0.02), as burst's."""

    def __init__(self, max_positions, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(max_positions, dim).normal_(0.0, 0.02))

    def forward(self, x):
        return x + self.weight[: x.size(1)]


class ClassToken(nn.Module):
    """Prepends a learned token (zeros at start): [B, T, D] -> [B, T + 1, D]."""

    def __init__(self, dim):
        super().__init__()
        self.token = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return torch.cat([self.token.view(1, 1, -1).expand(x.size(0), 1, -1), x], 1)


class ImageToTokens(nn.Module):
    def forward(self, x):
        return x.flatten(2).transpose(1, 2)  # [B, C, H, W] -> [B, H*W, C]


class TakeToken(nn.Module):
    def __init__(self, index):
        super().__init__()
        self.index = index

    def forward(self, x):
        return x.select(1, self.index)  # [B, T, D] -> [B, D]


class SelfAttention(nn.MultiheadAttention):
    """nn.MultiheadAttention on [B, T, D] (in_proj_weight, in_proj_bias, out_proj: burst's names)."""

    def __init__(self, dim, heads, causal, dropout):
        super().__init__(dim, heads, dropout=dropout, batch_first=True)
        self.causal = causal

    def forward(self, x):
        mask = None
        if self.causal:
            mask = torch.ones(x.size(1), x.size(1), dtype=torch.bool, device=x.device).triu(1)
        return super().forward(x, x, x, need_weights=False, attn_mask=mask)[0]


class SoftmaxCrossEntropy(nn.Module):
    """Per-sample loss [B] from logits [B, C] or [B, T, C] and labels [B] or [B, T], times weight."""

    def __init__(self, weight):
        super().__init__()
        self.weight = weight

    def forward(self, logits, labels):
        # CrossEntropyLoss(reduction="none"), without a child module (the layer's name is its path).
        # No-op steps (the mean over one label, a weight of 1) are left out, as a user would.
        if logits.dim() == 2:
            per_sample = F.cross_entropy(logits, labels, reduction="none")
        else:
            per_label = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), reduction="none")
            per_sample = per_label.view(logits.size(0), -1).mean(1)
        return per_sample if self.weight == 1.0 else per_sample * self.weight


def make_module(layer, inputs):
    """The torch.nn module of one layer, given its inputs (example tensors with a batch dim)."""
    a, op = layer.attrs, layer.op
    arity = {"input": 0, "add": None, "concat": None}.get(op, 1)
    if arity is None and len(inputs) < 2:
        raise ModelError(f"{op} takes 2 or more inputs, got {len(inputs)}")
    if arity is not None and len(inputs) != arity:
        raise ModelError(f"{op} takes {arity} input(s), got {len(inputs)}")
    x = inputs[0] if inputs else None
    if op == "input":
        return nn.Identity()
    if op == "conv2d":
        return nn.Conv2d(x.size(1), a["out_channels"], pair(a["kernel"]), stride=pair(a["stride"]),
                         padding=pair(a["padding"]), dilation=pair(a["dilation"]), groups=a["groups"],
                         bias=a["bias"])
    if op == "batchnorm2d":
        return nn.BatchNorm2d(x.size(1), eps=a["eps"], momentum=a["momentum"])
    if op == "relu":
        return nn.ReLU()
    if op == "gelu":
        return nn.GELU(approximate=a["approximate"])
    if op in ("maxpool2d", "avgpool2d"):
        kernel = pair(a["kernel"])
        stride = kernel if a["stride"] is None or pair(a["stride"]) == (0, 0) else pair(a["stride"])
        if op == "maxpool2d":
            return nn.MaxPool2d(kernel, stride, pair(a["padding"]), ceil_mode=a["ceil_mode"])
        return nn.AvgPool2d(kernel, stride, pair(a["padding"]), ceil_mode=a["ceil_mode"],
                            count_include_pad=a["count_include_pad"])
    if op == "adaptive_avgpool2d":
        return nn.AdaptiveAvgPool2d(pair(a["output"]))
    if op == "linear":
        return nn.Linear(x.size(-1), a["out_features"], bias=a["bias"])  # tied_to: BurstModel ties it
    if op == "flatten":
        return nn.Flatten(1)
    if op == "dropout":
        return nn.Dropout(a["p"])
    if op == "add":
        return Add()
    if op == "concat":
        return Concat(a["axis"])
    if op == "layernorm":
        return nn.LayerNorm(x.size(-1), eps=a["eps"])
    if op == "embedding":
        return nn.Embedding(a["num_embeddings"], a["dim"])
    if op == "position_embedding":
        return PositionEmbedding(a["max_positions"], x.size(-1))
    if op == "class_token":
        return ClassToken(x.size(-1))
    if op == "image_to_tokens":
        return ImageToTokens()
    if op == "take_token":
        return TakeToken(a["index"])
    if op == "self_attention":
        return SelfAttention(x.size(-1), a["heads"], a["causal"], a["dropout"])
    if op == LOSS:
        return SoftmaxCrossEntropy(a["weight"])
    raise ModelError(f"op {op} has no PyTorch mapping")


def tie(layer, module, modules):
    """A linear layer with tied_to uses the embedding's weight as its own (one parameter, its
    gradient the sum of both uses, as in burst and GPT-2); True when it did."""
    if layer.op != "linear" or not layer.attrs["tied_to"]:
        return False
    embedding = modules.get(layer.attrs["tied_to"])
    if not isinstance(embedding, nn.Embedding) or embedding.weight.shape != module.weight.shape:
        raise ModelError(f"tied_to '{layer.attrs['tied_to']}' is not an embedding of the weight's shape "
                         f"{list(module.weight.shape)} before this layer")
    module.weight = embedding.weight
    return True


class BurstModel(nn.Module):
    """A burst model's layer DAG, run in graph order. forward(features, labels) returns the
    per-sample loss [B]: the weighted sum of every loss layer's."""

    def __init__(self, name, layers):
        super().__init__()
        self._burst_name = name
        self._burst_steps = []  # (name, op, module, input names, names whose last use this is)
        self._burst_info = {}  # name -> (per-sample output shape, dtype name, parameter count)
        inputs = [l for l in layers if l.op == "input"]
        losses = [l for l in layers if l.op == LOSS]
        if len(inputs) != 1 or not losses:
            raise ModelError(f"need exactly one input layer and at least one {LOSS} layer, "
                             f"got {len(inputs)} and {len(losses)}")
        self._burst_input = inputs[0]
        modules, examples = {}, {}
        last_use = {}
        for layer in layers:
            for i in layer.inputs:
                last_use[i] = layer.name
        dummy_labels = None
        for layer in layers:
            where = f"layer '{layer.name}' ({layer.op})"
            args = [examples[i] for i in layer.inputs]
            try:
                module = make_module(layer, args)
                tied = tie(layer, module, modules)
                module.eval()  # the example pass must not move BatchNorm's running statistics
                with torch.no_grad():
                    if layer.op == "input":
                        dtype = torch.int64 if layer.attrs["dtype"] == "int64" else torch.float32
                        out = module(torch.zeros([1] + list(layer.attrs["shape"]), dtype=dtype))
                    elif layer.op == LOSS:
                        if dummy_labels is None:
                            dummy_labels = torch.zeros(args[0].shape[:-1], dtype=torch.int64)
                        out = module(args[0], dummy_labels)
                    else:
                        out = module(*args)
            except ModelError as e:
                raise ModelError(f"{where}: {e}") from None
            except (RuntimeError, ValueError, TypeError, IndexError, AssertionError) as e:
                raise ModelError(f"{where}: torch refused it: {str(e).splitlines()[0]}") from None
            if layer.op != LOSS:
                examples[layer.name] = out
            for i in layer.inputs:
                if last_use[i] == layer.name:
                    examples.pop(i, None)
            params = sum(p.numel() for p in module.parameters()) - (module.weight.numel() if tied else 0)
            self._burst_info[layer.name] = (list(out.shape[1:]), str(out.dtype).replace("torch.", ""), params)
            modules[layer.name] = module
            frees = [i for i in dict.fromkeys(layer.inputs) if last_use[i] == layer.name]
            self._burst_steps.append((layer.name, layer.op, module, layer.inputs, frees))
        self._attach(modules)
        logits = next(l for l in layers if l.op == LOSS).inputs[0]
        self._burst_logits_shape = self._burst_info[logits][0]
        # Layers with parameters from which no loss can be reached: DDP must look for unused ones.
        reaches = {l.name for l in losses}
        for layer in reversed(layers):
            if layer.name in reaches:
                reaches.update(layer.inputs)
        self._burst_unused = sorted(n for n, (_, _, p) in self._burst_info.items() if p and n not in reaches)
        self.train()

    def _attach(self, modules):
        """Registers layer `a.b.c` as child `c` of `a.b` (a layer or an empty nn.Module)."""
        nodes = dict(modules)
        for name in modules:
            parts = name.split(".")
            if "" in parts:
                raise ModelError(f"layer name '{name}' is not a torch module path (empty part)")
            for i in range(1, len(parts)):
                nodes.setdefault(".".join(parts[:i]), nn.Module())
        attached = set()

        def attach(path):
            if path in attached:
                return
            parent, _, leaf = path.rpartition(".")
            if parent:
                attach(parent)
            owner = nodes[parent] if parent else self
            try:
                owner.add_module(leaf, nodes[path])
            except KeyError as e:
                raise ModelError(f"layer name '{path}' is not a torch module path: {e}") from None
            attached.add(path)

        for name in modules:
            attach(name)

    def forward(self, features, labels):
        values, total = {}, None
        for name, op, module, inputs, frees in self._burst_steps:
            if op == "input":
                values[name] = features
            elif op == LOSS:
                loss = module(values[inputs[0]], labels)
                total = loss if total is None else total + loss
            else:
                values[name] = module(*[values[i] for i in inputs])
            for i in frees:
                values.pop(i, None)
        return total

    def synthetic_batches(self, batch, count, generator):
        """`count` (features, labels) pairs: N(0, 1) features (int64 inputs: ids in [0, vocab))
        and labels uniform in [0, classes)."""
        layer = self._burst_input
        shape = [batch] + list(layer.attrs["shape"])
        if layer.attrs["dtype"] == "int64":
            vocab = layer.attrs["vocab"] or min(
                (s[2].num_embeddings for s in self._burst_steps
                 if s[1] == "embedding" and layer.name in s[3]), default=None)
            if not vocab:
                raise ModelError(f"input '{layer.name}' is int64 without a vocab or an embedding reading it")
            make = lambda: torch.randint(vocab, shape, generator=generator)
        else:
            make = lambda: torch.randn(shape, generator=generator)
        classes = self._burst_logits_shape[-1]
        label_shape = [batch] + self._burst_logits_shape[:-1]
        return [(make(), torch.randint(classes, label_shape, generator=generator)) for _ in range(count)]


def build(args, seed=None):
    name, layers = read_model(args.model_file or args.model_json)
    if seed is not None:
        torch.manual_seed(seed)
    model = BurstModel(name, layers)
    if args.init:
        state = torch.load(args.init)
        try:
            model.load_state_dict(state, strict=True)
        except RuntimeError as e:
            raise ModelError(f"--init {args.init}: {' '.join(str(e).split())}") from None
    return model


def check_model(args):
    """Compares the module with `burst model show --json`; 0 when everything matches."""
    model = build(args, seed=args.seed)
    with open(args.model_json) as f:
        burst = json.load(f)
    info = model._burst_info
    ours = [s[0] for s in model._burst_steps]
    theirs = [l["name"] for l in sorted(burst["layers"], key=lambda l: l.get("id", 0))]
    problems = []
    for layer in burst["layers"]:
        name = layer["name"]
        if name not in info:
            problems.append(f"layer {name}: not in the PyTorch model")
            continue
        shape, dtype, params = info[name]
        if shape != layer["output_shape"]:
            problems.append(f"layer {name}: shape {shape} vs burst {layer['output_shape']}")
        if "output_dtype" in layer and dtype != layer["output_dtype"]:
            problems.append(f"layer {name}: dtype {dtype} vs burst {layer['output_dtype']}")
        if params != layer["params"]:
            problems.append(f"layer {name}: {params} parameters vs burst {layer['params']}")
        step = next(s for s in model._burst_steps if s[0] == name)
        if "inputs" in layer and list(step[3]) != list(layer["inputs"]):
            problems.append(f"layer {name}: inputs {step[3]} vs burst {layer['inputs']}")
    problems += [f"layer {n}: not in the burst model" for n in ours if n not in set(theirs)]
    if not problems and ours != theirs:
        problems.append("graph order differs from burst's")
    model_total = sum(p.numel() for p in model.parameters())
    burst_total = sum(l["params"] for l in burst["layers"])
    if model_total != burst_total or sum(i[2] for i in info.values()) != model_total:
        problems.append(f"total parameters {model_total} vs burst {burst_total}")
    if problems:
        print(f"ddp model check FAILED for {model._burst_name}:\n  " + "\n  ".join(problems))
        return 1
    print(f"ddp model check: {model._burst_name}: {len(ours)} layers, order, shapes and parameters match "
          f"burst; {model_total} parameters")
    return 0


def worker(rank, args, port):
    distributed = args.nproc > 1
    torch.set_num_threads(args.threads)
    if distributed:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=args.nproc)
    # The same initial weights on every rank (DDP broadcasts rank 0's anyway).
    model = build(args, seed=args.seed)
    net = model
    if distributed:
        net = nn.parallel.DistributedDataParallel(model, find_unused_parameters=bool(model._burst_unused))
    if rank == 0 and model._burst_unused:
        print(f"ddp: layers that reach no loss: {', '.join(model._burst_unused)} (find_unused_parameters)",
              flush=True)
    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=args.momentum)
    local = args.global_batch // args.nproc
    generator = torch.Generator().manual_seed(args.seed * 1000 + rank + 1)
    batches = model.synthetic_batches(local, 8, generator)
    times = []
    for step in range(args.steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        x, y = (t.clone() for t in batches[step % len(batches)])
        # The mean over the local batch; DDP's gradient average over the ranks then gives
        # burst's sum over the global batch / global batch.
        loss = net(x, y).mean()
        loss.backward()
        optimizer.step()
        value = loss.item()
        ms = (time.perf_counter() - start) * 1000.0
        times.append(ms)
        if rank == 0 and args.log_every > 0 and (step % args.log_every == 0 or step + 1 == args.steps):
            print(f"step {step + 1:>6}  loss {value:.6f}  {ms:8.2f} ms/iter", flush=True)
    if distributed:
        dist.barrier()
    if rank == 0:
        steady = times[args.warmup:]
        print(f"ddp: steady ms/iter {sum(steady) / len(steady):.3f} over {len(steady)} steps "
              f"(skipped {args.warmup} warm-up steps)", flush=True)
    if distributed:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-file", metavar="FILE", help="burst model file (burst model export NAME -o FILE)")
    parser.add_argument("--model-json", metavar="FILE", help="`burst model show MODEL --json` output")
    parser.add_argument("--check-model", action="store_true",
                        help="compare with --model-json, print one line and exit (1 on a mismatch)")
    parser.add_argument("--init", metavar="FILE", help="initial weights: a `burst train --save-params` file")
    parser.add_argument("--batchnorm", choices=["local"], default="local",
                        help="local (the only mode): each rank normalises by its own samples")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--global-batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--momentum", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-every", type=int, default=0)
    args = parser.parse_args()
    if not args.model_file and not args.model_json:
        parser.error("need --model-file (and --model-json for --check-model)")
    if args.check_model and not args.model_json:
        parser.error("--check-model needs --model-json (burst model show MODEL --json)")
    try:
        if args.check_model:
            torch.set_num_threads(args.threads)
            return check_model(args)
        if args.nproc < 1 or args.global_batch % args.nproc != 0 or args.steps <= args.warmup:
            parser.error("need --nproc >= 1, --global-batch divisible by --nproc and --steps > --warmup")
        build(args)  # refuse a model this script cannot build before spawning anything
        if args.nproc == 1:
            worker(0, args, None)
        else:
            mp.spawn(worker, args=(args, free_port()), nprocs=args.nproc, join=True)
    except ModelError as e:
        print(f"ddp_peer: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
