#!/usr/bin/python3
"""PyTorch DDP baseline for bench/runtime_vs_ddp.sh: burst's zoo model fmnist_cnn, written
as an nn.Module layer by layer (same names, shapes and parameters as `burst model show
fmnist_cnn`), trained with DistributedDataParallel over gloo on N local processes.

    /usr/bin/python3 bench/ddp_fmnist.py --nproc 2 --global-batch 16 --steps 60 --warmup 20
    /usr/bin/python3 bench/ddp_fmnist.py --check-model model.json   # burst model show --json
    ... --no-batchnorm: the same without bn1 and bn2 (bench/fmnist_cnn_nobn.json), for the
    benchmark's info rows that separate burst's synchronised BatchNorm from the rest

Rank 0 times every step (zero_grad, the batch, forward, loss, backward with DDP's bucketed
all-reduce, optimizer step, loss.item(): the span burst's ms/iter covers) and prints
    ddp: steady ms/iter M over N steps (skipped W warm-up steps)
Synthetic data: features N(0, 1) of [1, 28, 28], labels uniform in [0, 10); a few batches
per rank made before training and cycled, so no data generation is timed.

DDP runs with its defaults (broadcast_buffers=True: rank 0's BatchNorm running statistics
are broadcast at every forward; 25 MiB buckets). Each rank normalises with its own batch's
statistics (plain BatchNorm2d: SyncBatchNorm is CUDA-only in torch 1.13), while burst
synchronises BatchNorm statistics across ranks; the timing compares the same layers and
sizes, not bit-identical training.
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


class FmnistCnn(nn.Module):
    """burst's zoo fmnist_cnn (lib/graph/src/zoo/fmnist_cnn.cpp), channels=32, classes=10."""

    def __init__(self, channels=32, classes=10, batchnorm=True):
        super().__init__()
        # Without batchnorm: bench/fmnist_cnn_nobn.json, the same model less bn1 and bn2.
        self.order = [n for n in self.ORDER if batchnorm or not n.startswith("bn")]
        self.conv1 = nn.Conv2d(1, channels, 3, stride=1, padding=1)
        self.bn1 = nn.BatchNorm2d(channels, eps=1e-5, momentum=0.1)
        self.relu1 = nn.ReLU()
        self.pool1 = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(channels, 2 * channels, 3, stride=1, padding=1)
        self.bn2 = nn.BatchNorm2d(2 * channels, eps=1e-5, momentum=0.1)
        self.relu2 = nn.ReLU()
        self.pool2 = nn.MaxPool2d(2, 2)
        self.flatten = nn.Flatten(1)
        self.fc1 = nn.Linear(2 * channels * 7 * 7, 128)
        self.relu3 = nn.ReLU()
        self.dropout = nn.Dropout(0.25)
        self.fc2 = nn.Linear(128, classes)
        # The loss layer: per-sample cross-entropy, averaged over the batch by train().
        self.loss = nn.CrossEntropyLoss(reduction="none")

    ORDER = ["conv1", "bn1", "relu1", "pool1", "conv2", "bn2", "relu2", "pool2", "flatten", "fc1",
             "relu3", "dropout", "fc2"]

    def forward(self, x):
        for name in self.order:
            x = getattr(self, name)(x)
        return x


def check_model(path, batchnorm=True):
    """Compares FmnistCnn with `burst model show fmnist_cnn --json`: every layer's name,
    per-sample output shape and parameter count, and the total. Exits 1 on a mismatch."""
    with open(path) as f:
        burst = json.load(f)
    model = FmnistCnn(batchnorm=batchnorm)
    if not batchnorm:
        del model.bn1, model.bn2
    shapes = {}
    hooks = [getattr(model, n).register_forward_hook(
        lambda m, i, o, n=n: shapes.__setitem__(n, list(o.shape[1:]))) for n in model.order]
    x = torch.randn(2, 1, 28, 28)
    logits = model(x)
    for h in hooks:
        h.remove()
    shapes["input"] = list(x.shape[1:])
    shapes["loss"] = list(model.loss(logits, torch.zeros(2, dtype=torch.long)).shape[1:])
    problems = []
    total = 0
    for layer in burst["layers"]:
        name = layer["name"]
        if name not in shapes:
            problems.append(f"layer {name}: not in the PyTorch model")
            continue
        params = sum(p.numel() for p in getattr(model, name).parameters()) if hasattr(model, name) else 0
        total += params
        if shapes[name] != layer["output_shape"]:
            problems.append(f"layer {name}: shape {shapes[name]} vs burst {layer['output_shape']}")
        if params != layer["params"]:
            problems.append(f"layer {name}: {params} parameters vs burst {layer['params']}")
    extra = set(model.order) - {l["name"] for l in burst["layers"]}
    problems += [f"layer {n}: not in the burst model" for n in sorted(extra)]
    model_total = sum(p.numel() for p in model.parameters())
    burst_total = sum(l["params"] for l in burst["layers"])
    if model_total != burst_total or total != model_total:
        problems.append(f"total parameters {model_total} vs burst {burst_total}")
    if problems:
        print("ddp model check FAILED:\n  " + "\n  ".join(problems))
        return 1
    print(f"ddp model check: {len(burst['layers'])} layers, shapes and parameters match burst; "
          f"{model_total} parameters")
    return 0


def worker(rank, args, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", rank=rank, world_size=args.nproc)
    torch.manual_seed(args.seed)  # the same initial weights on every rank (DDP broadcasts rank 0's anyway)
    model = FmnistCnn(batchnorm=not args.no_batchnorm)
    if args.no_batchnorm:
        del model.bn1, model.bn2
    ddp = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum)
    local = args.global_batch // args.nproc
    generator = torch.Generator().manual_seed(args.seed * 1000 + rank + 1)
    features = [torch.randn(local, 1, 28, 28, generator=generator) for _ in range(8)]
    labels = [torch.randint(10, (local,), generator=generator) for _ in range(8)]
    times = []
    for step in range(args.steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        x = features[step % 8].clone()
        y = labels[step % 8].clone()
        loss = model.loss(ddp(x), y).mean()
        loss.backward()
        optimizer.step()
        value = loss.item()
        ms = (time.perf_counter() - start) * 1000.0
        times.append(ms)
        if rank == 0 and args.log_every > 0 and (step % args.log_every == 0 or step + 1 == args.steps):
            print(f"step {step + 1:>6}  loss {value:.6f}  {ms:8.2f} ms/iter", flush=True)
    dist.barrier()
    if rank == 0:
        steady = times[args.warmup:]
        print(f"ddp: steady ms/iter {sum(steady) / len(steady):.3f} over {len(steady)} steps "
              f"(skipped {args.warmup} warm-up steps)", flush=True)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--global-batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--momentum", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-every", type=int, default=0)
    parser.add_argument("--no-batchnorm", action="store_true",
                        help="the model less bn1 and bn2 (bench/fmnist_cnn_nobn.json)")
    parser.add_argument("--check-model", metavar="JSON", help="compare with `burst model show --json` and exit")
    args = parser.parse_args()
    if args.check_model:
        return check_model(args.check_model, batchnorm=not args.no_batchnorm)
    if args.global_batch % args.nproc != 0 or args.steps <= args.warmup:
        parser.error("need --global-batch divisible by --nproc and --steps > --warmup")
    mp.spawn(worker, args=(args, free_port()), nprocs=args.nproc, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
