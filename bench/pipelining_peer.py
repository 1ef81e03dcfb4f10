#!/usr/bin/env python3
"""torch.distributed.pipelining on a burst model: the peer of burst's pipeline plans.

usage: .venv/bin/python bench/pipelining_peer.py --model-file M.json --stage-starts NAME[,NAME...]
           --schedule gpipe|1f1b --micro-batches 4 --global-batch 16 --steps 61 --warmup 21

The model is bench/ddp_peer.py's module of the burst model file (the same layers, checked
there against `burst model show --json`). It is cut before each --stage-starts layer into
as many stages as processes (gloo, one intra-op thread each), run by PipelineStage under
ScheduleGPipe or Schedule1F1B with --micro-batches micro-batches, and trained with SGD
(lr 0.01) on synthetic batches. Exactly one tensor may cross each cut: the stages of a
transformer's residual stream.

A weight tied across stages (GPT-2's head and token embedding) is one tensor in burst, its
gradients summed over both stages; torch.distributed.pipelining has no ties across stages,
so here each stage trains its own copy. The work per step is the same but for that sum.

Prints `steady ms/iter X`: the mean time of steps WARMUP+1..STEPS on rank 0, which runs
the first forward and the last backward of every step (zero_grad, the schedule's step,
optimizer step).
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_peer  # noqa: E402  (the burst model as torch.nn modules)


class StageModule(nn.Module):
    """Layers [first, last) of a BurstModel in graph order: one tensor in, one tensor out
    (the last stage returns the loss layer's logits; the schedule's loss_fn takes it)."""

    def __init__(self, model, first, last):
        super().__init__()
        steps = model._burst_steps
        self.steps = [s for s in steps[first:last] if s[1] != ddp_peer.LOSS]
        self.blocks = nn.ModuleList(s[2] for s in self.steps)  # registers their parameters
        inside = {s[0] for s in steps[first:last]}
        before = {s[0] for s in steps[:first]}
        after_inputs = {i for s in steps[last:] for i in s[3]}
        entering = sorted({i for s in steps[first:last] for i in s[3] if i in before})
        leaving = sorted(n for n in inside if n in after_inputs)
        if last == len(steps):
            leaving = [next(s[3][0] for s in steps if s[1] == ddp_peer.LOSS)]
        if first > 0 and len(entering) != 1:
            raise ddp_peer.ModelError(f"{len(entering)} tensors enter the stage at {steps[first][0]}: {entering}")
        if len(leaving) != 1:
            raise ddp_peer.ModelError(f"{len(leaving)} tensors leave the stage ending before layer #{last}: {leaving}")
        self.entering = entering[0] if entering else None
        self.leaving = leaving[0]

    def forward(self, x):
        values = {} if self.entering is None else {self.entering: x}
        for name, op, module, inputs, _ in self.steps:
            values[name] = x if op == "input" else module(*[values[i] for i in inputs])
        return values[self.leaving]


def loss_fn(model):
    """The micro-batch's mean per-sample loss (the schedule scales gradients by 1 / micro-batches,
    so a step follows the mean over the global batch, as burst's loss does)."""
    loss_module = next(s[2] for s in model._burst_steps if s[1] == ddp_peer.LOSS)
    return lambda logits, labels: loss_module(logits, labels).mean()


def worker(rank, args, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=args.nproc)
    model = ddp_peer.build(args, seed=args.seed)
    names = [s[0] for s in model._burst_steps]
    starts = [names.index(n) for n in args.stage_starts]
    bounds = [0] + starts + [len(names)]
    stage_module = StageModule(model, bounds[rank], bounds[rank + 1])
    stage = PipelineStage(stage_module, rank, args.nproc, torch.device("cpu"))
    kind = ScheduleGPipe if args.schedule == "gpipe" else Schedule1F1B
    schedule = kind(stage, n_microbatches=args.micro_batches, loss_fn=loss_fn(model))
    optimizer = torch.optim.SGD(stage_module.parameters(), lr=0.01)
    batches = model.synthetic_batches(args.global_batch, 8, torch.Generator().manual_seed(args.seed))
    last = rank == args.nproc - 1
    times = []
    dist.barrier()
    for step in range(args.steps):
        features, labels = batches[step % len(batches)]
        start = time.perf_counter()
        optimizer.zero_grad()
        if rank == 0:
            schedule.step(features)
        elif last:
            losses = []
            schedule.step(target=labels, losses=losses)
        else:
            schedule.step()
        optimizer.step()
        times.append(time.perf_counter() - start)
    if rank == 0:
        steady = times[args.warmup:]
        print(f"{args.schedule}, {args.nproc} stages, {args.micro_batches} micro-batches: "
              f"steady ms/iter {1000 * sum(steady) / len(steady):.3f}")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-file", required=True)
    parser.add_argument("--stage-starts", required=True, type=lambda s: s.split(","))
    parser.add_argument("--schedule", choices=["gpipe", "1f1b"], required=True)
    parser.add_argument("--micro-batches", type=int, default=4)
    parser.add_argument("--global-batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=61)
    parser.add_argument("--warmup", type=int, default=21)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    args.model_json, args.init = None, None  # ddp_peer.build's other sources
    args.nproc = len(args.stage_starts) + 1
    if args.global_batch % args.micro_batches:
        parser.error("--global-batch must be a multiple of --micro-batches")
    if not 0 <= args.warmup < args.steps:
        parser.error("need 0 <= --warmup < --steps")
    try:
        ddp_peer.build(args)  # refuse a model the peer cannot build before starting processes
    except ddp_peer.ModelError as e:
        sys.exit(f"pipelining_peer: {e}")
    mp.spawn(worker, args=(args, ddp_peer.free_port()), nprocs=args.nproc)


if __name__ == "__main__":
    main()
