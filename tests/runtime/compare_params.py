"""Compares two parameter files written by `burst train --save-params` (torch.load reads
them): same names and shapes, and every value within a relative tolerance of the reference.

usage: compare_params.py REFERENCE OTHER [TOLERANCE] [--elementwise]; exit 0 when equal
within tolerance. The error of a tensor is max|a - b| / max(max|a|, 1e-12): relative to the
tensor's scale, so entries that happen to be near zero do not inflate it. With
--elementwise it is max(|a - b| / (1 + |a|)) instead: relative for large values, absolute
for small ones, for models whose tensors can be all but zero as a whole (a BatchNorm bias
followed by a convolution and another BatchNorm gets an exactly zero gradient, so it holds
nothing but rounding noise)."""
import sys

import torch


def main() -> int:
    elementwise = "--elementwise" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--elementwise"]
    reference = torch.load(args[0])
    other = torch.load(args[1])
    tolerance = float(args[2]) if len(args) > 2 else 1e-5
    if sorted(reference) != sorted(other):
        print(f"different parameter names: {sorted(set(reference) ^ set(other))}")
        return 1
    worst_name, worst = "", 0.0
    for name, a in reference.items():
        b = other[name]
        if a.shape != b.shape:
            print(f"{name}: shape {tuple(a.shape)} vs {tuple(b.shape)}")
            return 1
        if not a.is_floating_point():
            if not torch.equal(a, b):
                print(f"{name}: integer values differ")
                return 1
            continue
        if elementwise:
            error = ((a - b).abs() / (1 + a.abs())).max().item()
        else:
            error = (a - b).abs().max().item() / max(a.abs().max().item(), 1e-12)
        if error > worst:
            worst_name, worst = name, error
    verdict = "equal" if worst <= tolerance else "DIFFERENT"
    print(f"{verdict}: {len(reference)} tensors, largest relative error {worst:.3g} ({worst_name or '-'}), "
          f"tolerance {tolerance:g}")
    return 0 if worst <= tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
