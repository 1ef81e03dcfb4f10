#!/usr/bin/env python3
"""What burst's synchronised BatchNorm costs in arithmetic alone (no communication), against
torch's native batch_norm, on one thread: a diagnostic for docs/runtime-benchmark.md.

    OMP_NUM_THREADS=1 .venv/bin/python bench/syncbn_cost.py

`burst_sync` repeats the tensor operations of lib/runtime/src/sync_batchnorm.cpp (forward:
sum, centred square sum, normalise, scale and shift; backward: the two channel sums and the
input gradient), with the group all-reduces left out, since one rank's sums are the group's
sums on one rank. Shapes: fmnist_cnn's bn1 and bn2 inputs at 8 and 32 samples, one rank's
share of global batch 16 and 64 on 2 ranks. Prints forward+backward ms, the best of 3 rounds
of 30 each, the two kinds taking turns so machine noise hits both.
"""
import time

import torch
import torch.nn.functional as F


def native(x, weight, bias):
    return F.batch_norm(x, None, None, weight, bias, training=True, momentum=0.1, eps=1e-5)


class BurstSyncBatchNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, mean, inverse_std, count):
        x_hat = (x - mean.view(1, -1, 1, 1)) * inverse_std.view(1, -1, 1, 1)
        ctx.save_for_backward(x_hat, weight, inverse_std)
        ctx.count = count
        return x_hat * weight.view(1, -1, 1, 1) + bias.view(1, -1, 1, 1)

    @staticmethod
    def backward(ctx, dy):
        x_hat, weight, inverse_std = ctx.saved_tensors
        local_dy = dy.sum((0, 2, 3))
        local_dy_x_hat = (dy * x_hat).sum((0, 2, 3))
        sums = torch.cat([local_dy, local_dy_x_hat])  # burst all-reduces this over the group
        channels = weight.size(0)
        mean_dy = sums[:channels] / ctx.count
        mean_dy_x_hat = sums[channels:] / ctx.count
        dx = (weight * inverse_std).view(1, -1, 1, 1) * (
            dy - mean_dy.view(1, -1, 1, 1) - x_hat * mean_dy_x_hat.view(1, -1, 1, 1))
        return dx, local_dy_x_hat, local_dy, None, None, None


def burst_sync(x, weight, bias):
    count = x.size(0) * x.size(2) * x.size(3)  # burst all-reduces this too
    with torch.no_grad():
        mean = x.sum((0, 2, 3)) / count  # all-reduced
        variance = (x - mean.view(1, -1, 1, 1)).pow(2).sum((0, 2, 3)) / count  # all-reduced
    inverse_std = (variance + 1e-5).rsqrt()
    return BurstSyncBatchNorm.apply(x, weight, bias, mean, inverse_std, count)


def main():
    torch.set_num_threads(1)
    print(f"{'layer':<6} {'input':<18} {'native ms':>10} {'burst ms':>9} {'ratio':>6}")
    for name, shape in [("bn1", (8, 32, 28, 28)), ("bn2", (8, 64, 14, 14)),
                        ("bn1", (32, 32, 28, 28)), ("bn2", (32, 64, 14, 14))]:
        x = torch.randn(shape, requires_grad=True)
        weight = torch.ones(shape[1], requires_grad=True)
        bias = torch.zeros(shape[1], requires_grad=True)
        grad = torch.randn(shape)
        best = {}
        for _ in range(3):
            for kind, fn in [("native", native), ("burst", burst_sync)]:
                for _ in range(5):
                    fn(x, weight, bias).backward(grad)
                start = time.perf_counter()
                for _ in range(30):
                    fn(x, weight, bias).backward(grad)
                ms = (time.perf_counter() - start) / 30 * 1e3
                best[kind] = min(best.get(kind, ms), ms)
        print(f"{name:<6} {str(list(shape)):<18} {best['native']:>10.2f} {best['burst']:>9.2f} "
              f"{best['burst'] / best['native']:>6.2f}")


if __name__ == "__main__":
    main()
