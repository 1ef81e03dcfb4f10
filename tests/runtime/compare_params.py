"""Compares two parameter files written by `burst train --save-params` (torch.load reads
them): same names and shapes, and every value within a relative tolerance of the reference.

usage: compare_params.py REFERENCE OTHER [TOLERANCE]; exit 0 when equal within tolerance.
The error of a tensor is max|a - b| / max(max|a|, 1e-12): relative to the tensor's scale,
so entries that happen to be near zero do not inflate it."""
import sys

import torch


def main() -> int:
    reference = torch.load(sys.argv[1])
    other = torch.load(sys.argv[2])
    tolerance = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
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
        scale = max(a.abs().max().item(), 1e-12)
        error = (a - b).abs().max().item() / scale
        if error > worst:
            worst_name, worst = name, error
    verdict = "equal" if worst <= tolerance else "DIFFERENT"
    print(f"{verdict}: {len(reference)} tensors, largest relative error {worst:.3g} ({worst_name or '-'}), "
          f"tolerance {tolerance:g}")
    return 0 if worst <= tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
