"""Measures this machine's links between local worker processes, as burst's runtime uses
them (torch.distributed with Gloo over loopback TCP), and writes a burst cluster file.

usage: measure_cpu_links.py OUTPUT.json [WORLD_SIZE (2)]

All-reduces of 4 KB .. 64 MB (mean, and the 10th/50th/90th percentiles) (what burst's runtime sends most: gradients and BatchNorm
statistics) give the link through the network model's ring formula for n workers,
time = 2(n-1) latency + 2(n-1)/n bytes / bandwidth:
  - latency from the small all-reduces (4 KB to 256 KB, where bandwidth matters little):
    their mean time / (2(n-1)). As in training, each of them comes after 2 ms of compute on
    every rank (matrix products), so Gloo's threads have gone idle as they do between a
    training step's all-reduces; back to back they would be faster than training sees;
  - bandwidth from the large ones (16 MB and 64 MB): the slope between them.
Point-to-point messages (rank 0 to rank 1 and back, half the round trip) of the same sizes
are printed beside the model's prediction, as a check; they are not used for the fit. Each
time is a mean, of 200 runs for the small all-reduces and 25 for the rest: on this kind of
machine small all-reduces take either about 0.4 ms or about 4 ms (probably waking a
descheduled virtual CPU), so a median would pick one mode, while a training step, the sum of
many of them, costs their mean, and a mean of a two-mode distribution needs many samples.
Run it on an otherwise idle machine.
"""
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SMALL = [4 << 10, 16 << 10, 64 << 10, 256 << 10]
SIZES = SMALL + [1 << 20, 4 << 20, 16 << 20, 64 << 20]
REPEATS = 25
SMALL_REPEATS = 200
COMPUTE_GAP_S = 0.002


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ping_pong(rank, tensor):
    """One round trip between ranks 0 and 1; returns its seconds (rank 0)."""
    start = time.perf_counter()
    if rank == 0:
        dist.send(tensor, 1)
        dist.recv(tensor, 1)
    elif rank == 1:
        dist.recv(tensor, 0)
        dist.send(tensor, 0)
    return time.perf_counter() - start


def compute(seconds, matrix):
    """Matrix products for `seconds`: a layer's work between two all-reduces."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        torch.mm(matrix, matrix)


def worker(rank, world, port, queue):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    results = {"p2p": {}, "allreduce": {}, "allreduce_spread": {}}
    matrix = torch.randn(128, 128)
    for size in SIZES:
        tensor = torch.ones(size // 4)
        ping_pong(rank, tensor)  # warm-up
        trips = [ping_pong(rank, tensor) / 2 for _ in range(REPEATS)]
        dist.barrier()
        dist.all_reduce(tensor)
        reductions = []
        small = size in SMALL
        for _ in range(SMALL_REPEATS if small else REPEATS):
            dist.barrier()
            if small:
                compute(COMPUTE_GAP_S, matrix)
            start = time.perf_counter()
            dist.all_reduce(tensor)
            reductions.append(time.perf_counter() - start)
        results["p2p"][size] = statistics.fmean(trips)
        results["allreduce"][size] = statistics.fmean(reductions)
        results["allreduce_spread"][size] = quantiles(reductions)
    if rank == 0:
        queue.put(results)
    dist.destroy_process_group()


def quantiles(samples):
    """(10th percentile, median, 90th percentile) of `samples`."""
    ordered = sorted(samples)
    return tuple(ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in (0.1, 0.5, 0.9))


def fit(allreduce, world):
    """(latency s, bandwidth B/s) from all-reduce times by size (see the module's docstring)."""
    steps = 2 * (world - 1)
    latency = statistics.fmean([allreduce[size] for size in SMALL]) / steps
    small, large = 16 << 20, 64 << 20
    slope = (allreduce[large] - allreduce[small]) / (large - small)  # seconds per byte
    return latency, steps / world / slope


def main():
    output = sys.argv[1]
    world = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    queue = mp.get_context("spawn").SimpleQueue()
    mp.spawn(worker, args=(world, free_port(), queue), nprocs=world, join=True)
    results = queue.get()
    latency, bandwidth = fit(results["allreduce"], world)
    print(f"fitted link: latency {latency * 1e6:.1f} us, bandwidth {bandwidth / 1e9:.3f} GB/s")
    print(f"{'bytes':>10} {'allreduce ms':>13} {'p10/p50/p90 ms':>20} {'model ms':>9} {'p2p ms':>9} {'model ms':>9}")
    for size in SIZES:
        ring = 2 * (world - 1) / world * size / bandwidth + 2 * (world - 1) * latency
        spread = "/".join(f"{q * 1e3:.2f}" for q in results["allreduce_spread"][size])
        print(f"{size:>10} {results['allreduce'][size] * 1e3:>13.3f} {spread:>20} {ring * 1e3:>9.3f} "
              f"{results['p2p'][size] * 1e3:>9.3f} {(latency + size / bandwidth) * 1e3:>9.3f}")
    link = {"bandwidth_gbyte_s": round(bandwidth / 1e9, 4), "latency_us": round(latency * 1e6, 2)}
    cluster = {"format": "burst.cluster", "version": 1, "name": f"this-machine-{world}-workers", "device": "cpu",
               "nodes": 1, "devices_per_node": world, "intra_node": link,
               "inter_node": {"bandwidth_gbit_s": 10, "latency_us": 50}}
    with open(output, "w") as f:
        json.dump(cluster, f, indent=2)
        f.write("\n")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
